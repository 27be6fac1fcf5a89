"""Offline verification of a Geofabric job receipt (docs/protocol.md §15).

The same checks, in the same order and under the same names, as the server's verifier: both name the same failed
check for the same receipt (the conformance vectors test that).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import quote

from .crypto import is_hex, public_key_issue, sha256_hex, verify
from .jcs import as_json_numbers, canonicalize
from .shapes import (
    UNDEFINED,
    cell_covered,
    cert_shape_issue,
    fuse,
    get,
    head_shape_issue,
    is_cell,
    is_index,
    is_obj,
    number,
    opt,
    proof_shape_issue,
    proven_reading,
    trusted_writers_of,
    record_shape_issue,
    same,
    seal_shape_issue,
    strings,
    timestamp_ms,
)

CHECKS = (
    "receipt_format",
    "request_signature",
    "delegation_chain",
    "job_id",
    "job_record",
    "job_hash",
    "step_outputs",
    "job_answer",
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


def job_id_from_signature(signature: str) -> str:
    """The first 128 bits of SHA-256("geofabric/job\\n" + signature) as a UUIDv8 (docs/protocol.md §10.4)."""
    h = sha256_hex(f"geofabric/job\n{signature}")
    variant = format((int(h[16], 16) & 0x3) | 0x8, "x")
    return f"{h[0:8]}-{h[8:12]}-8{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"


def signing_message(body: dict) -> str:
    """JCS of the request body without ``signature``."""
    return canonicalize({k: v for k, v in body.items() if k != "signature"})


def verify_receipt(receipt: Any, sealer_pk: Optional[str] = None, allow_pending: bool = False) -> Verdict:
    """Every check of the receipt, each reported; ``failed_check`` names the first that failed. Never raises: a
    check that trips over a malformed part fails. The receipt is read as JavaScript reads JSON (an integer beyond
    2**53 is the double it parses to; a missing key is not a null one), so all four verifiers give one verdict."""
    checks: list[Check] = []

    def add(name: str, outcome: Any) -> None:
        try:
            ok, detail = outcome() if callable(outcome) else outcome
        except Exception as error:  # noqa: BLE001
            ok, detail = False, f"malformed receipt: {error!r}"
        checks.append(Check(name, ok, detail))

    try:
        value = as_json_numbers(receipt)
    except TypeError:
        value = None
    add("receipt_format", _receipt_format(value))
    if checks[0].ok:
        body = value["request"]["body"]
        job_entry = next((r for r in value["records"] if r["role"] == "job"), None)
        record = job_entry["record"] if job_entry is not None else None
        payload = record["payload"] if is_obj(record) and is_obj(record.get("payload")) else None
        add("request_signature", lambda: _request_signature(body))
        add(
            "delegation_chain",
            lambda: _delegation_chain(
                value["request"]["delegation_chain"], get(body, "requester_pk"), _job_time(body, job_entry)
            ),
        )
        add("job_id", lambda: _job_id(value, body))
        add("job_record", lambda: _job_record(value, job_entry))
        add("job_hash", lambda: _job_hash(value, body, payload))
        add("step_outputs", lambda: _step_outputs(value, body, payload))
        add("job_answer", lambda: _job_answer(value, job_entry, payload))
        add("step_records", lambda: _step_records(value, payload, allow_pending))
        add("fusion_inputs", lambda: _fusion_inputs(value, job_entry, allow_pending))
        add("inclusion", lambda: _inclusion(value, job_entry, sealer_pk))
        v1 = same(value["receipt_version"], 1)
        add("seal_chain", lambda: _seal_chains(value) if v1 else _seal_logs(value, job_entry, sealer_pk))
        add("anchor", lambda: _anchors(value, job_entry, sealer_pk))
        add("sealer", lambda: _sealer(job_entry, sealer_pk))
        add("sealed", lambda: _sealed(value, allow_pending))
    failed = next((c for c in checks if not c.ok), None)
    return Verdict(ok=failed is None, checks=checks, failed_check=failed.name if failed else None)


# The fields of a records entry that hold an object, or null until there is one (docs/protocol.md §15.1).
_ENTRY_OBJECTS = ("record", "seal", "proof", "anchor")


def _receipt_format(value: Any) -> tuple[bool, str]:
    if not is_obj(value):
        return False, "a receipt is a JSON object"
    version = get(value, "receipt_version")
    if not same(version, 1) and not same(version, 2):
        return False, f"receipt_version {version!r} is not 1 or 2"
    if get(value, "status") not in ("complete", "pending"):
        return False, "status must be complete or pending"
    if not isinstance(get(value, "job_id"), str):
        return False, "job_id must be a string"
    if not strings(get(value, "pending")):
        return False, "pending must be an array of strings"
    request = get(value, "request")
    if not is_obj(request) or not is_obj(get(request, "body")):
        return False, "request.body must be an object"
    chain = get(request, "delegation_chain")
    if chain is not None and not isinstance(chain, list):
        return False, "request.delegation_chain must be an array or null"
    job = get(value, "job")
    steps = get(job, "steps") if is_obj(job) else UNDEFINED
    if job is not None and (not isinstance(steps, list) or not all(is_obj(s) for s in steps)):
        return False, "job must be the job answer (with steps, each an object) or null"
    records = get(value, "records")
    if not isinstance(records, list):
        return False, "records must be an array"
    for i, r in enumerate(records):
        if not is_obj(r) or get(r, "role") not in ("job", "step", "input") or not isinstance(get(r, "record_id"), str):
            return False, f"records[{i}] needs role (job, step or input) and record_id"
        step_id = get(r, "step_id")
        if step_id is not None and not isinstance(step_id, str):
            return False, f"records[{i}].step_id must be a string or null"
        # Version 2 adds seal_proof (docs/protocol.md §15.4), present like the others.
        fields = _ENTRY_OBJECTS + ("seal_proof",) if same(version, 2) else _ENTRY_OBJECTS
        field_ = next((k for k in fields if get(r, k) is not None and not is_obj(get(r, k))), None)
        if field_ is not None:
            return False, f"records[{i}].{field_} must be an object or null"
    if sum(1 for r in records if r["role"] == "job") > 1:
        return False, "more than one job record"
    if same(version, 1):
        chains = get(value, "seal_chains")
        if not isinstance(chains, list):
            return False, "seal_chains must be an array"
        for i, c in enumerate(chains):
            if not is_obj(c) or not isinstance(get(c, "sealer_pk"), str) or not isinstance(get(c, "seals"), list):
                return False, f"seal_chains[{i}] needs sealer_pk and seals"
        return True, f"receipt version 1, {len(records)} records"
    if "seal_chains" in value:
        return False, "a version 2 receipt has seal_heads, not seal_chains"
    heads = get(value, "seal_heads")
    if not isinstance(heads, list):
        return False, "seal_heads must be an array"
    for i, h in enumerate(heads):
        anchored = get(h, "anchored") if is_obj(h) else UNDEFINED
        if not is_obj(h) or not is_obj(get(h, "head")) or (anchored is not None and not is_obj(anchored)):
            return False, f"seal_heads[{i}] needs head (an object) and anchored (an object or null)"
        if is_obj(anchored) and (
            not is_obj(get(anchored, "head")) or not isinstance(get(anchored, "consistency"), list)
        ):
            return False, f"seal_heads[{i}].anchored needs head and consistency"
    return True, f"receipt version 2, {len(records)} records"


def _request_signature(body: dict) -> tuple[bool, str]:
    pk = get(body, "requester_pk")
    issue = public_key_issue(pk)
    if issue is not None:
        return False, f"requester_pk {issue}"
    if not is_hex(get(body, "signature"), 64):
        return False, "signature must be 128 lowercase hex"
    try:
        message = signing_message(body)
    except (TypeError, ValueError) as error:
        return False, str(error)
    if verify(pk, message, body["signature"]):
        return True, f"signed by requester {pk}"
    return False, "the signature does not match the canonical request"


# ---- delegation (docs/protocol.md §10.5 rules 1–4, each link valid at the job's time, §15.2) ----


def _cert_signing_string(cert: dict) -> str:
    fields = ("version", "agent_pk", "principal_pk", "h3_cells", "facets", "not_before", "not_after", "max_depth")
    signed = {k: cert[k] for k in fields}
    signed["constraints"] = cert.get("constraints")
    return canonicalize(signed)


def _narrow(rights: Optional[dict], c: Optional[dict]) -> dict:
    """The rights in force after a link (certificates already of the right shape): lists narrowed, the lower rate."""
    parent_allowed = rights["allowed"] if rights else None
    own = c.get("allowed_tools") if c is not None else None
    if own is None:
        allowed = parent_allowed
    elif parent_allowed is None:
        allowed = list(own)
    else:
        allowed = [t for t in own if t in parent_allowed]
    denied = list(rights["denied"]) if rights else []
    for t in (c.get("denied_tools") or []) if c is not None else []:
        if t not in denied:
            denied.append(t)
    limits = [n for n in ((rights or {}).get("max_ops"), (c or {}).get("max_ops_per_hour")) if number(n)]
    return {"allowed": allowed, "denied": denied, "max_ops": min(limits) if limits else None}


def _link_issue(chain: list, i: int, rights: Optional[dict]) -> Optional[str]:
    """Why link ``i`` fails on its own or against its parent (shape, signature, keys, linkage, narrowing, depth)."""
    link = chain[i]
    shape = cert_shape_issue(link)
    if shape is not None:
        return f"link {i}: {shape}"
    if not verify(link["principal_pk"], _cert_signing_string(link), link["principal_signature"]):
        return f"link {i}: principal_signature does not verify under principal_pk"
    agent_issue = public_key_issue(link["agent_pk"])
    if agent_issue is not None:
        return f"link {i}: agent_pk {agent_issue}"
    if any(earlier["principal_pk"] == link["agent_pk"] for earlier in chain[: i + 1]):
        return f"link {i}: delegation loop"
    if i == 0 or rights is None:
        return None
    parent = chain[i - 1]
    if parent["agent_pk"] != link["principal_pk"]:
        return f"link {i}: principal_pk is not link {i - 1}'s agent_pk"
    for cell in link["h3_cells"]:
        if not cell_covered(parent["h3_cells"], cell):
            return f"link {i}: cell {cell} is not inside link {i - 1}'s cells"
    for facet in link["facets"]:
        if "*" not in parent["facets"] and facet not in parent["facets"]:
            return f"link {i}: facet {facet} is not granted by link {i - 1}"
    c = link.get("constraints")
    if rights["allowed"] is not None and c is not None and "allowed_tools" in c:
        if any(t not in rights["allowed"] for t in c["allowed_tools"]):
            return f"link {i}: a tool is not allowed by link {i - 1}"
    if c is not None and "denied_tools" in c:
        if any(t not in c["denied_tools"] for t in rights["denied"]):
            return f"link {i}: a tool denied by link {i - 1} is not denied"
    if timestamp_ms(link["not_before"]) < timestamp_ms(parent["not_before"]):
        return f"link {i}: widened window"
    if timestamp_ms(link["not_after"]) > timestamp_ms(parent["not_after"]):
        return f"link {i}: widened window"
    if rights["max_ops"] is not None and c is not None and "max_ops_per_hour" in c:
        if c["max_ops_per_hour"] > rights["max_ops"]:
            return f"link {i}: max_ops_per_hour exceeds link {i - 1}'s"
    if parent["max_depth"] < 1:
        return f"link {i - 1}: max_depth 0 does not allow further delegation"
    if link["max_depth"] > parent["max_depth"] - 1:
        return f"link {i}: max_depth too large"
    return None


# Tolerance around the job's time: the gate's window for a request's created_at (docs/protocol.md §10.3).
JOB_TIME_SKEW_MS = 5 * 60_000


def _job_time(body: dict, entry: Optional[dict]) -> Optional[tuple[float, str]]:
    """The request's signed created_at when it is a timestamp with a zone, else the node-signed job record's
    written_at (docs/protocol.md §15.2); other forms are not read, so no verdict depends on a local time zone."""
    created = timestamp_ms(get(body, "created_at"))
    if math.isfinite(created):
        return created, f"the request's created_at {body['created_at']}"
    written = opt(opt(entry, "record"), "written_at")
    written_ms = timestamp_ms(written)
    if math.isfinite(written_ms):
        return written_ms, f"the job record's written_at {written}"
    return None


def _delegation_chain(chain: Optional[list], requester_pk: Any, time: Optional[tuple[float, str]]) -> tuple[bool, str]:
    if chain is None:
        return True, "no delegation: the requester acts as its own principal"
    if not 1 <= len(chain) <= 8:
        return False, f"a chain has 1 to 8 links, not {len(chain)}"
    for i, link in enumerate(chain):
        shape = cert_shape_issue(link)
        if shape is not None:
            return False, f"link {i}: {shape}"
    rights = None
    for i, link in enumerate(chain):
        issue = _link_issue(chain, i, rights)
        if issue is not None:
            return False, issue
        rights = _narrow(rights, link.get("constraints"))
    if not same(chain[-1]["agent_pk"], requester_pk):
        return False, f"the chain ends at {chain[-1]['agent_pk']}, not the requester"
    links = f"{len(chain)} link(s) from human {chain[0]['principal_pk']} to the requester"
    if time is None:
        return True, f"{links}; pending: the job's time is not known yet"
    at, source = time
    for i, link in enumerate(chain):
        if at < timestamp_ms(link["not_before"]) - JOB_TIME_SKEW_MS:
            return False, f"link {i}: not valid before {link['not_before']}, not valid at the job's time ({source})"
        if at > timestamp_ms(link["not_after"]) + JOB_TIME_SKEW_MS:
            return False, f"link {i}: expired at {link['not_after']}, not valid at the job's time ({source})"
    return True, f"{links}, valid at the job's time ({source})"


# ---- records, seals, inclusion (docs/protocol.md §2.6, §10.7, §12) ----


def _record_issue(record: Any) -> Optional[str]:
    """The server's checkRecord: the shape exactly, then the hash, then the writer's signature."""
    shape = record_shape_issue(record)
    if shape is not None:
        return shape
    unsigned = {k: v for k, v in record.items() if k not in ("record_hash", "signature")}
    try:
        if sha256_hex(canonicalize(unsigned)) != record["record_hash"]:
            return "record_hash does not match the record"
    except (TypeError, ValueError) as error:
        return str(error)
    if not verify(record["address"]["pk"], record["record_hash"], record["signature"]):
        return "signature does not verify"
    return None


def _seal_issue(seal: Any) -> Optional[str]:
    """The server's checkSeal: the shape exactly, then the hash, then the signature of its sealer or custodian."""
    shape = seal_shape_issue(seal, EMPTY_ROOT)
    if shape is not None:
        return shape
    unsigned = {k: v for k, v in seal.items() if k not in ("seal_hash", "signature")}
    if sha256_hex(canonicalize(unsigned)) != seal["seal_hash"]:
        return "seal_hash does not match the seal"
    # A custodial seal (docs/protocol.md §12) is signed by its custodian, the central store's node key.
    if not verify(seal.get("custodian_pk", seal["sealer_pk"]), seal["seal_hash"], seal["signature"]):
        return "signature does not verify"
    return None


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _root_of(leaf_index: Any, tree_size: Any, leaf: bytes, path: list[bytes]) -> "bytes | str":
    """RFC 9162 §2.1.3.2: the root a leaf and its audit path imply, or why the path cannot be right."""
    if not is_index(leaf_index) or not is_index(tree_size) or not leaf_index < tree_size:
        return "leaf_index is not inside the tree"
    fn, sn, r = int(leaf_index), int(tree_size) - 1, leaf
    for p in path:
        if sn == 0:
            return "the path is longer than the tree is deep"
        if fn % 2 == 1 or fn == sn:
            r = _sha(b"\x01" + p + r)
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        else:
            r = _sha(b"\x01" + r + p)
        fn //= 2
        sn //= 2
    return r if sn == 0 else "the path ends before the root"


def _bundle_issue(entry: dict) -> Optional[str]:
    issue = _record_issue(entry["record"])
    if issue is not None:
        return f"record: {issue}"
    record = entry["record"]
    if record["id"] != entry["record_id"]:
        return f"the record is {record['id']}, not {entry['record_id']}"
    issue = _seal_issue(entry["seal"])
    if issue is not None:
        return f"seal: {issue}"
    seal = entry["seal"]
    if seal["sealer_pk"] != record["address"]["pk"] or seal["epoch"] != record["address"]["epoch"]:
        return "the seal is not the record's writer's epoch"
    proof = entry["proof"]
    hashes = get(proof, "hashes") if is_obj(proof) else None
    if not isinstance(hashes, list) or not all(is_hex(h, 32) for h in hashes):
        return "proof is malformed"
    if not same(get(proof, "tree_size"), seal["record_count"]):
        return "proof tree_size is not the seal's record_count"
    leaf = _sha(b"\x00" + bytes.fromhex(record["record_hash"]))
    root = _root_of(get(proof, "leaf_index"), get(proof, "tree_size"), leaf, [bytes.fromhex(h) for h in hashes])
    if isinstance(root, str):
        return f"proof: {root}"
    return None if root.hex() == seal["merkle_root"] else "proof: root mismatch"


# ---- the checks ----


def _job_id(receipt: dict, body: dict) -> tuple[bool, str]:
    signature = get(body, "signature")
    if not is_hex(signature, 64):
        return False, "the request has no signature to derive the job id from"
    derived = job_id_from_signature(signature)
    if receipt["job_id"] != derived:
        return False, f"job_id {receipt['job_id']} is not {derived}, the signature's"
    if receipt["job"] is not None and not same(get(receipt["job"], "job_id"), derived):
        return False, f"the answer is of job {get(receipt['job'], 'job_id')}"
    return True, derived


def _job_record(receipt: dict, entry: Optional[dict]) -> tuple[bool, str]:
    job = receipt["job"]
    if job is None:
        return (True, "pending: the job is still running") if receipt["status"] == "pending" else (False, "no job answer")
    named = opt(get(job, "proof"), "record_id")
    if not isinstance(named, str):
        return False, "the answer names no compute/job record"
    if entry is None:
        return False, f"no job record in the receipt (the answer names {named})"
    if entry["record_id"] != named:
        return False, f"the job record is {entry['record_id']}, the answer names {named}"
    if entry["step_id"] is not None:
        return False, "the job record's entry names a step (its step_id must be null)"
    record = entry["record"]
    if record is None:
        return True, f"pending: record {named} is not in the store yet"
    issue = _record_issue(record)
    if issue is not None:
        return False, f"record {named}: {issue}"
    if record["id"] != named:
        return False, f"the record is {record['id']}, not {named}"
    if record["payload_type"] != "compute/job":
        return False, f"record {named} is not a compute/job record"
    if not same(get(record["payload"], "job_id"), receipt["job_id"]):
        return False, f"record {named} is of another job"
    _, node_keys_issue = _node_keys_of(record["payload"], record["address"]["pk"])
    if node_keys_issue is not None:
        return False, f"record {named}: {node_keys_issue}"
    return True, f"{named} written by {record['address']['pk']}"


def _job_hash(receipt: dict, body: dict, payload: Optional[dict]) -> tuple[bool, str]:
    if receipt["job"] is None or payload is None:
        return True, "pending: no job record yet"
    try:
        request = sha256_hex(canonicalize(body))
    except (TypeError, ValueError) as error:
        return False, str(error)
    if not same(get(payload, "request_hash"), request):
        return False, f"the record's request_hash is not the request's {request}"
    if not same(get(payload, "requester_pk"), get(body, "requester_pk")):
        return False, "the record's requester_pk is not the request's"
    steps = get(payload, "steps")
    if not isinstance(steps, list) or not all(is_obj(s) for s in steps):
        return False, "the record lists no steps"
    # As JavaScript builds it: an absent id or status is left out of the JCS, an absent output_hash is null.
    outputs = [
        {**{k: s[k] for k in ("id", "status") if k in s}, "output_hash": s.get("output_hash")} for s in steps
    ]
    recomputed = sha256_hex(canonicalize({"request_hash": request, "outputs": outputs}))
    if not same(get(payload, "job_hash"), recomputed):
        return False, f"the record's job_hash is not the recomputed {recomputed}"
    if not same(opt(get(receipt["job"], "proof"), "job_hash"), recomputed):
        return False, f"the answer's job_hash is not the recomputed {recomputed}"
    return True, recomputed


def _step_outputs(receipt: dict, body: dict, payload: Optional[dict]) -> tuple[bool, str]:
    if receipt["job"] is None or payload is None or not isinstance(get(payload, "steps"), list):
        return True, "pending: no job record yet"
    body_steps = get(body, "steps")
    requested = [get(s, "id") if is_obj(s) else UNDEFINED for s in body_steps] if isinstance(body_steps, list) else []
    recorded = payload["steps"]
    answered = receipt["job"]["steps"]
    if len(recorded) != len(requested) or len(answered) != len(requested):
        return False, f"{len(requested)} steps requested, {len(recorded)} recorded, {len(answered)} answered"
    for i, step in enumerate(answered):
        record = recorded[i]
        if not same(get(step, "id"), requested[i]) or not same(get(record, "id"), requested[i]):
            return False, f"step {i} differs between request, record and answer"
        if not same(get(step, "status"), get(record, "status")):
            return False, f"step {get(step, 'id')}: status differs from the record"
        if not same(get(step, "record_id"), get(record, "record_id")):
            return False, f"step {get(step, 'id')}: the answer and the record name other records"
        digest = None
        if same(get(step, "status"), "complete"):
            output = get(step, "output")
            if output is UNDEFINED:
                raise TypeError("undefined is not representable in JSON")
            digest = sha256_hex(canonicalize(output))
        if not same(digest, get(record, "output_hash")):
            return False, f"step {get(step, 'id')}: the output does not hash to the recorded output_hash"
    return True, f"{len(answered)} step outputs match their recorded hashes"


# The fields a job answer and its steps may carry (docs/protocol.md §2.3): any other is bound by nothing.
_ANSWER_FIELDS = ("job_id", "status", "worker_pk", "h3_cell", "epoch", "steps", "settlement", "proof", "error")
_STEP_FIELDS = ("id", "type", "status", "output", "latency_ms", "worker_pk", "cost", "record_id", "relay_pk", "error")
_PROOF_FIELDS = ("job_hash", "verify_url", "record_id")


def _same_value(shown: Any, recorded: Any) -> bool:
    """Same JSON value, an absent field reading as null (JavaScript's ``canonicalJson(x ?? null)``)."""
    nullish = lambda v: None if v is None or v is UNDEFINED else v  # noqa: E731
    return canonicalize(nullish(shown)) == canonicalize(nullish(recorded))


def _job_answer(receipt: dict, entry: Optional[dict], payload: Optional[dict]) -> tuple[bool, str]:
    """Every field of the answer is bound by the signed compute/job record (docs/protocol.md §15.2), as the
    server's core checks it: status, cell, epoch, worker, settlement, error and proof link, and each step's type,
    worker, relay, cost, latency and error; no other field. A version-1 record binds no epoch, relay or step error."""
    record = entry["record"] if entry is not None else None
    if receipt["job"] is None or payload is None or record is None or not isinstance(get(payload, "steps"), list):
        return True, "pending: no job record yet"
    job = receipt["job"]
    version = get(payload, "version")
    if not (same(version, 1) or same(version, 2)):
        return False, f"compute/job payload version {version!r} is not 1 or 2"
    v2 = same(version, 2)

    def extra(value: dict, allowed: tuple[str, ...]) -> Optional[str]:
        return next((k for k in value if k not in allowed), None)

    unknown = extra(job, _ANSWER_FIELDS)
    if unknown is not None:
        return False, f"the answer's field {unknown} is bound by nothing"
    proof = get(job, "proof")
    if not is_obj(proof):
        return False, "the answer has no proof"
    proof_field = extra(proof, _PROOF_FIELDS)
    if proof_field is not None:
        return False, f"the answer's proof.{proof_field} is bound by nothing"
    link = "/store/proof/" + quote(entry["record_id"], safe="-_.!~*'()")
    verify_url = get(proof, "verify_url")
    if not isinstance(verify_url, str) or not verify_url.endswith(link):
        return False, f"proof.verify_url does not name {link}"
    recorded = payload["steps"]
    last_done = next((s for s in reversed(recorded) if same(get(s, "status"), "complete")), None)
    fields: list[tuple[str, Any, Any]] = [
        ("status", get(job, "status"), get(payload, "status")),
        ("h3_cell", get(job, "h3_cell"), get(payload, "h3_cell") if v2 else get(get(record, "address"), "h3_cell")),
        (
            "worker_pk",
            get(job, "worker_pk"),
            get(payload, "worker_pk") if v2 else (None if last_done is None else get(last_done, "worker_pk")),
        ),
        ("settlement", get(job, "settlement"), get(payload, "settlement")),
        ("error", get(job, "error"), get(payload, "error")),
    ]
    if v2:
        fields.append(("epoch", get(job, "epoch"), get(payload, "epoch")))
    for i, value in enumerate(job["steps"]):
        if not is_obj(value):
            return False, f"steps[{i}] is not an object"
        step_field = extra(value, _STEP_FIELDS)
        if step_field is not None:
            return False, f"steps[{i}].{step_field} is bound by nothing"
        step_record = recorded[i] if i < len(recorded) else UNDEFINED
        if not is_obj(step_record):
            return False, f"the record lists no step {i}"
        for key in ("type", "worker_pk", "cost", "latency_ms"):
            fields.append((f"steps[{i}].{key}", get(value, key), get(step_record, key)))
        if v2:
            fields.append((f"steps[{i}].relay_pk", get(value, "relay_pk"), get(step_record, "relay_pk")))
            fields.append((f"steps[{i}].error", get(value, "error"), get(step_record, "error")))
    for name, shown, bound in fields:
        if not _same_value(shown, bound):
            return False, f"{name} is not the signed record's"
    if v2:
        return True, "every field of the answer is the signed record's"
    return True, "the answer is the signed record's; a version-1 record binds no epoch, relay or step error"


def _step_records(receipt: dict, payload: Optional[dict], allow_pending: bool) -> tuple[bool, str]:
    if payload is None or not isinstance(get(payload, "steps"), list):
        return True, "pending: no job record yet"
    named = [s for s in payload["steps"] if isinstance(get(s, "record_id"), str)]
    entries = [r for r in receipt["records"] if r["role"] == "step"]
    if len(entries) != len(named):
        return False, f"the job names {len(named)} step records, the receipt holds {len(entries)}"
    missing = 0
    for step in named:
        entry = next((e for e in entries if same(e["step_id"], get(step, "id"))), None)
        if entry is None:
            return False, f"no record for step {get(step, 'id')}"
        if entry["record_id"] != step["record_id"]:
            return False, f"step {get(step, 'id')}: not the named record"
        if entry["record"] is None:
            missing += 1
            continue
        issue = _record_issue(entry["record"])
        if issue is not None:
            return False, f"step {get(step, 'id')} record: {issue}"
        if entry["record"]["id"] != step["record_id"]:
            return False, f"step {get(step, 'id')}: the record is another"
    if missing and not allow_pending and receipt["status"] != "pending":
        return False, f"{missing} step record(s) missing from a receipt marked complete"
    return True, f"{len(named) - missing} step record(s) verified" + (f", {missing} pending" if missing else "")


# ---- sensor fusion (docs/protocol.md §2.10): the server's method in its operation order, so the doubles agree ----


def _merkle_root_hex(record_hashes: list) -> str:
    """RFC 6962 root built bottom-up (an odd last node moves up unchanged); SHA-256 of nothing when empty."""
    if not record_hashes:
        return EMPTY_ROOT
    level = [_sha(b"\x00" + bytes.fromhex(h)) for h in record_hashes]
    while len(level) > 1:
        nxt = [_sha(b"\x01" + level[i] + level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2 == 1:
            nxt.append(level[-1])
        level = nxt
    return level[0].hex()


# The output fields recomputed from a fusion's inputs and compared.
FUSION_RECOMPUTED = ("value", "mean", "stderr", "voter_count", "device_count", "reading_count", "merkle_root")


def _fusion_inputs(receipt: dict, job_entry: Optional[dict], allow_pending: bool) -> tuple[bool, str]:
    """Each complete sensor_fusion step's role "input" entries are exactly its output's record_ids, in order, each
    once; each is a reading that counts as evidence (shapes.proven_reading: written by one of the output's
    trusted_writers, or without them by the job record's writer,
    signed by its device, plausible) of the step's quantity, cells and window, no two of one device, quantity and
    instant; and the fusion recomputed from them gives the output's numbers and Merkle root."""
    job = receipt["job"]
    steps = job["steps"] if job is not None else []
    fusions = [s for s in steps if same(get(s, "type"), "sensor_fusion") and same(get(s, "status"), "complete")]
    named = [get(s, "id") for s in fusions]
    inputs = [r for r in receipt["records"] if r["role"] == "input"]
    for r in inputs:
        key = r["step_id"] if r["step_id"] is not None else ""
        if not any(same(key, n) for n in named):
            return False, f"input {r['record_id']} belongs to no complete sensor_fusion step"
    address = opt(opt(job_entry, "record"), "address")
    writer = get(address, "pk") if is_obj(address) else UNDEFINED
    verified = missing = 0
    for step in fusions:
        step_id = get(step, "id")
        out = get(step, "output")
        ids = get(out, "record_ids")
        if not strings(ids):
            return False, f"step {step_id}: no record_ids"
        if len(set(ids)) != len(ids):
            return False, f"step {step_id}: an input is named twice"
        entries = [r for r in inputs if same(r["step_id"], step_id)]
        if [e["record_id"] for e in entries] != ids:
            return False, f"step {step_id}: the receipt's inputs are not the {len(ids)} records the output names"
        # The writers the fusion trusted, bound by the job record: its writer's statement (docs/protocol.md §2.10).
        trusted, trusted_issue = trusted_writers_of(out)
        if trusted_issue is not None:
            return False, f"step {step_id}: {trusted_issue}"
        window = get(out, "window")
        start = timestamp_ms(opt(window, "from"))
        end = timestamp_ms(opt(window, "to"))
        cells = get(out, "cells")
        cells = cells if isinstance(cells, list) else []
        if not all(is_cell(c) for c in cells):
            return False, f"step {step_id}: cells must be H3 cells"
        readings = []
        instants = set()
        for entry in entries:
            record = entry["record"]
            if record is None:
                missing += 1
                continue
            issue = _record_issue(record)
            if issue is not None:
                return False, f"input {entry['record_id']}: {issue}"
            # Pending until the job record is there: it names (or binds the output naming) who may have written them.
            if not isinstance(writer, str):
                missing += 1
                continue
            reading = proven_reading(record, trusted if trusted is not None else [writer])
            if isinstance(reading, str):
                return False, f"input {reading}"
            at = timestamp_ms(reading["observed_at"])
            in_window = start <= at < end
            in_cells = cell_covered(cells, record["address"]["h3_cell"])
            if not same(reading["quantity"], get(out, "quantity")) or not in_window or not in_cells:
                what = f"a {get(out, 'quantity')} reading of the step's cells and window"
                return False, f"input {entry['record_id']} is not {what}"
            instant = (reading["device_pk"], reading["quantity"], reading["observed_at"])
            if instant in instants:
                return False, f"input {entry['record_id']}: a second reading of its device and instant"
            instants.add(instant)
            readings.append(
                {
                    "device_pk": reading["device_pk"],
                    "principal_pk": reading["principal_pk"],
                    "value": reading["value"],
                    "record_id": entry["record_id"],
                    "record_hash": record["record_hash"],
                }
            )
        if len(readings) < len(entries):
            continue
        fused = fuse(readings, _merkle_root_hex)
        for key in FUSION_RECOMPUTED:
            if not same(fused[key], get(out, key)):
                return False, f"step {step_id}: {key} recomputed from the inputs is {fused[key]}"
        verified += 1
    if missing and not allow_pending and receipt["status"] != "pending":
        return False, f"{missing} fusion input(s) missing from a receipt marked complete"
    if not fusions:
        return True, "no sensor_fusion step"
    pending = f", {missing} pending" if missing else ""
    return True, f"{verified} fusion step(s) recomputed from their signed inputs{pending}"


def _node_keys_of(payload: Any, writer: Any) -> tuple[list[str], Optional[str]]:
    """The node keys a job record's writer vouches for (docs/protocol.md §15.4): its payload's node_keys (the
    deployment's gateways sharing one store, ascending and distinct, the writer among them), or the writer alone;
    and the issue when the list is malformed."""
    if not isinstance(writer, str):
        return [], None
    named = get(payload, "node_keys") if is_obj(payload) else UNDEFINED
    if named is UNDEFINED:
        return [writer], None
    well_formed = (
        isinstance(named, list)
        and all(is_hex(pk, 32) and (i == 0 or named[i - 1] < pk) for i, pk in enumerate(named))
        and writer in named
    )
    if well_formed:
        return list(named), None
    return [writer], "node_keys must be ascending distinct node keys naming the writer"


def _trust_of(job_entry: Optional[dict]) -> tuple[Any, list[str]]:
    """The job record's writer and the node keys it vouches for."""
    record = opt(job_entry, "record")
    address = opt(record, "address")
    writer = get(address, "pk") if is_obj(address) else UNDEFINED
    payload = get(record, "payload") if is_obj(record) else UNDEFINED
    return writer, _node_keys_of(payload, writer)[0]


def _custodian_issue(custodian: str, trust: tuple[Any, list[str]], sealer_pk: Optional[str]) -> Optional[str]:
    """Why a custodial seal's custodian is not trusted (docs/protocol.md §12.3): only the node seals a gone
    worker's epoch, and the receipt names the node as the writer of its compute/job record (and the pinned key),
    or one of the node keys that record names."""
    writer, keys = trust
    vouched = custodian in keys
    if sealer_pk is not None and custodian != sealer_pk and not (same(writer, sealer_pk) and vouched):
        return f"custodial seal by {custodian}, not by the pinned node {sealer_pk} or one of its node_keys"
    if not isinstance(writer, str):
        return f"custodial seal by {custodian}, but no job record names the node"
    if custodian != writer and not vouched:
        return (
            f"custodial seal by {custodian}, not by the node {writer} that wrote the job record or one of its node_keys"
        )
    return None


def _inclusion(receipt: dict, job_entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    proven = 0
    custodians: list[str] = []
    custodial = 0
    trust = _trust_of(job_entry)
    for entry in receipt["records"]:
        if entry["record"] is None or entry["seal"] is None:
            continue
        issue = _bundle_issue(entry)
        if issue is not None:
            return False, f"{entry['record_id']}: {issue}"
        proven += 1
        if "custodian_pk" in entry["seal"]:
            custodian = entry["seal"]["custodian_pk"]
            untrusted = _custodian_issue(custodian, trust, sealer_pk)
            if untrusted is not None:
                return False, f"{entry['record_id']}: {untrusted}"
            custodial += 1
            if custodian not in custodians:
                custodians.append(custodian)
    unsealed = len(receipt["records"]) - proven
    by = f" ({custodial} under custodial seals by {', '.join(custodians)})" if custodial else ""
    return True, f"{proven} record(s) included in their sealed epochs{by}" + (f", {unsealed} pending" if unsealed else "")


def _seal_chains(receipt: dict) -> tuple[bool, str]:
    sealers: list = []
    for r in receipt["records"]:
        if r["seal"] is not None and not any(same(get(r["seal"], "sealer_pk"), s) for s in sealers):
            sealers.append(get(r["seal"], "sealer_pk"))
    links = 0
    for sealer in sealers:
        chain = next((c for c in receipt.get("seal_chains", []) if same(c["sealer_pk"], sealer)), None)
        if chain is None:
            return False, f"no seal chain for sealer {sealer}"
        for seal in chain["seals"]:
            issue = _seal_issue(seal)
            if issue is not None:
                return False, f"sealer {sealer}: {issue}"
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
            seal = entry["seal"]
            if seal is None or not same(get(seal, "sealer_pk"), sealer):
                continue
            in_chain = next((s for s in seals if same(s["epoch"], get(seal, "epoch"))), None)
            if in_chain is None or canonicalize(in_chain) != canonicalize(seal):
                return False, f"{entry['record_id']}: its seal is not the one in the chain"
        links += len(seals)
    return True, f"{len(sealers)} sealer chain(s), {links} seal(s), each from the sealer's first"


# ---- version 2: seal logs (docs/protocol.md §15.4) ----

_HEAD_TAG = "geofabric/seal-head/v1"
_LOG_LEAF_PREFIX = b"\x00" + b"geofabric/seal-log/v1"


def _head_issue(head: Any) -> Optional[str]:
    """Shape, then head_hash (SHA-256 of the tag, a newline and JCS of the unsigned head), then signer_pk's
    signature."""
    shape = head_shape_issue(head)
    if shape is not None:
        return shape
    unsigned = {k: v for k, v in head.items() if k not in ("head_hash", "signature")}
    if sha256_hex(f"{_HEAD_TAG}\n{canonicalize(unsigned)}") != head["head_hash"]:
        return "head_hash does not match the head"
    if not verify(head["signer_pk"], head["head_hash"], head["signature"]):
        return "the head signature does not verify"
    return None


def _head_signer_issue(head: dict, trust: tuple[Any, list[str]], sealer_pk: Optional[str]) -> Optional[str]:
    """Who may sign a head of a sealer's log: the sealer, or under the custodian rule the node (the job record's
    writer or one of its node_keys; when pinned, the pinned key or one of its node_keys)."""
    if head["signer_pk"] == head["sealer_pk"]:
        return None
    writer, keys = trust
    vouched = head["signer_pk"] in keys
    if sealer_pk is not None and head["signer_pk"] != sealer_pk and not (same(writer, sealer_pk) and vouched):
        return f"head signed by {head['signer_pk']}, not the pinned node or one of its node_keys"
    if not same(head["signer_pk"], writer) and not vouched:
        return f"head signed by {head['signer_pk']}, neither the sealer nor the node or one of its node_keys"
    return None


def _seal_logs(receipt: dict, job_entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    trust = _trust_of(job_entry)
    heads: dict[str, dict] = {}
    for i, entry in enumerate(receipt["seal_heads"]):
        issue = _head_issue(entry["head"])
        if issue is not None:
            return False, f"seal_heads[{i}]: {issue}"
        sealer = entry["head"]["sealer_pk"]
        if sealer in heads:
            return False, f"two heads of sealer {sealer}"
        signer = _head_signer_issue(entry["head"], trust, sealer_pk)
        if signer is not None:
            return False, f"seal_heads[{i}]: {signer}"
        heads[sealer] = entry["head"]
    needed: set[str] = set()
    proven = 0
    for entry in receipt["records"]:
        seal = entry["seal"]
        if seal is None:
            if entry["seal_proof"] is not None:
                return False, f"{entry['record_id']}: a seal_proof without a seal"
            continue
        issue = _seal_issue(seal)
        if issue is not None:
            return False, f"{entry['record_id']}: {issue}"
        head = heads.get(seal["sealer_pk"])
        if head is None:
            return False, f"{entry['record_id']}: no head of sealer {seal['sealer_pk']}"
        needed.add(seal["sealer_pk"])
        proof = entry["seal_proof"]
        if proof is None:
            return False, f"{entry['record_id']}: no proof of its seal in the head"
        shape = proof_shape_issue(proof)
        if shape is not None:
            return False, f"{entry['record_id']}: seal_proof {shape}"
        if not same(proof["leaf_index"], seal["epoch"] - head["first_epoch"]):
            return False, f"{entry['record_id']}: leaf_index is not its epoch less the head's first epoch"
        if not same(proof["tree_size"], head["tree_size"]):
            return False, f"{entry['record_id']}: the proof is not of the head's size"
        leaf = _sha(_LOG_LEAF_PREFIX + bytes.fromhex(seal["seal_hash"]))
        root = _root_of(proof["leaf_index"], proof["tree_size"], leaf, [bytes.fromhex(h) for h in proof["hashes"]])
        if isinstance(root, str):
            return False, f"{entry['record_id']}: {root}"
        if root.hex() != head["root_hash"]:
            return False, f"{entry['record_id']}: the proof does not lead to the head's root"
        proven += 1
    stray = next((pk for pk in heads if pk not in needed), None)
    if stray is not None:
        return False, f"a head of sealer {stray}, whose seal no record needs"
    return True, f"{proven} seal(s) proven in {len(heads)} signed head(s)"


def _consistent(m: int, n: int, old_root: bytes, new_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 §2.1.4.2; for m = n the proof is empty and the roots equal (two roots of one size: equivocation)."""
    if not 1 <= m <= n:
        return False
    if m == n:
        return not proof and old_root == new_root
    path = [old_root, *proof] if m & (m - 1) == 0 else list(proof)
    if not path:
        return False
    fn, sn = m - 1, n - 1
    while fn % 2 == 1:
        fn //= 2
        sn //= 2
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr = _sha(b"\x01" + c + fr)
            sr = _sha(b"\x01" + c + sr)
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        else:
            sr = _sha(b"\x01" + sr + c)
        fn //= 2
        sn //= 2
    return sn == 0 and fr == old_root and sr == new_root


def _anchored_heads(receipt: dict, job_entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    """Per sealer with an anchored record: the head ending at its latest anchored epoch, and the head consistent
    with it."""
    trust = _trust_of(job_entry)
    consistent = 0
    for i, entry in enumerate(receipt["seal_heads"]):
        issue = _head_issue(entry["head"])
        if issue is not None:
            return False, f"seal_heads[{i}]: {issue}"
        head = entry["head"]
        epochs = [
            get(r["anchor"], "epoch")
            for r in receipt["records"]
            if r["anchor"] is not None and is_obj(r["seal"]) and same(get(r["seal"], "sealer_pk"), head["sealer_pk"])
        ]
        if not epochs:
            if entry["anchored"] is not None:
                return False, f"seal_heads[{i}]: an anchored head, but no record is anchored"
            continue
        latest = max(epochs)
        if entry["anchored"] is None:
            return False, f"seal_heads[{i}]: epoch {latest} is anchored, but no anchored head"
        issue = _head_issue(entry["anchored"]["head"])
        if issue is not None:
            return False, f"seal_heads[{i}].anchored: {issue}"
        anchored = entry["anchored"]["head"]
        signer = _head_signer_issue(anchored, trust, sealer_pk)
        if signer is not None:
            return False, f"seal_heads[{i}].anchored: {signer}"
        if anchored["sealer_pk"] != head["sealer_pk"] or not same(anchored["first_epoch"], head["first_epoch"]):
            return False, f"seal_heads[{i}]: the anchored head is of another log"
        if not same(anchored["tree_size"], latest - anchored["first_epoch"] + 1):
            return False, f"seal_heads[{i}]: the anchored head does not end at the anchored epoch"
        proof = entry["anchored"]["consistency"]
        if len(proof) > 64 or not all(is_hex(h, 32) for h in proof):
            return False, f"seal_heads[{i}]: consistency is malformed"
        holds = _consistent(
            int(anchored["tree_size"]),
            int(head["tree_size"]),
            bytes.fromhex(anchored["root_hash"]),
            bytes.fromhex(head["root_hash"]),
            [bytes.fromhex(h) for h in proof],
        )
        if not holds:
            return False, f"seal_heads[{i}]: the head is not consistent with the anchored head"
        consistent += 1
    return True, f"{consistent} head(s) consistent with their anchored heads"


def _anchors(receipt: dict, job_entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    anchored = 0
    for entry in receipt["records"]:
        anchor = entry["anchor"]
        if anchor is None:
            continue
        seal = entry["seal"]
        if seal is None:
            return False, f"{entry['record_id']}: an anchor without a seal"
        same_root = same(get(anchor, "root"), get(seal, "merkle_root"))
        if not same_root or not same(get(anchor, "epoch"), get(seal, "epoch")):
            return False, f"{entry['record_id']}: the anchor's root or epoch is not the seal's"
        anchored += 1
    named = "no anchor yet" if anchored == 0 else f"{anchored} anchor(s) name their seal's root"
    if same(receipt["receipt_version"], 1):
        return True, named
    ok, detail = _anchored_heads(receipt, job_entry, sealer_pk)
    return (True, f"{named}; {detail}") if ok else (False, detail)


def _sealer(entry: Optional[dict], sealer_pk: Optional[str]) -> tuple[bool, str]:
    if sealer_pk is None:
        return True, "no sealer pinned"
    record = entry["record"] if entry is not None else None
    if record is None:
        return True, "pending: no job record yet"
    writer = get(get(record, "address"), "pk")
    if not same(writer, sealer_pk):
        return False, f"the job record was written by {writer}, not {sealer_pk}"
    seal = entry["seal"]
    if seal is not None and not same(get(seal, "sealer_pk"), sealer_pk):
        return False, f"sealed by {get(seal, 'sealer_pk')}"
    return True, f"written{' and sealed' if seal is not None else ''} by {sealer_pk}"


def _sealed(receipt: dict, allow_pending: bool) -> tuple[bool, str]:
    missing = [r["record_id"] for r in receipt["records"] if r["record"] is None or r["seal"] is None]
    has_job = any(r["role"] == "job" for r in receipt["records"])
    if receipt["job"] is not None and not missing and has_job:
        return True, "every record is sealed"
    if receipt["status"] == "complete":
        return False, f"marked complete, but not sealed: {', '.join(missing) or 'no job record'}"
    why = "; ".join(receipt["pending"]) or ", ".join(missing)
    return (True, f"pending (allowed): {why}") if allow_pending else (False, f"pending: {why}")
