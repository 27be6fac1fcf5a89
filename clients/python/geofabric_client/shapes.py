"""What the receipt verifier holds a receipt's parts to, as the server's does (docs/protocol.md §2.6, §2.10, §10.5,
§10.7): JavaScript's reading of JSON values (absent is not null, ``===``), the exact fields of records, seals and
delegation certificates, H3 cells, timestamps, the telemetry quantity registry, the rule that makes a stored reading
count as evidence, and the fusion recomputed with one vote per principal in the server's order of operations (so
the doubles agree bit for bit).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Optional

from .crypto import sha256_hex, sign, verify
from .jcs import canonicalize


class _Undefined:
    """JavaScript's ``undefined``: a key that is not there, which is not a key whose value is null."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()


def get(value: Any, key: Any) -> Any:
    """``value[key]`` as JavaScript reads it: undefined for a missing key or on a string, number or boolean; a
    TypeError on null or undefined."""
    if isinstance(value, dict):
        return value.get(key, UNDEFINED)
    if value is None or value is UNDEFINED:
        raise TypeError(f"cannot read {key!r} of {'null' if value is None else 'undefined'}")
    if isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool):
        return value[key] if 0 <= key < len(value) else UNDEFINED
    return UNDEFINED


def opt(value: Any, key: Any) -> Any:
    """``value?.[key]``."""
    return UNDEFINED if value is None or value is UNDEFINED else get(value, key)


def number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same(a: Any, b: Any) -> bool:
    """JavaScript's ``===`` on JSON values: numbers by value (never a boolean), strings, booleans, null and
    undefined as themselves, objects and arrays only as the same object."""
    if number(a) or number(b):
        return number(a) and number(b) and a == b
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return type(a) is type(b) and a == b
    return a is b


def is_obj(v: Any) -> bool:
    return isinstance(v, dict)


def strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


_SAFE = 2**53 - 1


def is_index(v: Any, minimum: int = 0) -> bool:
    """A safe integer (``Number.isSafeInteger``) of at least ``minimum``."""
    if not number(v) or (isinstance(v, float) and not v.is_integer()):
        return False
    return -_SAFE <= v <= _SAFE and v >= minimum


def is_hex64(v: Any) -> bool:
    return isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None


def is_hex128(v: Any) -> bool:
    return isinstance(v, str) and re.fullmatch(r"[0-9a-f]{128}", v) is not None


def _has_keys(value: dict, required: tuple, optional: tuple = ()) -> bool:
    return all(k in value for k in required) and all(k in required or k in optional for k in value)


# ---- seal log heads and proofs (docs/protocol.md §15.4) ----

_HEAD_KEYS = ("version", "sealer_pk", "first_epoch", "tree_size", "root_hash", "signer_pk", "head_hash", "signature")


def head_shape_issue(head: Any) -> Optional[str]:
    """Why ``head`` is not a seal log head's shape (before its hash and signature are checked), or None."""
    if not is_obj(head) or not _has_keys(head, _HEAD_KEYS):
        return "has not the fields of a head"
    if not same(head["version"], 1) or not is_hex64(head["sealer_pk"]) or not is_hex64(head["signer_pk"]):
        return "malformed"
    if not is_index(head["first_epoch"]) or not is_index(head["tree_size"], 1):
        return "first_epoch or tree_size is malformed"
    if not is_hex64(head["root_hash"]) or not is_hex64(head["head_hash"]) or not is_hex128(head["signature"]):
        return "hashes are malformed"
    return None


def proof_shape_issue(proof: Any) -> Optional[str]:
    """Why ``proof`` is not an inclusion proof's shape (leaf_index, tree_size, at most 64 hashes), or None."""
    if not is_obj(proof) or not _has_keys(proof, ("leaf_index", "tree_size", "hashes")):
        return "has not the fields of a proof"
    if not is_index(proof["leaf_index"]) or not is_index(proof["tree_size"], 1):
        return "leaf_index or tree_size is malformed"
    hashes = proof["hashes"]
    if not isinstance(hashes, list) or len(hashes) > 64 or not all(is_hex64(h) for h in hashes):
        return "hashes are malformed"
    return None


# ---- H3 cells: 15 lowercase hex digits that H3 calls a valid cell ----

_PENTAGON_BASE_CELLS = {4, 14, 24, 38, 49, 58, 63, 72, 83, 97, 107, 117}


def is_cell(value: Any) -> bool:
    """Mode 1, base cell below 122, digits 0-6 up to the resolution and 7 after it, no deleted k-axis subsequence
    under a pentagon: H3's isValidCell."""
    if not isinstance(value, str) or re.fullmatch(r"[0-9a-f]{15}", value) is None:
        return False
    h = int(value, 16)
    if (h >> 59) & 0xF != 1 or (h >> 56) & 0x7 != 0:
        return False
    base = (h >> 45) & 0x7F
    if base >= 122:
        return False
    res = (h >> 52) & 0xF
    leading = True
    for r in range(1, 16):
        digit = (h >> ((15 - r) * 3)) & 7
        if r > res:
            if digit != 7:
                return False
            continue
        if digit == 7:
            return False
        if leading and digit != 0:
            leading = False
            if digit == 1 and base in _PENTAGON_BASE_CELLS:
                return False
    return True


def _resolution(cell: str) -> int:
    return (int(cell, 16) >> 52) & 0xF


def _parent(cell: str, res: int) -> str:
    h = int(cell, 16)
    h = (h & ~(0xF << 52)) | (res << 52)
    for r in range(res + 1, 16):
        h |= 7 << ((15 - r) * 3)
    return format(h, "015x")


def cell_covered(ancestors: list, cell: str) -> bool:
    """True when valid cell ``cell`` lies inside one of the valid cells ``ancestors`` (or is one)."""
    res = _resolution(cell)
    return any(_resolution(a) <= res and _parent(cell, _resolution(a)) == a for a in ancestors)


# ---- timestamps: RFC 3339 with seconds, as the server's schemas accept them ----

_DATE = (
    r"(?:(?:[0-9][0-9][2468][048]|[0-9][0-9][13579][26]|[0-9][0-9]0[48]|[02468][048]00|[13579][26]00)-02-29"
    r"|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))"
)
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
_UTC_TIMESTAMP = re.compile(rf"{_DATE}T{_TIME}Z")
_TIMESTAMP = re.compile(rf"{_DATE}T{_TIME}(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
_PARTS = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(Z|([+-])([0-9]{2}):([0-9]{2}))"
)


def is_utc_timestamp(v: Any) -> bool:
    """A record's ``written_at``, a seal's ``sealed_at`` (``Z``)."""
    return isinstance(v, str) and _UTC_TIMESTAMP.fullmatch(v) is not None


def is_timestamp(v: Any) -> bool:
    """A certificate's window, a request's ``created_at`` (``Z`` or an offset)."""
    return isinstance(v, str) and _TIMESTAMP.fullmatch(v) is not None


def _days_from_civil(year: int, month: int, day: int) -> int:
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def timestamp_ms(value: Any) -> float:
    """The milliseconds of a timestamp of the certificate form, fractions beyond the millisecond cut off, as the
    server reads it; NaN for anything else."""
    if not is_timestamp(value):
        return math.nan
    m = _PARTS.fullmatch(value)
    assert m is not None
    y, mo, d, h, mi, s, fraction, _zone, sign, oh, om = m.groups()
    ms = int(((fraction or "") + "000")[:3])
    offset = 0 if sign is None else (-1 if sign == "-" else 1) * (int(oh) * 60 + int(om))
    minutes = _days_from_civil(int(y), int(mo), int(d)) * 1440 + int(h) * 60 + int(mi) - offset
    return minutes * 60_000 + int(s) * 1000 + ms


# ---- records, seals, certificates ----

_COLLECTION_PAYLOAD_TYPES = {
    "inference": ("hive/inference",),
    "tile": ("tile/vector", "tile/raster"),
    "compute_job": ("compute/job",),
    "imagery": (
        "imagery/ndvi",
        "imagery/cloud_mask",
        "imagery/scene_search",
        "imagery/atmospheric_correction",
        "imagery/flood_classify",
        "imagery/band_math",
        "imagery/openeo_result",
        "imagery/openeo_tile",
    ),
    "breadcrumb": ("gns/breadcrumb",),
    "telemetry": ("iot/telemetry",),
}
_RECORD_KEYS = (
    "version",
    "id",
    "address",
    "collection_type",
    "payload_type",
    "payload",
    "seq",
    "written_at",
    "record_hash",
    "signature",
)


def record_shape_issue(record: Any) -> Optional[str]:
    """Why ``record`` is not a proof record's shape (before its hash and signature are checked), or None."""
    if not is_obj(record) or not _has_keys(record, _RECORD_KEYS):
        return f"has not exactly the fields {', '.join(_RECORD_KEYS)}"
    if not same(record["version"], 1):
        return "version must be 1"
    if not isinstance(record["id"], str) or re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", record["id"]) is None:
        return "id is malformed"
    address = record["address"]
    if not is_obj(address) or not _has_keys(address, ("h3_cell", "epoch", "pk")):
        return "address has not h3_cell, epoch, pk"
    if not is_cell(address["h3_cell"]) or not is_index(address["epoch"]) or not is_hex64(address["pk"]):
        return "address is malformed"
    collection = record["collection_type"]
    types = _COLLECTION_PAYLOAD_TYPES.get(collection) if isinstance(collection, str) else None
    if types is None or not isinstance(record["payload_type"], str) or record["payload_type"] not in types:
        return "payload_type does not belong to collection_type"
    if not is_index(record["seq"], 1):
        return "seq is malformed"
    if not is_utc_timestamp(record["written_at"]):
        return "written_at is not an ISO 8601 UTC timestamp"
    if not is_hex64(record["record_hash"]) or not is_hex128(record["signature"]):
        return "record_hash or signature is malformed"
    return None


_SEAL_KEYS = (
    "version",
    "sealer_pk",
    "epoch",
    "record_count",
    "first_seq",
    "last_seq",
    "merkle_root",
    "prev_epoch_hash",
    "sealed_at",
    "seal_hash",
    "signature",
)


def seal_shape_issue(seal: Any, empty_root: str) -> Optional[str]:
    """Why ``seal`` is not a seal's shape (before its hash and signature are checked), or None."""
    if not is_obj(seal) or not _has_keys(seal, _SEAL_KEYS, ("custodian_pk",)):
        return "has not the fields of a seal"
    if not same(seal["version"], 1) or not is_hex64(seal["sealer_pk"]) or not is_index(seal["epoch"]):
        return "malformed"
    count = seal["record_count"]
    if not is_index(count):
        return "record_count is malformed"
    if not all(s is None or is_index(s, 1) for s in (seal["first_seq"], seal["last_seq"])):
        return "seqs are malformed"
    if not is_hex64(seal["merkle_root"]) or not is_hex64(seal["prev_epoch_hash"]):
        return "hashes are malformed"
    if not is_utc_timestamp(seal["sealed_at"]):
        return "sealed_at is not an ISO 8601 UTC timestamp"
    if "custodian_pk" in seal and not is_hex64(seal["custodian_pk"]):
        return "custodian_pk is malformed"
    if not is_hex64(seal["seal_hash"]) or not is_hex128(seal["signature"]):
        return "seal_hash or signature is malformed"
    if count == 0:
        if seal["first_seq"] is not None or seal["last_seq"] is not None or seal["merkle_root"] != empty_root:
            return "an empty epoch has null seqs and the empty root"
    elif seal["first_seq"] is None or seal["last_seq"] is None:
        return "first_seq and last_seq are required"
    elif seal["last_seq"] - seal["first_seq"] + 1 != count:
        return "record_count is not the seq range"
    return None


_CERT_KEYS = (
    "version",
    "agent_pk",
    "principal_pk",
    "h3_cells",
    "facets",
    "not_before",
    "not_after",
    "max_depth",
    "principal_signature",
)


def _names(v: Any, most: int) -> bool:
    return isinstance(v, list) and len(v) <= most and all(isinstance(s, str) and len(s) > 0 for s in v)


def cert_shape_issue(cert: Any) -> Optional[str]:
    """Why ``cert`` is not a delegation certificate's shape (before its signature is checked), or None."""
    if not is_obj(cert) or not _has_keys(cert, _CERT_KEYS, ("constraints",)):
        return f"has not exactly the fields {', '.join(_CERT_KEYS)} (and constraints)"
    if not same(cert["version"], 1):
        return "version must be 1"
    if not is_hex64(cert["agent_pk"]) or not is_hex64(cert["principal_pk"]):
        return "agent_pk and principal_pk are 64 lowercase hex"
    cells = cert["h3_cells"]
    if not isinstance(cells, list) or len(cells) > 4096 or not all(is_cell(c) for c in cells):
        return "h3_cells are at most 4096 H3 cells"
    if not _names(cert["facets"], 64):
        return "facets are at most 64 non-empty strings"
    if not is_timestamp(cert["not_before"]) or not is_timestamp(cert["not_after"]):
        return "not_before and not_after are timestamps"
    if not timestamp_ms(cert["not_before"]) <= timestamp_ms(cert["not_after"]):
        return "not_before is after not_after"
    if not is_index(cert["max_depth"]):
        return "max_depth is an integer >= 0"
    c = cert.get("constraints")
    if c is not None:
        fields = ("max_ops_per_hour", "allowed_tools", "denied_tools", "require_human_approval")
        if not is_obj(c) or not _has_keys(c, (), fields):
            return "constraints has unknown fields"
        if "max_ops_per_hour" in c and not is_index(c["max_ops_per_hour"]):
            return "max_ops_per_hour is an integer >= 0"
        if "allowed_tools" in c and not _names(c["allowed_tools"], 256):
            return "allowed_tools are names"
        if "denied_tools" in c and not _names(c["denied_tools"], 256):
            return "denied_tools are names"
        if "require_human_approval" in c and not isinstance(c["require_human_approval"], bool):
            return "require_human_approval is a boolean"
    if not is_hex128(cert["principal_signature"]):
        return "principal_signature is 128 lowercase hex"
    return None


# ---- telemetry (docs/protocol.md §2.10) ----

# The quantities a device may report: the one unit (UCUM) and the plausible range, inclusive.
QUANTITIES = {
    "air_temperature": ("Cel", -90, 60),
    "relative_humidity": ("%", 0, 100),
    "pm2_5": ("ug/m3", 0, 1000),
    "pm10": ("ug/m3", 0, 2000),
    "no2": ("ug/m3", 0, 2000),
    "rainfall": ("mm", 0, 500),
    "water_level": ("m", -50, 200),
    "soil_moisture": ("%", 0, 100),
}
READING_STATEMENT_TYPE = "geofabric/telemetry-reading"


def reading_statement(r: dict) -> str:
    """What a device signs for one reading: JCS of its fields with the domain tag."""
    fields = ("device_pk", "h3_cell", "quantity", "value", "unit", "observed_at")
    return canonicalize({"type": READING_STATEMENT_TYPE, **{k: r[k] for k in fields}})


def sign_reading(secret_key: str, r: dict) -> str:
    """A device's signature over one reading (``readings[i].signature`` of ``POST /v1/telemetry``)."""
    return sign(secret_key, reading_statement(r))


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_normalised_instant(value: Any) -> bool:
    """The form JavaScript's toISOString writes (UTC, milliseconds) of a real instant: how observed_at is stored."""
    if not isinstance(value, str):
        return False
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.[0-9]{3}Z", value)
    if m is None:
        return False
    y, mo, d, h, mi, s = (int(g) for g in m.groups())
    if not 1 <= mo <= 12 or h > 23 or mi > 59 or s > 59:
        return False
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    return 1 <= d <= (29 if mo == 2 and leap else _DAYS_IN_MONTH[mo - 1])


def telemetry_record_id(device_pk: str, quantity: str, observed_at: str) -> str:
    return "telemetry:" + sha256_hex(canonicalize([device_pk, quantity, observed_at]))


def trusted_writers_of(output: Any) -> "tuple[Optional[list], Optional[str]]":
    """The trusted writers a fusion output names (docs/protocol.md §2.10): ascending distinct node keys, at least
    one; (None, None) for an output without the field (the job record's writer alone), an issue for a malformed one."""
    if not is_obj(output) or "trusted_writers" not in output:
        return None, None
    named = output["trusted_writers"]
    ok = (
        isinstance(named, list)
        and len(named) > 0
        and all(is_hex64(pk) and (i == 0 or named[i - 1] < pk) for i, pk in enumerate(named))
    )
    return (named, None) if ok else (None, "trusted_writers must be ascending distinct node keys")


def proven_reading(record: dict, writers: list) -> "dict | str":
    """Why a record (its hash and writer signature already checked) is not a reading that counts as evidence, or the
    reading: an iot/telemetry record of payload version 2 written by one of ``writers`` (the fusion output's
    trusted_writers, or without them the job record's writer),
    addressed by the device's cell, plausible for its quantity, observed_at normalised, signed by its device, its id
    derived from device, quantity and instant."""
    rid = record["id"]
    if record["payload_type"] != "iot/telemetry":
        return f"record {rid}: is {record['payload_type']}"
    p = record["payload"]
    not_reading = f"record {rid}: is not a telemetry reading"
    if not is_obj(p):
        return not_reading
    g = p.get
    if not all(isinstance(g(k), str) for k in ("device_pk", "h3_cell", "unit", "observed_at")):
        return not_reading
    if not isinstance(g("quantity"), str) or g("quantity") not in QUANTITIES or not number(g("value")):
        return not_reading
    if not isinstance(g("device_signature"), str) or not isinstance(g("principal_pk"), str):
        return f"record {rid}: is not a version-2 reading, which its device signed on its own"
    address = record["address"]
    if address["pk"] not in writers:
        if len(writers) == 1:
            return f"record {rid}: was written by {address['pk']}, not the node {writers[0]}"
        return f"record {rid}: was written by {address['pk']}, not one of the fusion's trusted writers"
    if address["h3_cell"] != p["h3_cell"]:
        return f"record {rid}: is not addressed by its device's cell"
    if not is_hex64(p["principal_pk"]):
        return f"record {rid}: names no principal key"
    if not is_normalised_instant(p["observed_at"]):
        return f"record {rid}: observed_at is not normalised"
    unit, low, high = QUANTITIES[p["quantity"]]
    value = p["value"]
    if p["unit"] != unit or not math.isfinite(value) or value < low or value > high:
        return f"record {rid}: {p['quantity']} {value} {p['unit']} is not plausible"
    reading = {k: p[k] for k in ("device_pk", "h3_cell", "quantity", "value", "unit", "observed_at", "principal_pk")}
    if not verify(p["device_pk"], reading_statement(reading), p["device_signature"]):
        return f"record {rid}: the device signature is not {p['device_pk']}'s over the reading"
    if rid != telemetry_record_id(p["device_pk"], p["quantity"], p["observed_at"]):
        return f"record {rid}: its id is not derived from its device, quantity and instant"
    return reading


MAD_SCALE = 1.4826
MAD_CUTOFF = 3


def _code_units(text: str) -> bytes:
    """A sort key that orders strings by UTF-16 code units, as JavaScript compares them."""
    return text.encode("utf-16-be", "surrogatepass")


def _median(values: list) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) >> 1
    return ordered[mid] if len(ordered) % 2 == 1 else (ordered[mid - 1] + ordered[mid]) / 2


def _groups(items: list, key: Callable[[Any], str]) -> list:
    by: dict = {}
    for item in items:
        by.setdefault(key(item), []).append(item)
    return [(k, by[k]) for k in sorted(by, key=_code_units)]


def fuse(readings: list, merkle_root: Callable[[list], str]) -> dict:
    """The fused numbers a verifier compares: per device the median of its readings, per principal (voter) the median
    of its devices (a device votes for the principal of its first reading in record-id order), the median of the
    voters, MAD rejection of voters, mean and stderr of the kept ones; ``merkle_root`` of the record hashes in
    record-id order. The server's order of operations: sums from 0 in principal order, x ** 2 as x * x."""
    if not readings:
        raise ValueError("no readings to fuse")
    ordered = sorted(readings, key=lambda r: _code_units(r["record_id"]))
    devices = [
        {"principal_pk": rs[0]["principal_pk"], "value": _median([r["value"] for r in rs]), "reading_count": len(rs)}
        for _, rs in _groups(ordered, lambda r: r["device_pk"])
    ]
    voters = []
    for _, ds in _groups(devices, lambda d: d["principal_pk"]):
        count = 0
        for d in ds:
            count += d["reading_count"]
        voters.append({"value": _median([d["value"] for d in ds]), "device_count": len(ds), "reading_count": count})
    value = _median([v["value"] for v in voters])
    mad = _median([abs(v["value"] - value) for v in voters])
    threshold = MAD_CUTOFF * MAD_SCALE * mad
    kept = [v for v in voters if abs(v["value"] - value) <= threshold]
    n = len(kept)
    total = 0
    for v in kept:
        total = total + v["value"]
    mean = total / n
    variance = None
    if n > 1:
        squares = 0
        for v in kept:
            d = v["value"] - mean
            squares = squares + d * d
        variance = squares / (n - 1)
    return {
        "value": value,
        "mean": mean,
        "stderr": None if variance is None else math.sqrt(variance / n),
        "voter_count": n,
        "device_count": sum(v["device_count"] for v in kept),
        "reading_count": sum(v["reading_count"] for v in kept),
        "merkle_root": merkle_root([r["record_hash"] for r in ordered]),
    }
