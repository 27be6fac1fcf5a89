"""Ed25519 and SHA-256 as Geofabric uses them (docs/protocol.md §10.1).

Keys and signatures are lowercase hex; signatures are over the UTF-8 of a string. Verification policy: the key
is a canonical encoding of a curve point that is not of small order, then OpenSSL's check (S < L, the
cofactorless equation, R compared by its encoding).
"""

import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)
_SMALL_ORDER = {
    "0100000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
}


def is_hex(value: object, size: int) -> bool:
    return isinstance(value, str) and len(value) == size * 2 and re.fullmatch(r"[0-9a-f]*", value) is not None


def sha256_hex(data: "str | bytes") -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def public_key_issue(pk: object) -> "str | None":
    """Why ``pk`` is not an acceptable public key, or None."""
    if not is_hex(pk, 32):
        return "must be 64 lowercase hex"
    raw = bytes.fromhex(pk)  # type: ignore[arg-type]
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    if y >= _P:
        return "is not a canonical encoding (y >= p)"
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    x = (u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P)) % _P
    if (v * x * x - u) % _P != 0:
        x = (x * _SQRT_M1) % _P
        if (v * x * x - u) % _P != 0:
            return "is not a point on the curve"
    if x == 0 and sign == 1:
        return "is not a canonical encoding (x = 0 with the sign bit set)"
    if pk in _SMALL_ORDER:
        return "is a small-order point"
    return None


def _seed(secret_key: str) -> bytes:
    hex_key = secret_key.lower()
    if not (is_hex(hex_key, 32) or is_hex(hex_key, 64)):
        raise ValueError("a secret key is 64 (or 128) hex characters")
    return bytes.fromhex(hex_key[:64])


def public_key_of(secret_key: str) -> str:
    key = Ed25519PrivateKey.from_private_bytes(_seed(secret_key))
    pk = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    if len(secret_key) == 128 and secret_key[64:].lower() != pk:
        raise ValueError("the second half of the secret key is not its public key")
    return pk


def sign(secret_key: str, message: "str | bytes") -> str:
    data = message.encode("utf-8") if isinstance(message, str) else message
    return Ed25519PrivateKey.from_private_bytes(_seed(secret_key)).sign(data).hex()


def verify(pk: str, message: "str | bytes", signature: str) -> bool:
    if public_key_issue(pk) is not None or not is_hex(signature, 64):
        return False
    data = message.encode("utf-8") if isinstance(message, str) else message
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(pk)).verify(bytes.fromhex(signature), data)
    except InvalidSignature:
        return False
    return True
