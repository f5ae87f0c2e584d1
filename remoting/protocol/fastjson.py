"""fastjson-compatible JSON: parse what Java writes, and write object-keyed maps as Java does.

fastjson 1.x writes maps keyed by Integer/Long with bare numeric keys (``{0:"a"}``) and maps
keyed by objects (MessageQueue) with object keys (``{{"brokerName":"b",...}:{...}}``); neither
is valid JSON (protocol.md 6). ``loads`` accepts both, plus everything ``json`` accepts: a
bare numeric key becomes its text, an object key a ``FrozenKey`` (sorted item pairs); text
that could not be written back as UTF-8 is refused (``aiorocketmq.remoting.protocol.text``).
``dumps_object_keyed`` writes such a map the way Java tools read it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final, TypeAlias

from aiorocketmq.remoting.protocol.text import check_strings

FrozenKey: TypeAlias = tuple[tuple[str, Any], ...]

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_decoder = json.JSONDecoder()
MAX_DEPTH: Final = 200  # objects and arrays inside each other (fastjson's own limit is 2048)


def loads(text: str | bytes) -> Any:
    """Parse fastjson output; raises ValueError on anything malformed."""
    if isinstance(text, bytes):
        text = text.decode()
    value, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data at {end}")
    if "\\u" in text:  # only an escape can smuggle in a lone surrogate
        check_strings(value)
    return value


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _value(text: str, pos: int, depth: int) -> tuple[Any, int]:
    char = text[pos : pos + 1]
    if char == "{":
        return _object(text, pos + 1, depth + 1)
    if char == "[":
        return _array(text, pos + 1, depth + 1)
    try:
        return _decoder.raw_decode(text, pos)  # strings, numbers, true/false/null
    except json.JSONDecodeError as exc:
        raise ValueError(str(exc)) from exc


def _object(text: str, pos: int, depth: int) -> tuple[dict[Any, Any], int]:
    _check_depth(depth)  # here, not in _value: an object key can be an object too
    out: dict[Any, Any] = {}
    pos = _skip(text, pos)
    if text[pos : pos + 1] == "}":
        return out, pos + 1
    while True:
        key, pos = _key(text, pos, depth)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"expected ':' at {pos}")
        value, pos = _value(text, _skip(text, pos + 1), depth)
        out[key] = value
        pos = _skip(text, pos)
        sep = text[pos : pos + 1]
        if sep == "}":
            return out, pos + 1
        if sep != ",":
            raise ValueError(f"expected ',' or '}}' at {pos}")
        pos = _skip(text, pos + 1)


def _key(text: str, pos: int, depth: int) -> tuple[Any, int]:
    char = text[pos : pos + 1]
    if char == '"':
        return _decoder.raw_decode(text, pos)
    if char == "{":  # compat: fastjson writes object keys (MessageQueue) as objects
        obj, end = _object(text, pos + 1, depth + 1)
        return frozen_key(obj), end
    match = _NUMBER.match(text, pos)  # compat: bare Integer/Long keys
    if match is None:
        raise ValueError(f"expected a key at {pos}")
    return match.group(), match.end()


def _array(text: str, pos: int, depth: int) -> tuple[list[Any], int]:
    _check_depth(depth)
    out: list[Any] = []
    pos = _skip(text, pos)
    if text[pos : pos + 1] == "]":
        return out, pos + 1
    while True:
        value, pos = _value(text, pos, depth)
        out.append(value)
        pos = _skip(text, pos)
        sep = text[pos : pos + 1]
        if sep == "]":
            return out, pos + 1
        if sep != ",":
            raise ValueError(f"expected ',' or ']' at {pos}")
        pos = _skip(text, pos + 1)


def _check_depth(depth: int) -> None:
    """Refuse nesting deeper than MAX_DEPTH: the parser recurses once per level, and a
    compiled build would overflow the C stack (a crash, not an exception) on a 2 MB body of
    ``{``."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")


def frozen_key(obj: dict[str, Any]) -> FrozenKey:
    """A hashable form of an object used as a map key."""
    return tuple(sorted((str(k), v) for k, v in obj.items()))


def dumps_object_keyed(items: Iterable[tuple[dict[str, Any], Any]]) -> str:
    """``{{key object}:value, ...}`` as fastjson writes Map<MessageQueue, V> (keys sorted)."""

    def enc(obj: Any) -> str:
        return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    return "{" + ",".join(f"{enc(k)}:{enc(v)}" for k, v in items) + "}"
