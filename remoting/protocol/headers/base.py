"""The typed request/response header pattern: frozen dataclasses <-> extFields.

Subclass ``Header`` with ``@header`` (a frozen, slots, keyword-only dataclass). The wire key of
a field is its name, or ``metadata["key"]``; ``metadata["v2"]`` gives an alternative short key
used by ``from_ext(ext, v2=True)`` (SEND_MESSAGE_V2's one-letter keys). Field types may be
``str``, ``int``, ``bool`` or one of those ``| None``. A field without a default is required.

Headers are read and written on every request, so ``from_ext`` and ``to_ext`` run code written
out per class (as dataclasses writes ``__init__``): straight-line, numbers checked inline, and
the decoded header filled in without the frozen ``__init__``'s ``object.__setattr__`` per field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, NamedTuple, Self, TypeAlias, TypeVar, dataclass_transform

from aiorocketmq.remoting.errors import RemotingCommandError

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


class _Spec(NamedTuple):
    attr: str
    wire: str
    kind: str  # "str", "int" (Java long), "int32" (Java int) or "bool"
    required: bool
    default: Any


_KINDS: Final[dict[Any, str]] = {str: "str", int: "int", bool: "bool"}
_SPECS: dict[tuple[type, bool], tuple[_Spec, ...]] = {}


def _kind(hint: Any) -> str:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = (a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is Annotated and hint.__metadata__ == ("int32",):
        return "int32"
    if hint not in _KINDS:
        raise TypeError(f"header fields must be str, int, Int32 or bool (or Optional): {hint!r}")
    return _KINDS[hint]


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
            kind = _kind(hints[f.name])
            out.append(_Spec(f.name, wire, kind, required, None if required else f.default))
        cached = _SPECS[(cls, v2)] = tuple(out)
    return cached


def _missing(wire: str) -> RemotingCommandError:
    return RemotingCommandError(f"the custom field <{wire}> is null")


def _invalid(wire: str, text: object) -> RemotingCommandError:
    return RemotingCommandError(f"the custom field <{wire}> is invalid: {text!r}")


def _java_int(wire: str, text: str, int32: bool) -> int:
    """The slow path of a number field: Java's parseLong / parseInt, errors naming the field."""
    try:
        value = parse_int(text)
    except ValueError:
        raise _invalid(wire, text) from None
    if int32 and not -0x80000000 <= value <= 0x7FFFFFFF:
        raise _invalid(wire, str(value))
    return value


# The numbers headers mostly carry (queue ids, flags, counts), in their one canonical spelling:
# one dict lookup reads them. Anything else takes the ASCII-digits test or ``_java_int``.
_SMALL: Final[dict[str, int]] = {str(i): i for i in range(-1, 1024)}
# plain ASCII digits shorter than this are within range (10**9 < 2**31, 10**18 < 2**63)
_DIGITS: Final = {"int": 19, "int32": 10}


def _decode_field(i: int, spec: _Spec) -> list[str]:
    """The source lines reading field ``i`` of a decoder into ``v{i}``. A required field is
    read as ``ext[key]``: the decoder turns the KeyError into the field's "is null" error."""
    v, wire = f"v{i}", repr(spec.wire)
    if spec.kind == "str":
        if spec.required:
            return [f"{v} = ext[{wire}]"]
        if spec.default is not None:
            return [f"{v} = get({wire})", f"if {v} is None: {v} = d{i}"]
        return [f"{v} = get({wire})"]
    lines = [f"t = ext[{wire}]" if spec.required else f"t = get({wire})"]
    if spec.kind == "bool":  # Boolean.parseBoolean, without lower() for the usual spellings
        flag = "t == 'true' or t != 'false' and t.lower() == 'true'"
        lines.append(f"{v} = {flag}" if spec.required else f"{v} = d{i} if t is None else {flag}")
        return lines
    test = f"t.isdigit() and t.isascii() and len(t) < {_DIGITS[spec.kind]}"
    parse = [
        f"{v} = small(t)",
        f"if {v} is None: {v} = int(t) if {test} else _java_int({wire}, t, {spec.kind == 'int32'})",
    ]
    if spec.required:
        return lines + parse
    return [*lines, f"if t is None: {v} = d{i}", "else:", *("    " + line for line in parse)]


_TWINS: dict[type, type | None] = {}


def _twin(cls: type) -> type | None:
    """A mutable class with the layout of ``cls``: a decoder fills one in and then makes it a
    ``cls`` (``__class__`` assignment, allowed between classes of the same slots); the frozen
    ``__init__`` would call ``object.__setattr__`` once per field. None if ``cls`` is not a
    plain slots header."""
    if cls in _TWINS:
        return _TWINS[cls]
    slots = cls.__dict__.get("__slots__")
    twin: type | None = None
    if slots is not None and cls.__bases__ == (Header,):
        mutable = {"__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
        twin = type(f"_Mutable{cls.__name__}", (Header,), {"__slots__": tuple(slots), **mutable})
        try:
            probe: Any = object.__new__(twin)
            probe.__class__ = cls
        except TypeError:
            twin = None
    _TWINS[cls] = twin
    return twin


def _compile(cls: type, v2: bool) -> Callable[[Mapping[str, str]], Any]:
    """A decoder written out for ``cls``: a straight-line function costs a fraction of a loop
    over field specs."""
    specs = _specs(cls, v2)
    ns: dict[str, Any] = {"cls": cls, "_missing": _missing, "_java_int": _java_int}
    ns |= {"small": _SMALL.get, "new": object.__new__, "twin": _twin(cls)}
    body = ["get = ext.get", "try:"]
    for i, spec in enumerate(specs):
        ns[f"d{i}"] = spec.default
        body += ("    " + line for line in _decode_field(i, spec))
    body += ["except KeyError as missing:", "    raise _missing(missing.args[0]) from None"]
    if ns["twin"] is None:
        body.append(f"return cls({', '.join(f'{s.attr}=v{i}' for i, s in enumerate(specs))})")
    else:
        body += ["o = new(twin)", *(f"o.{s.attr} = v{i}" for i, s in enumerate(specs))]
        body += ["o.__class__ = cls", "return o"]
    exec("def decode(ext):\n    " + "\n    ".join(body), ns)  # names and keys of fields only
    decoder: Callable[[Mapping[str, str]], Any] = ns["decode"]
    return decoder


# a field's value as text: f"{x!s}" is str(x) without the call of the builtin
_TEXT: Final = {
    "str": "{v}",
    "bool": "'true' if {v} is True else 'false' if {v} is False else f'{{{v}!s}}'",
}


def _compile_encoder(cls: type, v2: bool) -> Callable[[Any], dict[str, str]]:
    """The inverse of ``_compile``: a straight-line ``to_ext`` for ``cls``, in field order."""
    specs = _specs(cls, v2)
    lead = next((i for i, s in enumerate(specs) if not s.required), len(specs))
    body, items = [], []
    for i, spec in enumerate(specs):  # a value read more than once goes to a local first
        value = f"h.{spec.attr}"
        if i >= lead or spec.kind == "bool":
            body.append(f"v{i} = {value}")
            value = f"v{i}"
        text = _TEXT.get(spec.kind, "f'{{{v}!s}}'").format(v=value)
        if i < lead:  # the leading required fields: one dict literal
            items.append(f"{spec.wire!r}: {text}")
            continue
        if i == lead:
            body.append(f"ext = {{{', '.join(items)}}}")
        store = f"ext[{spec.wire!r}] = {text}"
        body.append(store if spec.required else f"if {value} is not None: {store}")
    if lead == len(specs):
        body.append(f"ext = {{{', '.join(items)}}}")
    body.append("return ext")
    ns: dict[str, Any] = {}
    exec("def encode(h):\n    " + "\n    ".join(body), ns)  # names and keys of fields only
    encoder: Callable[[Any], dict[str, str]] = ns["encode"]
    return encoder


_DECODERS: dict[type, Callable[[Mapping[str, str]], Any]] = {}
_DECODERS_V2: dict[type, Callable[[Mapping[str, str]], Any]] = {}
_ENCODERS: dict[type, Callable[[Any], dict[str, str]]] = {}
_ENCODERS_V2: dict[type, Callable[[Any], dict[str, str]]] = {}


def _init_for(cls: type) -> Callable[..., None]:
    """The ``__init__`` of header class ``cls``, written out as dataclasses would write it:
    keyword-only, in field order, with the fields' defaults. It fills the fields through the
    mutable twin (see ``_twin``), where a frozen dataclass calls ``object.__setattr__`` once
    per field; an instance of a subclass that inherits it is filled field by field."""
    fields = dataclasses.fields(cls)
    ns: dict[str, Any] = {"cls": cls, "twin": _twin(cls), "sa": object.__setattr__}
    params, names = [], [f.name for f in fields]
    for i, f in enumerate(fields):
        if f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"header fields take no default_factory: {cls.__name__}.{f.name}")
        ns[f"d{i}"] = f.default
        params.append(f.name if f.default is dataclasses.MISSING else f"{f.name}=d{i}")
    slow = [f"sa(self, {n!r}, {n})" for n in names] or ["pass"]
    fast = ["sa(self, '__class__', twin)", *(f"self.{n} = {n}" for n in names)]
    body = ["if twin is None or type(self) is not cls:", *("    " + line for line in slow)]
    body += ["else:", *("    " + line for line in fast), "    self.__class__ = cls"]
    star = f"*, {', '.join(params)}" if params else ""
    exec(f"def __init__(self, {star}):\n    " + "\n    ".join(body), ns)  # field names only
    init: Callable[..., None] = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class _Signature:
    """``inspect.signature`` of a header class (hypothesis, ``help``) before its first
    instance has written its ``__init__``: keyword-only parameters as dataclasses gives them."""

    def __get__(self, obj: object, owner: type) -> Any:
        if obj is not None:
            raise AttributeError("__signature__")
        import inspect  # only for introspection: the SDK's import does not need it

        hints = typing.get_type_hints(owner)
        kw = inspect.Parameter.KEYWORD_ONLY
        return inspect.Signature(
            [
                inspect.Parameter(
                    f.name,
                    kw,
                    default=inspect.Parameter.empty
                    if f.default is dataclasses.MISSING
                    else f.default,
                    annotation=hints.get(f.name, inspect.Parameter.empty),
                )
                for f in dataclasses.fields(owner)
            ],
            return_annotation=None,
        )


_H = TypeVar("_H", bound="Header")
_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass_transform(
    frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,)
)
def header(cls: type[_H]) -> type[_H]:
    """``@dataclass(frozen=True, slots=True, kw_only=True)`` without the code dataclasses
    writes and compiles per class: ``Header`` gives the one ``__eq__``, ``__hash__``,
    ``__repr__``, the frozen ``__setattr__``/``__delattr__``, and an ``__init__`` written out
    for a class at its first instance. An SDK import creates some 40 header classes; the
    generated functions cost 0.3-0.4 ms each class, most of the SDK's import (issue 30)."""
    return dataclasses.dataclass(slots=True, kw_only=True, init=False, eq=False, repr=False)(cls)


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


class Header:
    """Mixin for typed headers; subclasses are ``@header`` classes (frozen slots dataclasses),
    equal and hashed by their fields as a dataclass is, shown as a dataclass is."""

    __slots__ = ()
    __signature__ = _Signature()

    def __init__(self, **values: Any) -> None:
        """Writes this class's own ``__init__`` (``_init_for``), installs it and calls it."""
        cls = type(self)
        init = _init_for(cls)
        cls.__init__ = init  # type: ignore[method-assign]
        init(self, **values)

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in _names(type(self)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Header)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(type(self)))
        return f"{type(self).__qualname__}({fields})"

    @classmethod
    def from_ext(cls, ext: Mapping[str, str], *, v2: bool = False) -> Self:
        """Decode from extFields; unknown keys are ignored (5.x clients add bname, ns, ...).

        Raises ``RemotingCommandError`` naming a missing required field or an unparsable value.
        """
        decoders = _DECODERS_V2 if v2 else _DECODERS
        decoder = decoders.get(cls)
        if decoder is None:
            decoder = decoders[cls] = _compile(cls, v2)
        header: Self = decoder(ext)
        return header

    def to_ext(self, *, v2: bool = False) -> dict[str, str]:
        """Encode to extFields: every value as text, ``None`` fields left out."""
        encoders = _ENCODERS_V2 if v2 else _ENCODERS
        encoder = encoders.get(type(self))
        if encoder is None:
            encoder = encoders[type(self)] = _compile_encoder(type(self), v2)
        return encoder(self)
