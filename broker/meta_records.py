"""Metadata records: a master's topic, subscription group and consumer offset changes as
CommitLog records, so they reach its slaves with the HA stream, in order with the messages
(issue 35 item 5; r#9804: 4.9.8 and 5.x copy them on the 10 s SlaveSynchronize timer only).

Each record is a message of the system topic ``rmq_sys_REPLICA_META``, queue 0, whose body is
JSON: ``{"table": "topics" | "groups", "change": <the table's journal line>}`` or
``{"table": "offsets", "set": {"topic@group": {queueId: offset}}, "reset": [keys]}``. The
record's queue offset numbers it; a master's answers to the tables' full copies (21, 43,
201) carry ``metaOffset``, the number of records written when the answer was made, so a
slave can tell which of the stream's records the copy already holds.

A 4.9.8 slave stores these records like any message (no client subscribes to the topic); a
4.9.8 master writes none and its answers carry no ``metaOffset``: its slaves keep the timer.
Pure codecs, no I/O.
"""

from __future__ import annotations

from typing import Any, Final

from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.route import dumps

META_TOPIC: Final = "rmq_sys_REPLICA_META"
META_QUEUE: Final = 0
META_OFFSET: Final = "metaOffset"  # the ext field of a master's answers to 21, 43 and 201
TOPICS: Final = "topics"
GROUPS: Final = "groups"
OFFSETS: Final = "offsets"


def table_record(table: str, change: dict[str, Any]) -> bytes:
    """A topic or group table's change (its journal line: put/delete and dataVersion)."""
    return dumps({"table": table, "change": change})


def offsets_record(changed: dict[str, dict[int, int]], reset: set[str]) -> bytes:
    """Offsets committed since the last record; ``reset``: keys removed (a group deleted with
    its offsets) before those commits."""
    return dumps(
        {
            "table": OFFSETS,
            "set": {k: {str(q): o for q, o in qs.items()} for k, qs in changed.items()},
            "reset": sorted(reset),
        }
    )


def decode(body: bytes) -> dict[str, Any]:
    """The record's object; ValueError if it is not one."""
    obj = fastjson.loads(body)
    if not isinstance(obj, dict) or obj.get("table") not in (TOPICS, GROUPS, OFFSETS):
        raise ValueError(f"not a metadata record: {body[:80]!r}")
    return obj


def offsets_of(record: dict[str, Any]) -> tuple[dict[str, dict[int, int]], list[str]]:
    """An offsets record's ``(set, reset)``."""
    changed = {
        str(key): {int(q): int(o) for q, o in queues.items()}
        for key, queues in (record.get("set") or {}).items()
    }
    return changed, [str(k) for k in record.get("reset") or []]
