"""The Python client against the repository's conformance vectors (test/fixtures/conformance/) and the Ed25519
edge cases of "Taming the many EdDSAs": the same canonical JSON, signatures, job ids and receipt verdicts."""

import copy
import json
from pathlib import Path

import pytest

from geofabric_client import (
    CHECKS,
    canonicalize,
    job_id_from_signature,
    public_key_of,
    sha256_hex,
    sign,
    signing_message,
    verify,
    verify_receipt,
)

FIXTURES = Path(__file__).resolve().parents[3] / "test" / "fixtures"


def load(name):
    return json.loads((FIXTURES / name).read_text("utf-8"))


def apply_patch(document, patch):
    doc = copy.deepcopy(document)
    for op in patch:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        parent = doc
        for key in keys[:-1]:
            parent = parent[int(key)] if isinstance(parent, list) else parent[key]
        last = keys[-1]
        if isinstance(parent, list):
            last = int(last)
        if op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = copy.deepcopy(op["value"])
    return doc


@pytest.mark.parametrize("case", load("conformance/canonical-json.json"), ids=lambda c: c["name"])
def test_canonical_json(case):
    assert canonicalize(json.loads(case["input"])) == case["canonical"]


@pytest.mark.parametrize("case", load("conformance/signed-requests.json"), ids=lambda c: c["name"])
def test_signed_requests(case):
    assert public_key_of(case["secret_key"]) == case["public_key"]
    message = signing_message({**case["body"], "requester_pk": case["public_key"]})
    assert message == case["signing_message"]
    assert sign(case["secret_key"], message) == case["signature"]
    assert verify(case["public_key"], message, case["signature"])
    assert job_id_from_signature(case["signature"]) == case["job_id"]
    assert sha256_hex(canonicalize(case["signed_body"])) == case["request_hash"]


@pytest.mark.parametrize("case", load("conformance/receipt-cases.json"), ids=lambda c: c["name"])
def test_receipt_cases(case):
    receipt = apply_patch(load(f"conformance/receipt-{case['base']}.json"), case["patch"])
    verdict = verify_receipt(
        receipt,
        sealer_pk=case["options"].get("sealer_pk"),
        allow_pending=case["options"].get("allow_pending", False),
    )
    failed = [c for c in verdict.checks if not c.ok]
    assert verdict.ok == case["expected"]["ok"], failed
    assert verdict.failed_check == case["expected"].get("failed_check")


def test_ed25519_policy_accepts_speccheck_cases_2_and_3_only():
    cases = load("vectors/ed25519/speccheck-cases.json")
    accepted = [i for i, c in enumerate(cases) if verify(c["pub_key"], bytes.fromhex(c["message"]), c["signature"])]
    assert accepted == [2, 3]


def _paths(value, at=()):
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    out = []
    for key, child in items:
        out.append(at + (key,))
        out.extend(_paths(child, at + (key,)))
    return out


@pytest.mark.parametrize("base", ["valid", "fusion"])
def test_never_raises_on_a_malformed_receipt(base):
    valid = load(f"conformance/receipt-{base}.json")
    # Every shallow part, and a sample of the deep ones (keeps the run short).
    sample = [p for i, p in enumerate(_paths(valid)) if len(p) <= 3 or i % 7 == 0]
    for path in sample:
        for other in (None, "other"):
            receipt = copy.deepcopy(valid)
            parent = receipt
            for key in path[:-1]:
                parent = parent[key]
            last = path[-1]
            parent[last] = 0 if other == "other" and isinstance(parent[last], str) else other
            verdict = verify_receipt(receipt)
            assert len(verdict.checks) == len(CHECKS) or (len(verdict.checks) == 1 and not verdict.ok), path
