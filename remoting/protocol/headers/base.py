"""The typed request/response header pattern: frozen dataclasses <-> extFields.

Subclass ``Header`` with ``@dataclass(frozen=True, slots=True, kw_only=True)``. The wire key of
a field is its name, or ``metadata["key"]``; ``metadata["v2"]`` gives an alternative short key
used by ``from_ext(ext, v2=True)`` (SEND_MESSAGE_V2's one-letter keys). Field types may be
``str``, ``int``, ``bool`` or one of those ``| None``. A field without a default is required.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NamedTuple, Self, TypeAlias

from remoting.errors import RemotingCommandError

# Java's Integer header fields (queueId, sysFlag, flag, ...): an int to mypy, range-checked
Int32: TypeAlias = Annotated[int, "int32"]


def wire(name: str, *, v2: str | None = None) -> dict[str, str]:
    """Field metadata naming the wire key (and the V2 short key, if any)."""
    return {"key": name, "v2": v2} if v2 else {"key": name}


def parse_int(text: str) -> int:
    """Java's Long.parseLong: optional sign and ASCII digits only, within int64."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"not a number: {text!r}")
    value = int(text)
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"out of range: {text!r}")
    return value


def parse_int32(text: str) -> int:
    """Java's Integer.parseInt: as ``parse_int``, within int32."""
    value = parse_int(text)
    if not -0x80000000 <= value <= 0x7FFFFFFF:
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
    default: Any


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: parse_int, bool: parse_bool}
_SPECS: dict[tuple[type, bool], tuple[_Spec, ...]] = {}


def _parser(hint: Any) -> Callable[[str], Any]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = (a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is Annotated and hint.__metadata__ == ("int32",):
        return parse_int32
    if hint not in _PARSERS:
        raise TypeError(f"header fields must be str, int, Int32 or bool (or Optional): {hint!r}")
    return _PARSERS[hint]


def _specs(cls: type, v2: bool) -> tuple[_Spec, ...]:
    cached = _SPECS.get((cls, v2))
    if cached is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        out = []
        for f in dataclasses.fields(cls):
            wire = f.metadata.get("key", f.name)
            if v2:
                wire = f.metadata.get("v2", wire)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            parse = _parser(hints[f.name])
            out.append(_Spec(f.name, wire, parse, required, None if required else f.default))
        cached = _SPECS[(cls, v2)] = tuple(out)
    return cached


def _text(value: object) -> str:
    return bool_text(value) if isinstance(value, bool) else str(value)


def _missing(wire: str) -> RemotingCommandError:
    return RemotingCommandError(f"the custom field <{wire}> is null")


def _invalid(wire: str, text: object) -> RemotingCommandError:
    return RemotingCommandError(f"the custom field <{wire}> is invalid: {text!r}")


_DECODERS: dict[tuple[type, bool], Callable[[Mapping[str, str]], Any]] = {}


def _compile(cls: type, v2: bool) -> Callable[[Mapping[str, str]], Any]:
    """A decoder written out for ``cls``: headers are parsed on every request, and a
    straight-line function costs a fraction of a loop over field specs (dataclasses generates
    its ``__init__`` the same way)."""
    ns: dict[str, Any] = {"cls": cls, "_missing": _missing, "_invalid": _invalid}
    body = ["def decode(ext):", "    get = ext.get"]
    for i, spec in enumerate(_specs(cls, v2)):
        v, wire = f"v{i}", repr(spec.wire)
        body.append(f"    {v} = get({wire})")
        if spec.required:
            body.append(f"    if {v} is None: raise _missing({wire})")
        if spec.parse is not str:
            int32 = spec.parse is parse_int32  # checked inline: no second call per field
            ns[f"p{i}"] = parse_int if int32 else spec.parse
            guard = "" if spec.required else f"if {v} is not None: "
            body.append(f"    try:\n        {guard}{v} = p{i}({v})")
            body.append(f"    except ValueError: raise _invalid({wire}, {v}) from None")
            if int32:
                test = f"not -0x80000000 <= {v} <= 0x7FFFFFFF"
                test = test if spec.required else f"{v} is not None and {test}"
                body.append(f"    if {test}: raise _invalid({wire}, str({v}))")
        if not spec.required:
            ns[f"d{i}"] = spec.default
            body.append(f"    if {v} is None: {v} = d{i}")
    fields = ", ".join(f"{s.attr}=v{i}" for i, s in enumerate(_specs(cls, v2)))
    body.append(f"    return cls({fields})")
    exec("\n".join(body), ns)  # the source holds only dataclass field names and wire keys
    decoder: Callable[[Mapping[str, str]], Any] = ns["decode"]
    return decoder


_ENCODERS: dict[tuple[type, bool], Callable[[Any], dict[str, str]]] = {}


def _compile_encoder(cls: type, v2: bool) -> Callable[[Any], dict[str, str]]:
    """The inverse of ``_compile``: a straight-line ``to_ext`` for ``cls``."""
    body = ["def encode(h):", "    ext = {}"]
    for spec in _specs(cls, v2):
        value, wire = f"h.{spec.attr}", repr(spec.wire)
        text = {str: value, parse_int: f"str({value})", parse_int32: f"str({value})"}.get(
            spec.parse, f"_text({value})"
        )
        if spec.required:
            body.append(f"    ext[{wire}] = {text}")
        else:
            body.append(f"    if {value} is not None: ext[{wire}] = {text}")
    body.append("    return ext")
    ns: dict[str, Any] = {"_text": _text}
    exec("\n".join(body), ns)  # the source holds only dataclass field names and wire keys
    encoder: Callable[[Any], dict[str, str]] = ns["encode"]
    return encoder


class Header:
    """Mixin for typed headers; subclasses are frozen slots dataclasses."""

    __slots__ = ()

    @classmethod
    def from_ext(cls, ext: Mapping[str, str], *, v2: bool = False) -> Self:
        """Decode from extFields; unknown keys are ignored (5.x clients add bname, ns, ...).

        Raises ``RemotingCommandError`` naming a missing required field or an unparsable value.
        """
        decoder = _DECODERS.get((cls, v2))
        if decoder is None:
            decoder = _DECODERS[(cls, v2)] = _compile(cls, v2)
        header: Self = decoder(ext)
        return header

    def to_ext(self, *, v2: bool = False) -> dict[str, str]:
        """Encode to extFields: every value as text, ``None`` fields left out."""
        encoder = _ENCODERS.get((type(self), v2))
        if encoder is None:
            encoder = _ENCODERS[(type(self), v2)] = _compile_encoder(type(self), v2)
        return encoder(self)
