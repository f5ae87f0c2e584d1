"""The fuzzer's values: boundary numbers, odd strings, and typed headers filled and mutated.

A header is built from its class in remoting.protocol.headers: every field gets a sensible
value for its name (a topic the fuzzer made, a group, a queue id, an offset it was told),
then a few fields are mutated -- a boundary number, a malformed number, an odd string, a
field left out -- and unknown keys may be added. Every choice comes from the ``Random``
passed in, so a case's seed replays it exactly.
"""

from __future__ import annotations

import dataclasses
import random
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

# Java int and long limits and the usual suspects around them
INT32: Final = range(-(2**31), 2**31)
INT64: Final = range(-(2**63), 2**63)
NUMBERS: Final = (
    0, 1, -1, 2, 3, 7, 8, 15, 16, 17, 18, 19, 31, 32, 64, 255, 256, 1023, 1024, 4096, 65535,
    65536, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**40, 2**53, 2**62, 2**63 - 1,
    2**63, -(2**63), -(2**63) - 1, 10**20,
)  # fmt: skip
MALFORMED_NUMBERS: Final = (
    "", " ", "abc", "1e3", "0x10", "+5", "-", "--1", " 5", "5 ", "1.5", "\u0661\u0662", "NaN",
    "9" * 40, "1_000", "٣",
)  # fmt: skip
LONG = "a" * 300
STRINGS: Final = (
    "", " ", LONG, "a" * 255, "a" * 256, "a" * 248, "b" * 127, "c" * 128, "/", "..", "../x",
    "a/b", "%RETRY%", "%RETRY%fuzz_g", "%DLQ%fuzz_g", "%RETRY%%RETRY%x", "%DLQ%",
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TBW102",
    "DefaultCluster",
    "BenchmarkTest", "OFFSET_MOVED_EVENT", "rmq_sys_x", "\u00fc", "\u4e3b\u9898", "\U0001f600",
    "\x00", "a\nb", "Nl\n", "a b", "*", "||", "${jndi:ldap://x/y}", "'", '"', "\\", "%", ";",
    "=", "a=b", "\u202e", "\ufeff", "\x01\x02", "\ud800", "a\ud800b",
)  # fmt: skip
RARE_STRINGS: Final = ("x" * 65536, "y" * 1_000_000)
BOOLS: Final = ("true", "false", "TRUE", "True", "yes", "1", "0", "", "null", "\ud800")

# names the fuzzer creates and plays with (the judges' own names never appear here)
TOPICS: Final = ("FuzzT", "FuzzT2", "FuzzOrder", "%RETRY%fuzz_g", "%DLQ%fuzz_g", "TBW102")
GROUPS: Final = ("fuzz_g", "fuzz_g2", "fuzz_cg", "CID_fuzz")
PRODUCER_GROUPS: Final = ("fuzz_pg", "fuzz_pg2")
CLIENTS: Final = ("127.0.0.1@fuzz#1", "fuzz-client-2", "")


@dataclass(frozen=True)
class Spec:
    wire: str
    kind: str  # str, int (Java long), int32 (Java int), bool
    required: bool


def specs(cls: type, v2: bool = False) -> tuple[Spec, ...]:
    """The wire fields of a header class (as remoting.protocol.headers.base reads them)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        wire = f.metadata.get("key", f.name)
        if v2:
            wire = f.metadata.get("v2", wire)
        hint = hints[f.name]
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            (hint,) = (a for a in typing.get_args(hint) if a is not type(None))
        if typing.get_origin(hint) is Annotated:
            kind = "int32"
        else:
            kind = {str: "str", int: "int", bool: "bool"}[hint]
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(Spec(wire, kind, required))
    return tuple(out)


@dataclass
class World:
    """What the fuzzer knows of the broker: filled in from the answers it gets."""

    offsets: list[int] = field(default_factory=list)  # commitlog offsets of stored messages
    msg_ids: list[str] = field(default_factory=list)  # offsetMsgIds of stored messages
    groups: list[str] = field(default_factory=lambda: list(GROUPS))
    topics: list[str] = field(default_factory=lambda: list(TOPICS))
    scratch: str = "/nonexistent"  # a directory of the run's own, for paths a request names

    def remember(self, items: list[Any], value: Any, keep: int = 64) -> None:
        if value not in items:
            items.append(value)
            del items[:-keep]


def odd_string(rng: random.Random) -> str:
    return rng.choice(RARE_STRINGS) if rng.random() < 0.01 else rng.choice(STRINGS)


def odd_number(rng: random.Random) -> str:
    return rng.choice(MALFORMED_NUMBERS) if rng.random() < 0.25 else str(rng.choice(NUMBERS))


def mutant(kind: str, rng: random.Random) -> str:
    """A hostile value for a field of ``kind`` (now and then one of another kind)."""
    roll = rng.random()
    if roll < 0.1:
        return odd_string(rng)
    if kind in ("int", "int32"):
        return odd_number(rng)
    if kind == "bool":
        return rng.choice(BOOLS)
    return odd_string(rng) if roll < 0.85 else str(rng.choice(NUMBERS))


def sane(wire: str, kind: str, world: World, rng: random.Random) -> str:
    """A plausible value for a field, chosen by its name."""
    w = wire.lower()
    if w in ("topic", "b", "originTopic".lower()):
        return rng.choice(world.topics)
    if w in ("consumergroup", "group", "groupname"):
        return rng.choice(world.groups)
    if w in ("producergroup", "a"):
        return rng.choice(PRODUCER_GROUPS)
    if w in ("defaulttopic", "c"):
        return "TBW102"
    if w in ("clientid", "clientaddr"):
        return rng.choice(CLIENTS)
    if w in ("msgid", "originmsgid", "offsetmsgid"):
        return rng.choice(world.msg_ids) if world.msg_ids else "0" * 32
    if w in ("offset", "commitlogoffset", "tranStateTableOffset".lower()):
        return str(rng.choice(world.offsets)) if world.offsets else "0"
    if w in ("queueid", "e"):
        return str(rng.randrange(8))
    if w in ("delaylevel",):
        return str(rng.randrange(0, 4))
    if w in ("maxmsgnums", "maxnum"):
        return "32"
    if w in ("readqueuenums", "writequeuenums", "defaulttopicqueuenums", "d"):
        return str(rng.choice((1, 4, 8)))
    if w == "perm":
        return "6"
    if w in ("borntimestamp", "g", "timestamp", "endtimestamp"):
        return "1700000000000"
    if w in ("subscription",):
        return "*"
    if w in ("properties", "i"):
        return "KEYS\x01k1\x02TAGS\x01t\x02"
    if w in ("statsname",):
        return rng.choice(("TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE", "GROUP_GET_NUMS", "GROUP_GET_SIZE"))
    if w == "commitorrollback":
        return rng.choice(("0", "8", "12"))
    if w == "brokername":
        return rng.choice(("FuzzB", "FuzzB2"))
    if w in ("brokeraddr", "haserveraddr"):
        return rng.choice(("127.0.0.1:1", "127.0.0.1:2"))
    if w in ("clustername", "cluster"):
        return rng.choice(("DefaultCluster", "FuzzCluster"))
    if w == "brokerid":
        return rng.choice(("0", "1"))
    if w == "namespace":
        return rng.choice(("ORDER_TOPIC_CONFIG", "fuzz_ns"))
    if w == "key":
        return rng.choice(("FuzzT", "k"))
    if kind == "bool":
        return rng.choice(("true", "false"))
    if kind in ("int", "int32"):
        return "0"
    return rng.choice(("fuzz", "k1", "x"))


def header(
    cls: type | None, world: World, rng: random.Random, *, v2: bool = False
) -> tuple[dict[str, str], list[str]]:
    """(ext fields, what was mutated): sane values, then 0-3 hostile ones, maybe a field left
    out or unknown keys added. ``cls`` None: a few random keys."""
    fields = specs(cls, v2) if cls is not None else ()
    ext = {
        s.wire: sane(s.wire, s.kind, world, rng) for s in fields if s.required or rng.random() < 0.5
    }
    notes: list[str] = []
    count = rng.choices((0, 1, 2, 3), (15, 50, 20, 15))[0]
    for s in rng.sample(fields, min(count, len(fields))):
        ext[s.wire] = mutant(s.kind, rng)
        notes.append(s.wire)
    if fields and rng.random() < 0.05:
        gone = rng.choice(fields).wire
        ext.pop(gone, None)
        notes.append(f"-{gone}")
    if cls is None or rng.random() < 0.08:
        for _ in range(rng.randrange(1, 4)):
            key = rng.choice(("bname", "ns", "nsd", "lo", odd_string(rng) or "k", "topic", "group"))
            ext[key] = odd_string(rng)
            notes.append(f"+{key[:20]}")
    return ext, notes


def json_number(rng: random.Random, sane_value: int) -> object:
    """A JSON body number: usually ``sane_value``, else a boundary, a float, text or null."""
    roll = rng.random()
    if roll < 0.55:
        return sane_value
    if roll < 0.85:
        return rng.choice(NUMBERS)
    return rng.choice((1.5, -0.0, 1e300, "12", "x", None, True, [], {}, 2**70))


def json_text(rng: random.Random, sane_value: str) -> object:
    roll = rng.random()
    if roll < 0.6:
        return sane_value
    if roll < 0.95:
        return odd_string(rng)
    return rng.choice((None, 5, [], {}, True))


_GROUP_CHARS = re.compile(r"[%|a-zA-Z0-9_-]+")


def bad_group_name(name: object) -> str | None:
    """Why Apache's Validators.checkGroup (the brokers' rule, remoting.protocol.bounds)
    refuses ``name`` as a group, or None. A %RETRY% or %DLQ% prefix is Apache's charset."""
    if not isinstance(name, str) or not name.strip():
        return "blank group name"
    if not _GROUP_CHARS.fullmatch(name):
        return "group name with characters outside ^[%|a-zA-Z0-9_-]+$"
    if len(name) > 255:
        return "group name longer than 255"
    return None


def unretriable_group(name: object) -> str | None:
    """Why a send-back for ``name`` must be refused: an invalid group, or one whose %RETRY%
    topic would pass the topic limit of 127 (the store's record holds no longer name)."""
    why = bad_group_name(name)
    if why is None and isinstance(name, str) and len("%RETRY%" + name) > 127:
        why = "group name longer than 120 (its %RETRY% topic over 127)"
    return why


SYSTEM_TOPICS: Final = frozenset({
    "TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
})  # fmt: skip
NOT_ALLOWED_SEND: Final = frozenset({
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
})  # fmt: skip


def bad_topic_name(name: object) -> str | None:
    """Why Apache's TopicValidator refuses ``name``, or None."""
    if not isinstance(name, str) or not name.strip():
        return "blank topic name"
    if not _GROUP_CHARS.fullmatch(name):
        return "topic name with characters outside ^[%|a-zA-Z0-9_-]+$"
    if len(name) > 127:
        return "topic name longer than 127"
    return None


def out_of_range(value: object, java: range) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value not in java
