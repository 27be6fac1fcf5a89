"""Geofabric client: signed compute jobs and offline job receipt verification (docs/protocol.md §10, §15)."""

from .client import GeofabricClient, GeofabricError
from .crypto import public_key_issue, public_key_of, sha256_hex, sign, verify
from .jcs import canonicalize
from .receipt import CHECKS, Check, Verdict, job_id_from_signature, signing_message, verify_receipt
from .shapes import QUANTITIES, reading_statement, sign_reading

__all__ = [
    "CHECKS",
    "Check",
    "GeofabricClient",
    "GeofabricError",
    "QUANTITIES",
    "Verdict",
    "canonicalize",
    "job_id_from_signature",
    "public_key_issue",
    "public_key_of",
    "reading_statement",
    "sha256_hex",
    "sign",
    "sign_reading",
    "signing_message",
    "verify",
    "verify_receipt",
]
