"""Text a peer sends must be storable: every string we keep is valid UTF-8.

JSON lets a peer write a lone surrogate (``"\\ud800"``), which Python decodes into a ``str``
that can never be encoded again: kept in shared state, it would make every later write of
that state fail (topics.json, a route body). Strict UTF-8 decoders (msgpack, the ROCKETMQ
binary header, ``bytes.decode``) never produce one; JSON is the only way in, so JSON is
checked where it is parsed. Checks cost nothing unless the text holds a ``\\u`` escape.
"""

from __future__ import annotations

import json
from typing import Any

_decoder = json.JSONDecoder()


def unencodable(text: str) -> bool:
    """Whether ``text`` cannot be written as UTF-8 (it holds a lone surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def check_strings(obj: Any, what: str = "JSON") -> None:
    """Raise ValueError if any string in ``obj`` (keys included, nested) is unencodable."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if unencodable(item):
                raise ValueError(f"{what} holds text that is not valid UTF-8: {item!r}")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def loads(data: str | bytes | bytearray, what: str = "JSON") -> Any:
    """``json.loads`` that refuses text which could not be written back, or nested past
    Python's recursion limit (ValueError, as for any malformed body)."""
    try:
        obj = json.loads(data)
    except RecursionError as exc:
        raise ValueError(f"{what} nested too deeply") from exc
    escaped = b"\\u" in data if isinstance(data, bytes | bytearray) else "\\u" in data
    if escaped:
        check_strings(obj, what)
    return obj
