"""Stream offsets and queue ranges, with no I/O (spark-connector.md §5, issue 16 item 4).

An offset is ``{topic: {brokerName: {queueId: next}}}``: for each queue the offset of the next
message to read, so a range ``[start, end)`` excludes ``end``. JSON keys are strings, queueIds
too. Spark compares offsets as the JSON text it stores, unsorted, so every dict handed to Spark
must come out of ``canonical``: sorted at every level, queueIds numerically.

``limit_rows`` is the admission control of ``maxOffsetsPerTrigger`` (Kafka's
``KafkaMicroBatchStream.rateLimit``), ``ranges`` the planning of input partitions
(``KafkaOffsetRangeCalculator``). Both are pure functions of their arguments, so a replayed batch
plans exactly the same ranges (§5 rule 2). A queue in the newer offsets but not in the older is
new and starts at 0, not at a looked-up minimum, to stay pure (§5 rule 6); data aged out below
the queue's minimum is the reader's ``failOnDataLoss`` case.
"""

from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pyspark.sql.datasource import InputPartition

Offsets = dict[str, dict[str, dict[str, int]]]

EARLIEST = -2  # in startingOffsets / endingOffsets JSON, as in Kafka
LATEST = -1

_QUEUE_ID = re.compile(r"0|[1-9][0-9]*")  # the decimal spelling str(int) gives back
_SHAPE = "{topic: {brokerName: {queueId: offset}}}"


def canonical(o: Offsets) -> Offsets:
    """``o`` sorted at every level: topics and brokers as strings, queueIds as numbers. Only
    the order changes (an empty inner map stays), so equal offsets give equal JSON text."""
    return {
        topic: {
            broker: {q: queues[q] for q in sorted(queues, key=int)}
            for broker, queues in sorted(brokers.items())
        }
        for topic, brokers in sorted(o.items())
    }


def to_json(o: Offsets) -> str:
    """The canonical JSON text of ``o`` (``json.dumps`` spacing, as Spark writes offsets)."""
    return json.dumps(canonical(o))


def from_json(text: str | dict[str, Any]) -> Offsets:
    """Offsets from their JSON text or from the dict Spark hands back, checked and made
    canonical; ValueError naming the bad part when the shape or an offset is wrong."""
    return parse_offsets(text, what="offsets", specials=())


def parse_offsets(text: str | dict[str, Any], *, what: str, specials: tuple[int, ...]) -> Offsets:
    """Like ``from_json``; ``what`` names the source in errors and ``specials`` lists the
    negative offsets allowed besides offsets >= 0 (EARLIEST, LATEST in options)."""
    obj: Any = text
    if isinstance(text, str):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{what} is not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{what} must be a JSON object {_SHAPE}, got {text!r}")
    out: Offsets = {}
    for topic, brokers in obj.items():
        if not isinstance(brokers, dict) or not topic:
            raise ValueError(f"{what}: topic {topic!r} must map to {{brokerName: {{...}}}}")
        out[topic] = {}
        for broker, queues in brokers.items():
            if not isinstance(queues, dict) or not broker:
                raise ValueError(f"{what}: {topic}/{broker!r} must map to {{queueId: offset}}")
            out[topic][broker] = {
                q: _offset(what, f"{topic}/{broker}/{q}", q, v, specials) for q, v in queues.items()
            }
    return canonical(out)


def _offset(what: str, where: str, queue_id: object, v: object, specials: tuple[int, ...]) -> int:
    if not isinstance(queue_id, str) or not _QUEUE_ID.fullmatch(queue_id):
        raise ValueError(f"{what}: queueId {queue_id!r} in {where} must be a decimal number")
    if not isinstance(v, int) or isinstance(v, bool) or (v < 0 and v not in specials):
        allowed = "an offset >= 0" + "".join(f" or {s}" for s in specials)
        raise ValueError(f"{what}: {where} must be {allowed}, got {v!r}")
    return v


def _queues(o: Offsets) -> list[tuple[str, str, str, int]]:
    """(topic, broker, queueId, offset) in canonical order."""
    return [
        (t, b, q, n)
        for t, bs in canonical(o).items()
        for b, qs in bs.items()
        for q, n in qs.items()
    ]


def _start_of(start: Offsets, topic: str, broker: str, queue_id: str) -> int:
    return start.get(topic, {}).get(broker, {}).get(queue_id, 0)


def backlog(start: Offsets, latest: Offsets) -> int:
    """Rows waiting between ``start`` and ``latest``: the queues of ``latest``, a queue missing
    from ``start`` counted from 0, a queue behind its start counted as none."""
    return sum(max(0, n - _start_of(start, t, b, q)) for t, b, q, n in _queues(latest))


def limit_rows(start: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """The end offsets of a batch of about ``max_rows`` rows (maxOffsetsPerTrigger), in
    canonical order and with exactly the queues of ``latest``.

    The rows are split across queues in proportion to their backlog; a queue's share
    ``max_rows * backlog / total`` is rounded down, except that a share between 0 and 1 is
    rounded up to 1 so a small queue is never starved (KafkaMicroBatchStream.rateLimit; the
    externals' rocketmq-spark does the same). No queue goes past ``latest``. Rounding bound:
    every queue adds at most ``floor(share) <= share``, or 1 where ``share < 1``, so the total is
    at most ``max_rows`` plus the number of queues with a backlog. Integer arithmetic, so the
    result depends on the arguments alone. A queue whose ``latest`` is at or behind its start
    has nothing to limit and gets ``latest``, as in Kafka (a step back is the reader's
    ``failOnDataLoss`` check).
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be positive, got {max_rows}")
    queues = _queues(latest)
    begins = [_start_of(start, t, b, q) for t, b, q, _ in queues]
    sizes = [max(0, n - s) for (*_, n), s in zip(queues, begins, strict=True)]
    total = sum(sizes)
    out: Offsets = {}
    for (t, b, q, n), begin, size in zip(queues, begins, sizes, strict=True):
        end = n
        if size > 0 and total > max_rows:
            share = max(1, max_rows * size // total)
            end = min(n, begin + share)
        out.setdefault(t, {}).setdefault(b, {})[q] = end
    return out


@dataclass(frozen=True)
class QueueRange(InputPartition):
    """One input partition: the offsets ``[start, end)`` of one queue. Pickles by value."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int  # exclusive


def ranges(start: Offsets, end: Offsets, min_partitions: int | None = None) -> list[QueueRange]:
    """The input partitions reading ``start`` to ``end``: one range per queue of ``end`` with
    rows to read, in canonical order (a queue missing from ``start`` starts at 0; a queue whose
    start is past its end is empty, not an error: §5 rule 5). With ``min_partitions``, the
    ranges with the largest pieces are split, one more piece at a time, until there are
    ``min_partitions`` pieces (or one per row, when there are fewer rows), so ranges are split
    about in proportion to their size (Kafka's minPartitions); a range's pieces are
    contiguous and differ in size by at most one row."""
    spans = [
        (t, b, int(q), s, n) for t, b, q, n in _queues(end) if (s := _start_of(start, t, b, q)) < n
    ]
    parts = _parts([n - s for *_, s, n in spans], min_partitions)
    out: list[QueueRange] = []
    for (t, b, q, s, n), k in zip(spans, parts, strict=True):
        piece, extra = divmod(n - s, k)
        for i in range(k):
            stop = s + piece + (1 if i < extra else 0)
            out.append(QueueRange(t, b, q, s, stop))
            s = stop
    return out


def _parts(sizes: list[int], min_partitions: int | None) -> list[int]:
    """Pieces per range: one each, then one more for the range whose pieces are largest (the
    first such range on a tie) until ``min_partitions`` pieces or one per row."""
    parts = [1] * len(sizes)
    if min_partitions is None:
        return parts
    if min_partitions < 1:
        raise ValueError(f"min_partitions must be positive, got {min_partitions}")
    wanted = min(min_partitions, sum(sizes)) - len(sizes)
    heap = [(-Fraction(size), i) for i, size in enumerate(sizes)]
    heapq.heapify(heap)
    for _ in range(wanted):  # the largest piece has > 1 row while pieces < rows
        _, i = heapq.heappop(heap)
        parts[i] += 1
        heapq.heappush(heap, (-Fraction(sizes[i], parts[i]), i))
    return parts
