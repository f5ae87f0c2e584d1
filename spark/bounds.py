"""Where a query starts and a batch ends, per queue, from the options (driver side; issue 16
item 3, issue 34 item 2; spark-connector.md §8.2).

Precedence as in Kafka (KafkaSourceProvider): ``startingTimestamp`` wins over
``startingOffsetsByTimestamp``, which wins over ``startingOffsets``; the ending ones alike.
Unlike Kafka, which wants every partition named, queues a ``...ByTimestamp`` JSON does not
name keep ``startingOffsets`` / ``endingOffsets``. A start by time where no message is stored
at or after the time fails (``startingOffsetsByTimestampStrategy=error``, Kafka's default) or
starts at the latest offset (``latest``); an end by time with no match is the latest offset,
as Kafka's. Bounds from pushed ``storeTimestamp`` filters (spark/pushdown.py) only narrow.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiorocketmq.client import MessageQueue
from aiorocketmq.spark import cluster
from aiorocketmq.spark.offsets import Offsets, canonical
from aiorocketmq.spark.options import ReadOptions


class NoOffsetForTimestampError(ValueError):
    """startingOffsetsByTimestampStrategy=error and a queue has nothing at or after the time."""


def starting(
    opts: ReadOptions, mqs: list[MessageQueue], *, streaming: bool, not_before_ms: int | None = None
) -> Offsets:
    """Each queue's first offset to read; ``not_before_ms`` (a pushed filter) moves a start
    up to the first message stored at or after that time."""
    times = _times(mqs, opts.starting_timestamp, opts.starting_offsets_by_timestamp)
    rest = [mq for mq in mqs if mq not in times]
    out = _flat(_by_spec(opts, opts.starting_offsets, rest, default_latest=streaming))
    for mq, found in cluster.offsets_at(opts, times).items() if times else ():
        if not found.matched and opts.starting_timestamp_strategy == "error":
            raise NoOffsetForTimestampError(
                f"no message of {mq.topic}/{mq.broker_name}/{mq.queue_id} is stored at or "
                f"after {times[mq]} (startingTimestamp / startingOffsetsByTimestamp); set "
                "startingOffsetsByTimestampStrategy=latest to start such queues at their latest "
                "offset"
            )
        out[mq] = found.offset
    if not_before_ms is not None and mqs:
        floor = cluster.offsets_at(opts, dict.fromkeys(mqs, not_before_ms))
        out = {mq: max(off, floor[mq].offset) for mq, off in out.items()}
    return _table(out)


def ending(opts: ReadOptions, mqs: list[MessageQueue], *, before_ms: int | None = None) -> Offsets:
    """Each queue's end (exclusive) for a batch; ``before_ms`` (a pushed filter) moves an end
    down to the first message stored at or after that time."""
    times = _times(mqs, opts.ending_timestamp, opts.ending_offsets_by_timestamp)
    rest = [mq for mq in mqs if mq not in times]
    out = _flat(_by_spec(opts, opts.ending_offsets, rest, default_latest=True))
    for mq, found in cluster.offsets_at(opts, times).items() if times else ():
        out[mq] = found.offset  # no match: the max offset, as Kafka's "falls back to latest"
    if before_ms is not None and mqs:
        ceiling = cluster.offsets_at(opts, dict.fromkeys(mqs, before_ms))
        out = {mq: min(off, ceiling[mq].offset) for mq, off in out.items()}
    return _table(out)


def _times(
    mqs: Iterable[MessageQueue], every: int | None, per_queue: Offsets | None
) -> dict[MessageQueue, int]:
    """The time each queue starts (or ends) at: ``every`` for all, else the JSON's."""
    if every is not None:
        return dict.fromkeys(mqs, every)
    if per_queue is None:
        return {}
    out = {}
    for mq in mqs:
        ms = per_queue.get(mq.topic, {}).get(mq.broker_name, {}).get(str(mq.queue_id))
        if ms is not None:
            out[mq] = ms
    return out


def _by_spec(
    opts: ReadOptions, spec: str | Offsets, mqs: list[MessageQueue], *, default_latest: bool
) -> Offsets:
    """``earliest`` is each queue's min offset, ``latest`` its max; JSON gives offsets, -2 /
    -1 for earliest / latest and queues it does not name at the default."""
    if not mqs:
        return {}
    low = cluster.min_offsets(opts, mqs) if spec != "latest" else {}
    high = cluster.max_offsets(opts, mqs) if spec != "earliest" or default_latest else {}
    if spec == "earliest":
        return low
    if spec == "latest":
        return high
    assert isinstance(spec, dict)
    out: Offsets = {}
    for mq in mqs:
        qid = str(mq.queue_id)
        given = spec.get(mq.topic, {}).get(mq.broker_name, {}).get(qid)
        if given is None:
            given = -1 if default_latest else -2
        table = low if given == -2 else high if given == -1 else None
        value = table[mq.topic][mq.broker_name][qid] if table is not None else given
        out.setdefault(mq.topic, {}).setdefault(mq.broker_name, {})[qid] = value
    return canonical(out)


def _flat(table: Offsets) -> dict[MessageQueue, int]:
    return {
        MessageQueue(t, b, int(q)): off
        for t, bs in table.items()
        for b, qs in bs.items()
        for q, off in qs.items()
    }


def _table(offsets: dict[MessageQueue, int]) -> Offsets:
    out: Offsets = {}
    for mq, off in offsets.items():
        out.setdefault(mq.topic, {}).setdefault(mq.broker_name, {})[str(mq.queue_id)] = off
    return canonical(out)
