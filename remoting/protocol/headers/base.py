"""The typed request/response header pattern: frozen dataclasses <-> extFields.

Subclass ``Header`` with ``@dataclass(frozen=True, slots=True, kw_only=True)``. The wire key of
a field is its name, or ``metadata["key"]``; ``metadata["v2"]`` gives an alternative short key
used by ``from_ext(ext, v2=True)`` (SEND_MESSAGE_V2's one-letter keys). Field types may be
``str``, ``int``, ``bool`` or one of those ``| None``. A field without a default is required.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Self

from remoting.errors import RemotingCommandError


def wire(name: str, *, v2: str | None = None) -> dict[str, str]:
    """Field metadata naming the wire key (and the V2 short key, if any)."""
    return {"key": name, "v2": v2} if v2 else {"key": name}


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def parse_int(text: str) -> int:
    """Java's Long.parseLong: optional sign and digits only, within int64 (no spaces, no _)."""
    if not _JAVA_INT.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    value = int(text)
    if value not in _INT64:
        raise ValueError(f"out of range: {text!r}")
    return value


def parse_bool(text: str) -> bool:
    # compat: Java's Boolean.parseBoolean -- "true" in any case is true, anything else false
    return text.lower() == "true"


def bool_text(value: bool) -> str:
    return "true" if value else "false"


class _Spec(NamedTuple):
    attr: str
    wire: str
    parse: Callable[[str], Any]
    required: bool


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: parse_int, bool: parse_bool}
_SPECS: dict[tuple[type, bool], tuple[_Spec, ...]] = {}


def _base_type(hint: Any) -> type:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = (a for a in typing.get_args(hint) if a is not type(None))
    if hint not in _PARSERS:
        raise TypeError(f"header fields must be str, int or bool (or Optional): {hint!r}")
    return typing.cast(type, hint)


def _specs(cls: type, v2: bool) -> tuple[_Spec, ...]:
    cached = _SPECS.get((cls, v2))
    if cached is None:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            wire = f.metadata.get("key", f.name)
            if v2:
                wire = f.metadata.get("v2", wire)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            out.append(_Spec(f.name, wire, _PARSERS[_base_type(hints[f.name])], required))
        cached = _SPECS[(cls, v2)] = tuple(out)
    return cached


def _text(value: object) -> str:
    return bool_text(value) if isinstance(value, bool) else str(value)


class Header:
    """Mixin for typed headers; subclasses are frozen slots dataclasses."""

    __slots__ = ()

    @classmethod
    def from_ext(cls, ext: Mapping[str, str], *, v2: bool = False) -> Self:
        """Decode from extFields; unknown keys are ignored (5.x clients add bname, ns, ...).

        Raises ``RemotingCommandError`` naming a missing required field or an unparsable value.
        """
        kwargs: dict[str, Any] = {}
        for spec in _specs(cls, v2):
            text = ext.get(spec.wire)
            if text is None:
                if spec.required:
                    raise RemotingCommandError(f"the custom field <{spec.wire}> is null")
                continue
            try:
                kwargs[spec.attr] = spec.parse(text)
            except ValueError as exc:
                raise RemotingCommandError(
                    f"the custom field <{spec.wire}> is invalid: {text!r}"
                ) from exc
        return cls(**kwargs)

    def to_ext(self, *, v2: bool = False) -> dict[str, str]:
        """Encode to extFields: every value as text, ``None`` fields left out."""
        ext = {}
        for spec in _specs(type(self), v2):
            value = getattr(self, spec.attr)
            if value is not None:
                ext[spec.wire] = _text(value)
        return ext
