"""One verdict from four receipt verifiers (docs/protocol.md §15.3): on the repository's agreement corpus (the
tampers, signed changes only a shape or fusion rule refuses, and a differential fuzz of seeded mutations of the
conformance receipts), the Python client gives the server core's verdict: the same ok and the same first failed
check. The corpus and core's verdicts come from ``scripts/receipt-corpus.ts``, run with the repository's Node and
tsx, so they are never stale; the JavaScript verifiers run the same corpus in the unit suite
(test/core/receipt-agreement.test.ts). Without Node and the repository's node_modules the tests skip, unless
REQUIRE_NODE is set (as .ci/run sets it): then they fail."""

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from geofabric_client import verify_receipt
from geofabric_client.shapes import fuse, is_cell, timestamp_ms

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def corpus():
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "tsx").is_dir():
        message = "the agreement corpus needs Node and the repository's node_modules (npm ci)"
        if os.environ.get("REQUIRE_NODE"):
            pytest.fail(message)
        pytest.skip(message)
    run = subprocess.run(
        [node, "--import", "tsx", "scripts/receipt-corpus.ts"],
        cwd=ROOT,
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    return json.loads(run.stdout)


def test_every_case_gets_the_server_core_verdict(corpus):
    assert len(corpus["cases"]) > 100
    disagreements = []
    for case in corpus["cases"]:
        verdict = verify_receipt(
            case["receipt"],
            sealer_pk=case["options"].get("sealer_pk"),
            allow_pending=case["options"].get("allow_pending", False),
        )
        expected = case["expected"]
        if verdict.ok != expected["ok"] or verdict.failed_check != expected.get("failed_check"):
            first = next((f"{c.name}: {c.detail}" for c in verdict.checks if not c.ok), "ok")
            disagreements.append(f"{case['name']}: core {expected}, Python {first}")
    assert disagreements == []


def test_h3_cells_and_timestamps_read_as_the_server_core_reads_them(corpus):
    for sample in corpus["cells"]:
        assert is_cell(sample["text"]) == sample["valid"], sample
    for sample in corpus["timestamps"]:
        ms = timestamp_ms(sample["text"])
        assert (None if math.isnan(ms) else ms) == sample["ms"], sample


def _code_units(text):
    return text.encode("utf-16-be", "surrogatepass")


def test_the_fusion_arithmetic_gives_the_server_core_numbers_bit_for_bit(corpus):
    assert len(corpus["fusions"]) > 100
    for sample in corpus["fusions"]:
        readings = sample["readings"]
        # The Merkle root stands for the order of the record hashes it is built over (checked whole above).
        order = [r["record_hash"] for r in sorted(readings, key=lambda r: _code_units(r["record_id"]))]
        fused = fuse(readings, lambda hashes: ",".join(hashes))
        assert fused == {**sample["fused"], "merkle_root": ",".join(order)}, readings
