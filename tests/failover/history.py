"""What a failover run observed, as plain records: every send's outcome, every consumer
offset committed, queried and delivered, the faults the nemesis injected, and what could be
read back after healing. The clients' process appends them to a JSON-lines file as they
happen; the checkers (checkers.py) read them back. Times are ``time.monotonic()`` seconds:
CLOCK_MONOTONIC is one clock for every process of the machine (the run makes no time
namespace), so the clients' times and the nemesis' compare directly."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# a send's outcome: acknowledged (SEND_OK: the promise under test), stored but not confirmed
# (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_DISK_TIMEOUT: no promise), refused by a
# broker (MQBrokerError after the SDK's tries), unknown (timed out or the connection broke:
# it may or may not be stored)
OK, UNCONFIRMED, FAILED, UNKNOWN = "ok", "unconfirmed", "failed", "unknown"


@dataclass(frozen=True, slots=True)
class Send:
    """One ``Producer.send`` from its call (``start``) to its answer (``end``); for a
    stored one the broker group (``broker``), queue, queue offset and the store host that
    wrote it (from the offsetMsgId: the broker that acknowledged)."""

    key: str
    start: float
    end: float
    outcome: str
    broker: str = ""
    queue: int = -1
    offset: int = -1
    host: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Commit:
    """An acknowledged-or-not UPDATE_CONSUMER_OFFSET: ``offset`` of (broker, queue) for the
    clients' consumer group, sent to ``host``; ``ok`` when the broker answered SUCCESS."""

    broker: str
    queue: int
    offset: int
    start: float
    end: float
    ok: bool
    host: str = ""


@dataclass(frozen=True, slots=True)
class Query:
    """A QUERY_CONSUMER_OFFSET as the SDK's consumer makes it (the master, else a slave):
    the offset it answered, or ``offset`` -1 and ``ok`` False when it failed."""

    broker: str
    queue: int
    offset: int
    start: float
    end: float
    ok: bool
    host: str = ""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One poll's messages of one queue: queue offsets ``first`` to ``last``, at ``t``."""

    broker: str
    queue: int
    first: int
    last: int
    t: float


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault the nemesis injected on broker group ``broker`` from ``start`` to ``end``
    (healed): ``kind`` (nemesis.KINDS), the master it hit (``host``, its address as the
    clients see it)."""

    kind: str
    broker: str
    host: str
    start: float
    end: float


@dataclass
class History:
    sends: list[Send] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    @property
    def acked(self) -> list[Send]:
        return [s for s in self.sends if s.outcome == OK]

    def counts(self) -> dict[str, int]:
        out = {OK: 0, UNCONFIRMED: 0, FAILED: 0, UNKNOWN: 0}
        for send in self.sends:
            out[send.outcome] = out.get(send.outcome, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class Stored:
    """One message read back after healing: broker group, queue, queue offset, key, and the
    broker it was read from."""

    broker: str
    queue: int
    offset: int
    key: str
    host: str


_TYPES: dict[str, type[Any]] = {
    "send": Send,
    "commit": Commit,
    "query": Query,
    "delivery": Delivery,
    "fault": Fault,
    "stored": Stored,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def encode(record: Any) -> str:
    return json.dumps({"type": _NAMES[type(record)], **dataclasses.asdict(record)})


def decode(line: str) -> Any:
    obj = json.loads(line)
    return _TYPES[obj.pop("type")](**obj)


class Recorder:
    """Appends records to a JSON-lines file, each line flushed as written (a reader sees it
    at once; a process killed midway leaves every whole line it wrote)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def __call__(self, record: Any) -> None:
        self._file.write(encode(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_records(path: Path) -> list[Any]:
    """Every whole line's record (a last line cut short by a kill is left out)."""
    out: list[Any] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(decode(line))
        except ValueError:
            continue
    return out


def history_of(records: Iterable[Any]) -> History:
    h = History()
    lists: dict[type[Any], list[Any]] = {
        Send: h.sends,
        Commit: h.commits,
        Query: h.queries,
        Delivery: h.deliveries,
        Fault: h.faults,
    }
    for record in records:
        target = lists.get(type(record))
        if target is not None:
            target.append(record)
    return h
