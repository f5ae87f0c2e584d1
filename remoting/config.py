"""Remoting configuration (ServerConfig, ClientConfig) and the loader every process uses.

Files are RocketMQ-style ``key=value`` lines with camelCase keys; objects are frozen dataclasses
with snake_case attributes (``metadata["key"]`` for irregular names such as ``brokerIP1``).
Precedence: defaults < ``-c`` file < ``--set key=value`` < dedicated flags (design.md 8).
"""

from __future__ import annotations

import dataclasses
import enum
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.frame import DEFAULT_MAX_FRAME

log = get_logger(__name__)
T = TypeVar("T")


Bounds = dict[str, tuple[int, int | None]]  # field -> (least, most or None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """NettyServerConfig's keys that apply to us, plus our flow-control limits."""

    BOUNDS: ClassVar[Bounds] = {
        "listen_port": (0, 65535),
        "server_channel_max_idle_time_seconds": (1, None),
        "frame_max_length": (1024, None),
        "server_connection_max_in_flight": (1, None),
        "server_write_stall_timeout_millis": (1, None),
        "server_output_buffer_max_bytes": (1 << 20, None),
        "server_partial_frame_max_bytes": (1 << 20, None),
    }

    listen_port: int = 8888
    bind_address: str = "0.0.0.0"
    server_channel_max_idle_time_seconds: int = 120
    frame_max_length: int = DEFAULT_MAX_FRAME
    server_connection_max_in_flight: int = 1024  # ours: reading pauses at this many requests
    server_write_stall_timeout_millis: int = 30_000  # ours: a peer that never reads is closed
    # ours: memory peers may make us hold, summed over connections; past either, the
    # connections holding most are closed (remoting.limits)
    server_output_buffer_max_bytes: int = 256 * 1024 * 1024  # responses not yet read
    server_partial_frame_max_bytes: int = 256 * 1024 * 1024  # frames begun, not finished


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    """NettyClientConfig's keys that apply to us, plus the header encoding we speak."""

    BOUNDS: ClassVar[Bounds] = {
        "reconnect_backoff_initial_millis": (0, None),
        "reconnect_backoff_max_millis": (0, None),
    }

    connect_timeout_millis: int = 3000
    client_async_semaphore_value: int = 65535  # requests in flight per address
    client_oneway_semaphore_value: int = 65535  # oneway requests being written, per address
    frame_max_length: int = DEFAULT_MAX_FRAME
    # msgpack between our own processes; JSON to talk to Apache servers
    serialize_type: SerializeType = field(default=SerializeType.MSGPACK)
    client_write_stall_timeout_millis: int = 30_000
    # ours (Java reconnects at once, every time): after a failed connect to an address, further
    # connects to it fail fast for this long, doubling per consecutive failure up to the max; a
    # successful connect resets it. 0 turns the backoff off.
    reconnect_backoff_initial_millis: int = 100
    reconnect_backoff_max_millis: int = 10_000


class Value(NamedTuple):
    """A configured value and where it came from, for error messages."""

    text: str
    where: str


def config_key(f: dataclasses.Field[Any]) -> str:
    """The file key of a config field: its metadata key, else its name in camelCase."""
    if "key" in f.metadata:
        return str(f.metadata["key"])
    head, *rest = f.name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def config_keys(cls: type) -> set[str]:
    return {config_key(f) for f in dataclasses.fields(cls)}


# Java Properties: the key ends at the first '=', ':' or whitespace
_LINE = re.compile(r"([^=:\s]+)\s*[=:]?\s*(.*)")


def parse_properties(text: str, source: str) -> dict[str, Value]:
    """Java-properties style: ``key=value``, ``key: value`` or ``key value``; # and ! comment."""
    values: dict[str, Value] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        match = _LINE.match(stripped)
        if match is None:
            raise ConfigError(f"{source}:{number}: expected key=value, got {stripped!r}")
        values[match.group(1)] = Value(match.group(2).strip(), f"{source}:{number}")
    return values


def parse_sets(items: Iterable[str]) -> dict[str, Value]:
    """``--set key=value`` overrides."""
    values = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set {item!r}: expected key=value")
        values[name.strip()] = Value(text.strip(), "--set")
    return values


def _coerce(hint: Any, value: Value, name: str) -> Any:
    text = value.text
    args = typing.get_args(hint)
    if type(None) in args:  # an optional key (``int | None``): empty is "not set"
        if not text:
            return None
        hint = next(arg for arg in args if arg is not type(None))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint[text]
        except KeyError:
            names = " or ".join(m.name for m in hint)
            raise ConfigError(f"{value.where}: {name}: expected {names}, got {text!r}") from None
    if hint is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"{value.where}: {name}: expected true or false, got {text!r}")
        return text.lower() == "true"
    try:
        return hint(text) if hint in (int, float) else text
    except ValueError:
        raise ConfigError(
            f"{value.where}: {name}: expected {hint.__name__}, got {text!r}"
        ) from None


def build(cls: type[T], values: Mapping[str, Value]) -> T:
    """An instance of the config dataclass ``cls`` from the values whose keys it knows.
    A class's ``BOUNDS`` (a ``Bounds`` class variable) are checked for every value given."""
    hints = typing.get_type_hints(cls)
    bounds: Bounds = getattr(cls, "BOUNDS", {})
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = config_key(f)
        if name in values:
            kwargs[f.name] = value = _coerce(hints[f.name], values[name], name)
            if f.name in bounds and value is not None:
                _check_bounds(value, bounds[f.name], values[name].where, name)
    return cls(**kwargs)


def _check_bounds(value: int, bound: tuple[int, int | None], where: str, name: str) -> None:
    least, most = bound
    if value < least or (most is not None and value > most):
        span = f"at least {least}" if most is None else f"between {least} and {most}"
        raise ConfigError(f"{where}: {name}: must be {span}, got {value}")


def load_values(path: str | None, sets: Iterable[str] = ()) -> dict[str, Value]:
    """The file's values overlaid with ``--set`` overrides."""
    values: dict[str, Value] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from exc
        values.update(parse_properties(text, path))
    values.update(parse_sets(sets))
    return values


def warn_unknown(values: Mapping[str, Value], classes: Iterable[type]) -> None:
    """Log each key no config object takes, once: real files carry extra keys."""
    known = set().union(*(config_keys(c) for c in classes))
    for name in sorted(set(values) - known):
        log.warning("config_key_unknown", key=name, where=values[name].where)


def _text(value: Any) -> str:
    if value is None:  # an optional key not set
        return ""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def config_values(*objects: Any) -> dict[str, str]:
    """The config objects' values as camelCase key -> text, as a config file gives them."""
    return {
        config_key(f): _text(getattr(obj, f.name))
        for obj in objects
        for f in dataclasses.fields(obj)
    }


def dump(*objects: Any) -> str:
    """The effective config as sorted camelCase ``key=value`` lines (what ``-p`` prints)."""
    return dump_values(config_values(*objects))


def dump_values(values: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in sorted(values.items()))


def update_properties(text: str, values: Mapping[str, str]) -> str:
    """The properties file ``text`` with each line of a key in ``values`` given its new value
    (every such line: the last one wins when a file is read) and the keys it lacks appended.
    Comments, blank lines, order and other keys stay as they are."""
    out, seen = [], set()
    for line in text.splitlines():
        stripped = line.strip()
        match = None if not stripped or stripped[0] in "#!" else _LINE.match(stripped)
        if match is not None and match.group(1) in values:
            key = match.group(1)
            out.append(f"{key}={values[key]}")
            seen.add(key)
        else:
            out.append(line)
    out += [f"{k}={v}" for k, v in values.items() if k not in seen]
    return "".join(f"{line}\n" for line in out)
