"""RFC 8785 canonical JSON (docs/protocol.md §10.2) through the ``rfc8785`` package.

JSON numbers are IEEE doubles: an integer beyond 2**53 is written as the double it parses to, as JavaScript does.
"""

from typing import Any

import rfc8785

_SAFE = 2**53 - 1


def as_json_numbers(value: Any) -> Any:
    """``value`` with its numbers as JavaScript's JSON.parse gives them: an integer beyond 2**53 is the double it
    rounds to, -0.0 is 0. Raises TypeError on a value JSON cannot hold."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -_SAFE <= value <= _SAFE else float(value)
    if isinstance(value, float):
        return 0.0 if value == 0 else value
    if isinstance(value, list):
        return [as_json_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json_numbers(v) for k, v in value.items()}
    raise TypeError(f"{type(value).__name__} is not representable in JSON")


def canonicalize(value: Any) -> str:
    """The JCS text of ``value``; every Geofabric signature and hash is over its UTF-8."""
    return rfc8785.dumps(as_json_numbers(value)).decode("utf-8")
