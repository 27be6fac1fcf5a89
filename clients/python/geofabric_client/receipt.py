"""Offline verification of a Geofabric job receipt (docs/protocol.md §15).

The same checks, in the same order and under the same names, as the server's verifier: both name the same failed
check for the same receipt (the conformance vectors test that).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from .crypto import is_hex, public_key_issue, sha256_hex, verify
from .jcs import canonicalize

CHECKS = (
    "receipt_format",
    "request_signature",
    "delegation_chain",
    "job_id",
    "job_record",
    "job_hash",
    "step_outputs",
    "step_records",
    "fusion_inputs",
    "inclusion",
    "seal_chain",
    "anchor",
    "sealer",
    "sealed",
)
GENESIS = "0" * 64
EMPTY_ROOT = sha256_hex("")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Verdict:
    ok: bool
    checks: list[Check] = field(default_factory=list)
    failed_check: Optional[str] = None


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer())


def job_id_from_signature(signature: str) -> str:
    """The first 128 bits of SHA-256("geofabric/job\\n" + signature) as a UUIDv8 (docs/protocol.md §10.4)."""
    h = sha256_hex(f"geofabric/job\n{signature}")
    variant = format((int(h[16], 16) & 0x3) | 0x8, "x")
    return f"{h[0:8]}-{h[8:12]}-8{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"


def signing_message(body: dict) -> str:
    """JCS of the request body without ``signature``."""
    return canonicalize({k: v for k, v in body.items() if k != "signature"})


def verify_receipt(receipt: Any, sealer_pk: Optional[str] = None, allow_pending: bool = False) -> Verdict:
    checks: list[Check] = []

    def add(name: str, outcome: Any) -> None:
        # A check that trips over a malformed part fails; verification never raises.
        try:
            ok, detail = outcome() if callable(outcome) else outcome
        except Exception as error:  # noqa: BLE001
            ok, detail = False, f"malformed receipt: {error!r}"
        checks.append(Check(name, ok, detail))

    add("receipt_format", _receipt_format(receipt))
    if checks[0].ok:
        body = receipt["request"]["body"]
        job_entry = next((r for r in receipt["records"] if r["role"] == "job"), None)
        record = job_entry.get("record") if job_entry else None
        payload = record.get("payload") if _obj(record) and _obj(record.get("payload")) else None
        add("request_signature", lambda: _request_signature(body))
        add(
            "delegation_chain",
            lambda: _delegation_chain(
                receipt["request"]["delegation_chain"], body.get("requester_pk"), _job_time(body, job_entry)
            ),
        )
        add("job_id", lambda: _job_id(receipt, body))
        add("job_record", lambda: _job_record(receipt, job_entry))
        add("job_hash", lambda: _job_hash(receipt, body, payload))
        add("step_outputs", lambda: _step_outputs(receipt, body, payload))
        add("step_records", lambda: _step_records(receipt, payload, allow_pending))
        add("fusion_inputs", lambda: _fusion_inputs(receipt, allow_pending))
        add("inclusion", lambda: _inclusion(receipt, job_entry, sealer_pk))
        add("seal_chain", lambda: _seal_chains(receipt))
        add("anchor", lambda: _anchors(receipt))
        add("sealer", lambda: _sealer(job_entry, sealer_pk))
        add("sealed", lambda: _sealed(receipt, allow_pending))
    failed = next((c for c in checks if not c.ok), None)
    return Verdict(ok=failed is None, checks=checks, failed_check=failed.name if failed else None)


def _receipt_format(value: Any) -> tuple[bool, str]:
    if not _obj(value):
        return False, "a receipt is a JSON object"
    if value.get("receipt_version") != 1 or isinstance(value.get("receipt_version"), bool):
        return False, f"receipt_version {json.dumps(value.get('receipt_version'))} is not 1"
    if value.get("status") not in ("complete", "pending"):
        return False, "status must be complete or pending"
    if not isinstance(value.get("job_id"), str):
        return False, "job_id must be a string"
    pending = value.get("pending")
    if not isinstance(pending, list) or not all(isinstance(p, str) for p in pending):
        return False, "pending must be an array of strings"
    request = value.get("request")
    if not _obj(request) or not _obj(request.get("body")):
        return False, "request.body must be an object"
    if request.get("delegation_chain") is not None and not isinstance(request.get("delegation_chain"), list):
        return False, "request.delegation_chain must be an array or null"
    job = value.get("job")
    if job is not None and (not _obj(job) or not isinstance(job.get("steps"), list)):
        return False, "job must be the job answer (with steps) or null"
    records = value.get("records")
    if not isinstance(records, list):
        return False, "records must be an array"
    for i, r in enumerate(records):
        if not _obj(r) or r.get("role") not in ("job", "step", "input") or not isinstance(r.get("record_id"), str):
            return False, f"records[{i}] needs role (job, step or input) and record_id"
    if sum(1 for r in records if r["role"] == "job") > 1:
        return False, "more than one job record"
    chains = value.get("seal_chains")
    if not isinstance(chains, list):
        return False, "seal_chains must be an array"
    for i, c in enumerate(chains):
        if not _obj(c) or not isinstance(c.get("sealer_pk"), str) or not isinstance(c.get("seals"), list):
            return False, f"seal_chains[{i}] needs sealer_pk and seals"
    return True, f"receipt version 1, {len(records)} records"


def _request_signature(body: dict) -> tuple[bool, str]:
    issue = public_key_issue(body.get("requester_pk"))
    if issue is not None:
        return False, f"requester_pk {issue}"
    if not is_hex(body.get("signature"), 64):
        return False, "signature must be 128 lowercase hex"
    try:
        message = signing_message(body)
    except (TypeError, ValueError) as error:
        return False, str(error)
    if verify(body["requester_pk"], message, body["signature"]):
        return True, f"signed by requester {body['requester_pk']}"
    return False, "the signature does not match the canonical request"


# ---- delegation (docs/protocol.md §10.5 rules 1–4, each link valid at the job's time, §15.2) ----


def _h3_contains(parent: str, cell: str) -> bool:
    """H3 containment without H3: the parent at a resolution sets it and blanks the finer digits (7)."""
    hexdigits = set("0123456789abcdef")
    if len(parent) != 15 or len(cell) != 15 or not set(parent + cell) <= hexdigits:
        return False
    p, c = int(parent, 16), int(cell, 16)
    pr, cr = (p >> 52) & 0xF, (c >> 52) & 0xF
    if cr < pr:
        return False
    up = (c & ~(0xF << 52)) | (pr << 52)
    for r in range(pr + 1, 16):
        up |= 7 << ((15 - r) * 3)
    return up == p


def _cert_signing_string(cert: dict) -> str:
    fields = ("version", "agent_pk", "principal_pk", "h3_cells", "facets", "not_before", "not_after", "max_depth")
    signed = {k: cert.get(k) for k in fields}
    signed["constraints"] = cert.get("constraints")
    return canonicalize(signed)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def _time(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _cert_shape_issue(cert: Any) -> Optional[str]:
    if not _obj(cert):
        return "is not an object"
    if cert.get("version") != 1:
        return "version must be 1"
    if not is_hex(cert.get("agent_pk"), 32) or not is_hex(cert.get("principal_pk"), 32):
        return "agent_pk and principal_pk are 64 hex"
    if not _strings(cert.get("h3_cells")) or not _strings(cert.get("facets")):
        return "h3_cells and facets are arrays of strings"
    try:
        if _time(cert["not_before"]) > _time(cert["not_after"]):
            return "not_before is after not_after"
    except (KeyError, ValueError, AttributeError):
        return "needs ISO 8601 not_before and not_after"
    if not _int(cert.get("max_depth")) or cert["max_depth"] < 0:
        return "max_depth is an integer >= 0"
    if cert.get("constraints") is not None and not _obj(cert.get("constraints")):
        return "constraints is an object or null"
    if not is_hex(cert.get("principal_signature"), 64):
        return "principal_signature is 128 hex"
    return None


def _narrow(rights: Optional[dict], c: Optional[dict]) -> dict:
    parent_allowed = rights["allowed"] if rights else None
    own = c.get("allowed_tools") if c and _strings(c.get("allowed_tools")) else None
    if own is None:
        allowed = parent_allowed
    elif parent_allowed is None:
        allowed = list(own)
    else:
        allowed = [t for t in own if t in parent_allowed]
    denied = list(rights["denied"]) if rights else []
    for t in c.get("denied_tools", []) if c and _strings(c.get("denied_tools")) else []:
        if t not in denied:
            denied.append(t)
    limits = [n for n in ((rights or {}).get("max_ops"), (c or {}).get("max_ops_per_hour")) if _int(n)]
    return {"allowed": allowed, "denied": denied, "max_ops": min(limits) if limits else None}


def _link_issue(chain: list, i: int, rights: Optional[dict]) -> Optional[str]:
    link = chain[i]
    shape = _cert_shape_issue(link)
    if shape is not None:
        return f"link {i}: {shape}"
    if not verify(link["principal_pk"], _cert_signing_string(link), link["principal_signature"]):
        return f"link {i}: principal_signature does not verify under principal_pk"
    agent_issue = public_key_issue(link["agent_pk"])
    if agent_issue is not None:
        return f"link {i}: agent_pk {agent_issue}"
    if any(earlier.get("principal_pk") == link["agent_pk"] for earlier in chain[: i + 1]):
        return f"link {i}: delegation loop"
    if i == 0 or rights is None:
        return None
    parent = chain[i - 1]
    if parent["agent_pk"] != link["principal_pk"]:
        return f"link {i}: principal_pk is not link {i - 1}'s agent_pk"
    for cell in link["h3_cells"]:
        if not any(_h3_contains(p, cell) for p in parent["h3_cells"]):
            return f"link {i}: cell {cell} is not inside link {i - 1}'s cells"
    for facet in link["facets"]:
        if "*" not in parent["facets"] and facet not in parent["facets"]:
            return f"link {i}: facet {facet} is not granted by link {i - 1}"
    c = link.get("constraints") if _obj(link.get("constraints")) else None
    if rights["allowed"] is not None and c and _strings(c.get("allowed_tools")):
        if any(t not in rights["allowed"] for t in c["allowed_tools"]):
            return f"link {i}: a tool is not allowed by link {i - 1}"
    if c and _strings(c.get("denied_tools")):
        if any(t not in c["denied_tools"] for t in rights["denied"]):
            return f"link {i}: a tool denied by link {i - 1} is not denied"
    if _time(link["not_before"]) < _time(parent["not_before"]) or _time(link["not_after"]) > _time(parent["not_after"]):
        return f"link {i}: widened window"
    if rights["max_ops"] is not None and c and _int(c.get("max_ops_per_hour")) and c["max_ops_per_hour"] > rights["max_ops"]:
        return f"link {i}: max_ops_per_hour exceeds link {i - 1}'s"
    if parent["max_depth"] < 1:
        return f"link {i - 1}: max_depth 0 does not allow further delegation"
    if link["max_depth"] > parent["max_depth"] - 1:
        return f"link {i}: max_depth too large"
    return None


# Tolerance around the job's time: the gate's window for a request's created_at (docs/protocol.md §10.3).
JOB_TIME_SKEW_S = 5 * 60


def _job_time(body: dict, entry: Optional[dict]) -> Optional[tuple[float, str]]:
    """The request's signed created_at when it has one, else the node-signed job record's written_at."""
    created = body.get("created_at")
    if isinstance(created, str):
        try:
            return _time(created), f"the request's created_at {created}"
        except ValueError:
            pass
    record = entry.get("record") if entry else None
    written = record.get("written_at") if _obj(record) else None
    if isinstance(written, str):
        try:
            return _time(written), f"the job record's written_at {written}"
        except ValueError:
            pass
    return None


def _delegation_chain(chain: Optional[list], requester_pk: Any, time: Optional[tuple[float, str]]) -> tuple[bool, str]:
    if chain is None:
        return True, "no delegation: the requester acts as its own principal"
    if not 1 <= len(chain) <= 8:
        return False, f"a chain has 1 to 8 links, not {len(chain)}"
    rights = None
    for i, link in enumerate(chain):
        issue = _link_issue(chain, i, rights)
        if issue is not None:
            return False, issue
        rights = _narrow(rights, link.get("constraints") if _obj(link.get("constraints")) else None)
    if chain[-1]["agent_pk"] != requester_pk:
        return False, f"the chain ends at {chain[-1]['agent_pk']}, not the requester"
    links = f"{len(chain)} link(s) from human {chain[0]['principal_pk']} to the requester"
    if time is None:
        return True, f"{links}; pending: the job's time is not known yet"
    at, source = time
    for i, link in enumerate(chain):
        if at < _time(link["not_before"]) - JOB_TIME_SKEW_S:
            return False, f"link {i}: not valid before {link['not_before']}, not valid at the job's time ({source})"
        if at > _time(link["not_after"]) + JOB_TIME_SKEW_S:
            return False, f"link {i}: expired at {link['not_after']}, not valid at the job's time ({source})"
    return True, f"{links}, valid at the job's time ({source})"


# ---- records, seals, inclusion (docs/protocol.md §2.6, §10.7, §12) ----


def _record_issue(record: Any) -> Optional[str]:
    import re

    if not _obj(record):
        return "is not an object"
    if record.get("version") != 1 or not isinstance(record.get("id"), str):
        return "version or id is malformed"
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", record["id"]):
        return "version or id is malformed"
    address = record.get("address")
    if not _obj(address) or not is_hex(address.get("pk"), 32) or not _int(address.get("epoch")):
        return "address is malformed"
    if not _int(record.get("seq")) or record["seq"] < 1:
        return "seq is malformed"
    if not is_hex(record.get("record_hash"), 32) or not is_hex(record.get("signature"), 64):
        return "record_hash or signature is malformed"
    if "payload" not in record:
        return "payload is missing"
    unsigned = {k: v for k, v in record.items() if k not in ("record_hash", "signature")}
    try:
        if sha256_hex(canonicalize(unsigned)) != record["record_hash"]:
            return "record_hash does not match the record"
    except (TypeError, ValueError) as error:
        return str(error)
    if not verify(address["pk"], record["record_hash"], record["signature"]):
        return "signature does not verify"
    return None


def _seal_issue(seal: Any) -> Optional[str]:
    if not _obj(seal):
        return "is not an object"
    if seal.get("version") != 1 or not is_hex(seal.get("sealer_pk"), 32) or not _int(seal.get("epoch")):
        return "malformed"
    count = seal.get("record_count")
    if not _int(count) or count < 0:
        return "record_count is malformed"
    if not is_hex(seal.get("merkle_root"), 32) or not is_hex(seal.get("prev_epoch_hash"), 32):
        return "hashes are malformed"
    if count == 0:
        if seal.get("first_seq") is not None or seal.get("last_seq") is not None or seal["merkle_root"] != EMPTY_ROOT:
            return "an empty epoch has null seqs and the empty root"
    elif not _int(seal.get("first_seq")) or not _int(seal.get("last_seq")):
        return "seqs are malformed"
    elif seal["last_seq"] - seal["first_seq"] + 1 != count:
        return "record_count is not the seq range"
    if not is_hex(seal.get("seal_hash"), 32) or not is_hex(seal.get("signature"), 64):
        return "seal_hash or signature is malformed"
    unsigned = {k: v for k, v in seal.items() if k not in ("seal_hash", "signature")}
    if sha256_hex(canonicalize(unsigned)) != seal["seal_hash"]:
        return "seal_hash does not match the seal"
    # A custodial seal (docs/protocol.md §12) is signed by its custodian, the central store's node key.
    signer = seal.get("custodian_pk", seal["sealer_pk"])
    if not is_hex(signer, 32):
        return "custodian_pk is malformed"
    if not verify(signer, seal["seal_hash"], seal["signature"]):
        return "signature does not verify"
    return None


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _root_of(leaf_index: Any, tree_size: Any, leaf: bytes, path: list[bytes]) -> "bytes | str":
    """RFC 9162 §2.1.3.2: the root a leaf and its audit path imply, or why the path cannot be right."""
    if not _int(leaf_index) or not _int(tree_size) or not 0 <= leaf_index < tree_size:
        return "leaf_index is not inside the tree"
    fn, sn, r = int(leaf_index), int(tree_size) - 1, leaf
    for p in path:
        if sn == 0:
            return "the path is longer than the tree is deep"
        if fn % 2 == 1 or fn == sn:
            r = _sha(b"\x01" + p + r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            r = _sha(b"\x01" + r + p)
        fn //= 2
        sn //= 2
    return r if sn == 0 else "the path ends before the root"


def _bundle_issue(entry: dict) -> Optional[str]:
    issue = _record_issue(entry.get("record"))
    if issue is not None:
        return f"record: {issue}"
    record = entry["record"]
    if record["id"] != entry["record_id"]:
        return f"the record is {record['id']}, not {entry['record_id']}"
    issue = _seal_issue(entry.get("seal"))
    if issue is not None:
        return f"seal: {issue}"
    seal = entry["seal"]
    if seal["sealer_pk"] != record["address"]["pk"] or seal["epoch"] != record["address"]["epoch"]:
        return "the seal is not the record's writer's epoch"
    proof = entry.get("proof")
    if not _obj(proof) or not isinstance(proof.get("hashes"), list) or not all(is_hex(h, 32) for h in proof["hashes"]):
        return "proof is malformed"
    if proof.get("tree_size") != seal["record_count"]:
        return "proof tree_size is not the seal's record_count"
    leaf = _sha(b"\x00" + bytes.fromhex(record["record_hash"]))
    root = _root_of(proof.get("leaf_index"), proof.get("tree_size"), leaf, [bytes.fromhex(h) for h in proof["hashes"]])
    if isinstance(root, str):
        return f"proof: {root}"
    return None if root.hex() == seal["merkle_root"] else "proof: root mismatch"


# ---- the checks ----


def _job_id(receipt: dict, body: dict) -> tuple[bool, str]:
    if not is_hex(body.get("signature"), 64):
        return False, "the request has no signature to derive the job id from"
    derived = job_id_from_signature(body["signature"])
    if receipt["job_id"] != derived:
        return False, f"job_id {receipt['job_id']} is not {derived}, the signature's"
    if receipt["job"] is not None and receipt["job"].get("job_id") != derived:
        return False, f"the answer is of job {receipt['job'].get('job_id')}"
    return True, derived


def _job_record(receipt: dict, entry: Optional[dict]) -> tuple[bool, str]:
    job = receipt["job"]
    if job is None:
        return (True, "pending: the job is still running") if receipt["status"] == "pending" else (False, "no job answer")
    named = job["proof"].get("record_id") if _obj(job.get("proof")) else None
    if not isinstance(named, str):
        return False, "the answer names no compute/job record"
    if entry is None:
        return False, f"no job record in the receipt (the answer names {named})"
    if entry["record_id"] != named:
        return False, f"the job record is {entry['record_id']}, the answer names {named}"
    record = entry.get("record")
    if record is None:
        return True, f"pending: record {named} is not in the store yet"
    issue = _record_issue(record)
    if issue is not None:
        return False, f"record {named}: {issue}"
    if record["id"] != named:
        return False, f"the record is {record['id']}, not {named}"
    if record.get("payload_type") != "compute/job":
        return False, f"record {named} is not a compute/job record"
    if not _obj(record.get("payload")) or record["payload"].get("job_id") != receipt["job_id"]:
        return False, f"record {named} is of another job"
    return True, f"{named} written by {record['address']['pk']}"


def _job_hash(receipt: dict, body: dict, payload: Optional[dict]) -> tuple[bool, str]:
    if receipt["job"] is None or payload is None:
        return True, "pending: no job record yet"
    try:
        request = sha256_hex(canonicalize(body))
    except (TypeError, ValueError) as error:
        return False, str(error)
    if payload.get("request_hash") != request:
        return False, f"the record's request_hash is not the request's {request}"
    if payload.get("requester_pk") != body.get("requester_pk"):
        return False, "the record's requester_pk is not the request's"
    steps = payload.get("steps")
    if not isinstance(steps, list) or not all(_obj(s) for s in steps):
        return False, "the record lists no steps"
    outputs = [{"id": s.get("id"), "status": s.get("status"), "output_hash": s.get("output_hash")} for s in steps]
    recomputed = sha256_hex(canonicalize({"request_hash": request, "outputs": outputs}))
    if payload.get("job_hash") != recomputed:
        return False, f"the record's job_hash is not the recomputed {recomputed}"
    proof = receipt["job"].get("proof")
    if not _obj(proof) or proof.get("job_hash") != recomputed:
        return False, f"the answer's job_hash is not the recomputed {recomputed}"
    return True, recomputed


def _step_outputs(receipt: dict, body: dict, payload: Optional[dict]) -> tuple[bool, str]:
    if receipt["job"] is None or payload is None or not isinstance(payload.get("steps"), list):
        return True, "pending: no job record yet"
    requested = [s.get("id") if _obj(s) else None for s in body.get("steps", [])] if isinstance(body.get("steps"), list) else []
    recorded = payload["steps"]
    answered = receipt["job"]["steps"]
    if len(recorded) != len(requested) or len(answered) != len(requested):
        return False, f"{len(requested)} steps requested, {len(recorded)} recorded, {len(answered)} answered"
    for i, step in enumerate(answered):
        record = recorded[i]
        if step.get("id") != requested[i] or record.get("id") != requested[i]:
            return False, f"step {i} differs between request, record and answer"
        if step.get("status") != record.get("status"):
            return False, f"step {step.get('id')}: status differs from the record"
        if step.get("record_id") != record.get("record_id"):
            return False, f"step {step.get('id')}: the answer and the record name other records"
        digest = sha256_hex(canonicalize(step.get("output"))) if step.get("status") == "complete" else None
        if digest != record.get("output_hash"):
            return False, f"step {step.get('id')}: the output does not hash to the recorded output_hash"
    return True, f"{len(answered)} step outputs match their recorded hashes"


def _step_records(receipt: dict, payload: Optional[dict], allow_pending: bool) -> tuple[bool, str]:
    if payload is None or not isinstance(payload.get("steps"), list):
        return True, "pending: no job record yet"
    named = [s for s in payload["steps"] if isinstance(s.get("record_id"), str)]
    entries = [r for r in receipt["records"] if r["role"] == "step"]
    if len(entries) != len(named):
        return False, f"the job names {len(named)} step records, the receipt holds {len(entries)}"
    missing = 0
    for step in named:
        entry = next((e for e in entries if e.get("step_id") == step.get("id")), None)
        if entry is None:
            return False, f"no record for step {step.get('id')}"
        if entry["record_id"] != step["record_id"]:
            return False, f"step {step.get('id')}: not the named record"
        if entry.get("record") is None:
            missing += 1
            continue
        issue = _record_issue(entry["record"])
        if issue is not None:
            return False, f"step {step.get('id')} record: {issue}"
        if entry["record"]["id"] != step["record_id"]:
            return False, f"step {step.get('id')}: the record is another"
    if missing and not allow_pending and receipt["status"] != "pending":
        return False, f"{missing} step record(s) missing from a receipt marked complete"
    return True, f"{len(named) - missing} step record(s) verified" + (f", {missing} pending" if missing else "")


# ---- sensor fusion (docs/protocol.md §2.10): the server's method in its operation order, so the doubles agree ----

MAD_SCALE = 1.4826
MAD_CUTOFF = 3


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _median(values: list) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) >> 1
    return ordered[mid] if len(ordered) % 2 == 1 else (ordered[mid - 1] + ordered[mid]) / 2


def _merkle_root_hex(leaves: list[bytes]) -> str:
    """RFC 6962 root built bottom-up (an odd last node moves up unchanged); SHA-256 of nothing when empty."""
    if not leaves:
        return EMPTY_ROOT
    level = leaves
    while len(level) > 1:
        nxt = [_sha(b"\x01" + level[i] + level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2 == 1:
            nxt.append(level[-1])
        level = nxt
    return level[0].hex()


def _fuse(readings: list[dict]) -> dict:
    """Per-device median, median of devices, MAD rejection, mean and stderr (the server's order of operations)."""
    if not readings:
        raise ValueError("no readings to fuse")
    by_device: dict[str, list] = {}
    for r in readings:
        by_device.setdefault(r["device_pk"], []).append(r["value"])
    devices = [(_median(by_device[pk]), len(by_device[pk])) for pk in sorted(by_device)]
    value = _median([v for v, _ in devices])
    mad = _median([abs(v - value) for v, _ in devices])
    threshold = MAD_CUTOFF * MAD_SCALE * mad
    kept = [(v, c) for v, c in devices if abs(v - value) <= threshold]
    n = len(kept)
    total = 0
    for v, _ in kept:
        total = total + v
    mean = total / n
    variance = None
    if n > 1:
        squares = 0
        for v, _ in kept:
            d = v - mean
            squares = squares + d * d  # x ** 2 in JavaScript is exactly x * x
        variance = squares / (n - 1)
    ordered = sorted(readings, key=lambda r: r["record_id"])
    return {
        "value": value,
        "mean": mean,
        "stderr": None if variance is None else math.sqrt(variance / n),
        "device_count": n,
        "reading_count": sum(c for _, c in kept),
        "merkle_root": _merkle_root_hex([_sha(b"\x00" + bytes.fromhex(r["record_hash"])) for r in ordered]),
    }


def _telemetry_reading(payload: Any) -> Optional[dict]:
    """The payload of an iot/telemetry record when it has a reading's shape, else None."""
    if not _obj(payload):
        return None
    if not all(isinstance(payload.get(k), str) for k in ("device_pk", "h3_cell", "quantity", "unit", "observed_at")):
        return None
    if not _number(payload.get("value")):
        return None
    batch = payload.get("batch")
    if not _obj(batch) or not isinstance(batch.get("request_hash"), str) or not isinstance(batch.get("signature"), str):
        return None
    return payload


def _instant(text: Any) -> Any:
    """An ISO 8601 time as an aware datetime, or None (JavaScript's NaN: every comparison with it is false)."""
    from datetime import datetime, timezone

    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _same(a: Any, b: Any) -> bool:
    """JavaScript's === on JSON values: numbers by value (not bools), strings and null as themselves."""
    if _number(a) or _number(b):
        return _number(a) and _number(b) and a == b
    return type(a) is type(b) and a == b


def _fusion_inputs(receipt: dict, allow_pending: bool) -> tuple[bool, str]:
    """Each complete sensor_fusion step's role "input" entries are exactly its output's record_ids, in order; each a
    signed iot/telemetry reading of its quantity, cells and window; the fusion recomputed from them gives the output's
    numbers and Merkle root."""
    job = receipt["job"]
    steps = job["steps"] if job is not None else []
    fusions = [s for s in steps if s.get("type") == "sensor_fusion" and s.get("status") == "complete"]
    named = [s.get("id") for s in fusions]
    inputs = [r for r in receipt["records"] if r["role"] == "input"]
    stray = next((r for r in inputs if (r.get("step_id") if r.get("step_id") is not None else "") not in named), None)
    if stray is not None:
        return False, f"input {stray['record_id']} belongs to no complete sensor_fusion step"
    verified = missing = 0
    for step in fusions:
        out = step.get("output")
        ids = out.get("record_ids")
        if not _strings(ids):
            return False, f"step {step.get('id')}: no record_ids"
        entries = [r for r in inputs if r.get("step_id") == step.get("id")]
        if [e["record_id"] for e in entries] != ids:
            return False, f"step {step.get('id')}: the receipt's inputs are not the {len(ids)} records the output names"
        window = out.get("window")
        start = _instant(window.get("from")) if _obj(window) else None
        end = _instant(window.get("to")) if _obj(window) else None
        cells = out.get("cells") if _strings(out.get("cells")) else []
        readings = []
        for entry in entries:
            record = entry.get("record")
            if record is None:
                missing += 1
                continue
            issue = _record_issue(record)
            if issue is not None:
                return False, f"input {entry['record_id']}: {issue}"
            reading = _telemetry_reading(record.get("payload"))
            if record.get("payload_type") != "iot/telemetry" or reading is None:
                return False, f"input {entry['record_id']} is not a telemetry reading"
            at = _instant(reading["observed_at"])
            cell = record["address"].get("h3_cell")
            in_cells = isinstance(cell, str) and any(c == cell or _h3_contains(c, cell) for c in cells)
            in_window = at is not None and start is not None and end is not None and start <= at < end
            if not _same(reading["quantity"], out.get("quantity")) or not in_window or not in_cells:
                what = f"a {out.get('quantity')} reading of the step's cells and window"
                return False, f"input {entry['record_id']} is not {what}"
            readings.append(
                {
                    "device_pk": reading["device_pk"],
                    "value": reading["value"],
                    "record_id": entry["record_id"],
                    "record_hash": record["record_hash"],
                }
            )
        if len(readings) < len(entries):
            continue
        fused = _fuse(readings)
        for key in ("value", "mean", "stderr", "device_count", "reading_count", "merkle_root"):
            if not _same(fused[key], out.get(key)):
                return False, f"step {step.get('id')}: {key} recomputed from the inputs is {fused[key]}"
        verified += 1
    if missing and not allow_pending and receipt["status"] != "pending":
        return False, f"{missing} fusion input(s) missing from a receipt marked complete"
    if not fusions:
        return True, "no sensor_fusion step"
    pending = f", {missing} pending" if missing else ""
    return True, f"{verified} fusion step(s) recomputed from their signed inputs{pending}"


def _custodian_issue(custodian: str, job_writer: Any, sealer_pk: Optional[str]) -> Optional[str]:
    """Why a custodial seal's custodian is not trusted (docs/protocol.md §12.3): only the node seals a gone
    worker's epoch, and the receipt names the node as the writer of its compute/job record (and the pinned key)."""
    if sealer_pk is not None and custodian != sealer_pk:
        return f"custodial seal by {custodian}, not by the pinned node {sealer_pk}"
    if not isinstance(job_writer, str):
        return f"custodial seal by {custodian}, but no job record names the node"
    if custodian != job_writer:
        return f"custodial seal by {custodian}, not by the node {job_writer} that wrote the job record"
    return None


def _inclusion(receipt: dict, job_entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    proven = 0
    custodians: list[str] = []
    custodial = 0
    record = job_entry.get("record") if _obj(job_entry) else None
    address = record.get("address") if _obj(record) else None
    job_writer = address.get("pk") if _obj(address) else None
    for entry in receipt["records"]:
        if entry.get("record") is None or entry.get("seal") is None:
            continue
        issue = _bundle_issue(entry)
        if issue is not None:
            return False, f"{entry['record_id']}: {issue}"
        proven += 1
        if "custodian_pk" in entry["seal"]:
            custodian = str(entry["seal"]["custodian_pk"])
            untrusted = _custodian_issue(custodian, job_writer, sealer_pk)
            if untrusted is not None:
                return False, f"{entry['record_id']}: {untrusted}"
            custodial += 1
            if custodian not in custodians:
                custodians.append(custodian)
    unsealed = len(receipt["records"]) - proven
    by = f" ({custodial} under custodial seals by {', '.join(custodians)})" if custodial else ""
    return True, f"{proven} record(s) included in their sealed epochs{by}" + (f", {unsealed} pending" if unsealed else "")


def _seal_chains(receipt: dict) -> tuple[bool, str]:
    sealers = sorted({r["seal"].get("sealer_pk") for r in receipt["records"] if _obj(r.get("seal"))})
    links = 0
    for sealer in sealers:
        chain = next((c for c in receipt["seal_chains"] if c["sealer_pk"] == sealer), None)
        if chain is None:
            return False, f"no seal chain for sealer {sealer}"
        for seal in chain["seals"]:
            issue = _seal_issue(seal)
            if issue is not None:
                return False, f"sealer {sealer} epoch {seal.get('epoch') if _obj(seal) else '?'}: {issue}"
            if seal["sealer_pk"] != sealer:
                return False, f"the chain of {sealer} holds another sealer's seal"
        seals = sorted(chain["seals"], key=lambda s: s["epoch"])
        for i, seal in enumerate(seals):
            if i == 0:
                if seal["prev_epoch_hash"] != GENESIS:
                    return False, f"sealer {sealer}: the earliest seal must chain to genesis"
                continue
            before = seals[i - 1]
            if seal["epoch"] == before["epoch"]:
                return False, f"sealer {sealer}: epoch {seal['epoch']} has two seals"
            if seal["epoch"] != before["epoch"] + 1:
                return False, f"sealer {sealer}: epoch {before['epoch'] + 1} has no seal"
            if seal["prev_epoch_hash"] != before["seal_hash"]:
                return False, f"sealer {sealer}: epoch {seal['epoch']} does not link to the one before"
        for entry in receipt["records"]:
            seal = entry.get("seal")
            if not _obj(seal) or seal.get("sealer_pk") != sealer:
                continue
            in_chain = next((s for s in seals if s["epoch"] == seal.get("epoch")), None)
            if in_chain is None or canonicalize(in_chain) != canonicalize(seal):
                return False, f"{entry['record_id']}: its seal is not the one in the chain"
        links += len(seals)
    return True, f"{len(sealers)} sealer chain(s), {links} seal(s), each from the sealer's first"


def _anchors(receipt: dict) -> tuple[bool, str]:
    anchored = 0
    for entry in receipt["records"]:
        anchor = entry.get("anchor")
        if anchor is None:
            continue
        seal = entry.get("seal")
        if not _obj(seal):
            return False, f"{entry['record_id']}: an anchor without a seal"
        if not _obj(anchor) or anchor.get("root") != seal.get("merkle_root") or anchor.get("epoch") != seal.get("epoch"):
            return False, f"{entry['record_id']}: the anchor's root or epoch is not the seal's"
        anchored += 1
    return True, "no anchor yet" if anchored == 0 else f"{anchored} anchor(s) name their seal's root"


def _sealer(entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    if sealer_pk is None:
        return True, "no sealer pinned"
    record = entry.get("record") if entry else None
    if not _obj(record):
        return True, "pending: no job record yet"
    writer = record.get("address", {}).get("pk") if _obj(record.get("address")) else None
    if writer != sealer_pk:
        return False, f"the job record was written by {writer}, not {sealer_pk}"
    seal = entry.get("seal")
    if _obj(seal) and seal.get("sealer_pk") != sealer_pk:
        return False, f"sealed by {seal.get('sealer_pk')}"
    return True, f"written{' and sealed' if _obj(seal) else ''} by {sealer_pk}"


def _sealed(receipt: dict, allow_pending: bool) -> tuple[bool, str]:
    missing = [r["record_id"] for r in receipt["records"] if r.get("record") is None or r.get("seal") is None]
    has_job = any(r["role"] == "job" for r in receipt["records"])
    if receipt["job"] is not None and not missing and has_job:
        return True, "every record is sealed"
    if receipt["status"] == "complete":
        return False, f"marked complete, but not sealed: {', '.join(missing) or 'no job record'}"
    why = "; ".join(receipt["pending"]) or ", ".join(missing)
    return (True, f"pending (allowed): {why}") if allow_pending else (False, f"pending: {why}")
