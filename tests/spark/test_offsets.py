"""Offsets JSON, admission control and queue ranges with no Spark session and no cluster
(issue 16 item 4; spark-connector.md §5, §8.2 maxOffsetsPerTrigger and minPartitions, §9
rounding up)."""

from __future__ import annotations

import itertools
import json
import pickle
import random
import re
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.cloudpickle import cloudpickle
from pyspark.sql.datasource import InputPartition

from aiorocketmq.spark.offsets import (
    Offsets,
    QueueRange,
    backlog,
    canonical,
    from_json,
    limit_rows,
    ranges,
    to_json,
)

Queue = tuple[str, str, str]

queue_ids = st.integers(0, 40).map(str)
offsets_strategy: st.SearchStrategy[Offsets] = st.dictionaries(
    st.sampled_from(["t", "T2", "a", "orders", "t10", "t9"]),
    st.dictionaries(
        st.sampled_from(["broker-a", "broker-b", "broker-10", "b"]),
        st.dictionaries(queue_ids, st.integers(0, 10**6), max_size=6),
        max_size=3,
    ),
    max_size=3,
)


def flat(o: Offsets) -> dict[Queue, int]:
    return {(t, b, q): n for t, bs in o.items() for b, qs in bs.items() for q, n in qs.items()}


def nest(queues: dict[Queue, int]) -> Offsets:
    out: Offsets = {}
    for (t, b, q), n in queues.items():
        out.setdefault(t, {}).setdefault(b, {})[q] = n
    return out


def shuffled(o: Offsets, seed: int) -> Offsets:
    """The same offsets with the keys at every level in another order."""
    rnd = random.Random(seed)

    def mix(d: Mapping[str, object]) -> list[str]:
        keys = list(d)
        rnd.shuffle(keys)
        return keys

    return {t: {b: {q: o[t][b][q] for q in mix(o[t][b])} for b in mix(o[t])} for t in mix(o)}


@st.composite
def start_and_latest(draw: st.DrawFn) -> tuple[Offsets, Offsets]:
    """A latest and a start that may miss queues, lag behind or (rarely) be ahead."""
    latest = draw(offsets_strategy)
    start: dict[Queue, int] = {}
    for key, n in flat(latest).items():
        choice = draw(st.sampled_from(["missing", "behind", "behind", "behind", "ahead"]))
        if choice == "behind":
            start[key] = draw(st.integers(0, n))
        elif choice == "ahead":
            start[key] = n + draw(st.integers(1, 50))
    gone = draw(
        st.dictionaries(st.tuples(st.just("gone"), st.just("b"), queue_ids), st.integers(0, 99))
    )
    return nest(start | gone), latest


# -- canonical JSON ----------------------------------------------------------------------------


@given(offsets_strategy, st.integers())
def test_canonical_json_is_stable_under_key_order(o: Offsets, seed: int) -> None:
    """§5: Spark compares offsets as JSON text, so equal offsets must give equal text."""
    assert to_json(shuffled(o, seed)) == to_json(o)
    assert json.dumps(canonical(shuffled(o, seed))) == to_json(o)
    assert canonical(o) == o  # only the order changes
    assert from_json(to_json(o)) == canonical(o)
    assert from_json(json.loads(to_json(shuffled(o, seed)))) == canonical(o)


def test_canonical_order_sorts_queue_ids_numerically() -> None:
    """§5: topics and brokers sorted as strings, queueIds as numbers."""
    o = {"t9": {"b": {"10": 1, "2": 2}}, "t10": {"broker-b": {"0": 3}, "broker-a": {"1": 4}}}
    assert to_json(o) == (
        '{"t10": {"broker-a": {"1": 4}, "broker-b": {"0": 3}}, "t9": {"b": {"2": 2, "10": 1}}}'
    )
    assert list(canonical(o)["t9"]["b"]) == ["2", "10"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "offsets is not valid JSON"),
        ("[1]", "offsets must be a JSON object {topic: {brokerName: {queueId: offset}}}"),
        ('{"t": 1}', "offsets: topic 't' must map to {brokerName: {...}}"),
        ('{"t": {"b": [1]}}', "offsets: t/'b' must map to {queueId: offset}"),
        ('{"t": {"b": {"x": 1}}}', "offsets: queueId 'x' in t/b/x must be a decimal number"),
        ('{"t": {"b": {"01": 1}}}', "queueId '01' in t/b/01 must be a decimal number"),
        ('{"t": {"b": {"-1": 1}}}', "queueId '-1'"),
        ('{"t": {"b": {"1": -1}}}', "offsets: t/b/1 must be an offset >= 0, got -1"),
        ('{"t": {"b": {"1": 1.5}}}', "t/b/1 must be an offset >= 0, got 1.5"),
        ('{"t": {"b": {"1": true}}}', "t/b/1 must be an offset >= 0, got True"),
        ('{"t": {"b": {"1": "3"}}}', "t/b/1 must be an offset >= 0, got '3'"),
        ('{"": {"b": {"1": 3}}}', "offsets: topic '' must map"),
    ],
)
def test_from_json_refuses_bad_shapes(text: str, message: str) -> None:
    """§5: offsets coming back from Spark's checkpoint are checked, not trusted."""
    with pytest.raises(ValueError, match=re.escape(message)):
        from_json(text)
    if text.startswith("{") and text != "{":  # the same, handed over as a dict
        with pytest.raises(ValueError, match=re.escape(message)):
            from_json(json.loads(text))


def test_from_json_accepts_the_dict_spark_passes_back() -> None:
    """§3: Spark hands latestOffset/partitions the parsed dict; empty offsets are fine."""
    assert from_json({"t": {"b": {"3": 7, "1": 0}}}) == {"t": {"b": {"1": 0, "3": 7}}}
    assert from_json("{}") == {}


# -- backlog and limit_rows --------------------------------------------------------------------


def expected_backlog(start: Offsets, latest: Offsets) -> int:
    s = flat(start)
    return sum(max(0, n - s.get(k, 0)) for k, n in flat(latest).items())


@given(start_and_latest())
def test_backlog_counts_missing_queues_from_zero(case: tuple[Offsets, Offsets]) -> None:
    """§5 rule 6: a queue new in latest starts at 0; one ahead of latest waits nothing."""
    start, latest = case
    assert backlog(start, latest) == expected_backlog(start, latest)


def test_backlog_example() -> None:
    start = {"t": {"b": {"0": 5, "1": 9}}, "gone": {"b": {"0": 1}}}
    latest = {"t": {"b": {"0": 8, "1": 4, "2": 10}}}
    assert backlog(start, latest) == 3 + 0 + 10


@settings(max_examples=300)
@given(start_and_latest(), st.integers(1, 3000))
def test_limit_rows_properties(case: tuple[Offsets, Offsets], max_rows: int) -> None:
    """§8.2 maxOffsetsPerTrigger, §9: split in proportion to backlog, a share below 1 rounded
    up, never past latest, never below start, total <= max_rows + queues with a backlog."""
    start, latest = case
    out = limit_rows(start, latest, max_rows)
    assert to_json(out) == json.dumps(out)  # canonical already
    assert limit_rows(shuffled(start, 1), shuffled(latest, 2), max_rows) == out
    s, end, last = flat(start), flat(out), flat(latest)
    assert end.keys() == last.keys()
    sizes = {k: max(0, n - s.get(k, 0)) for k, n in last.items()}
    total = sum(sizes.values())
    waiting = [k for k, size in sizes.items() if size > 0]
    taken = {k: end[k] - s.get(k, 0) for k in waiting}
    for k, n in last.items():
        if sizes[k] == 0:
            assert end[k] == n  # nothing to limit (also a queue behind its start)
            continue
        assert s.get(k, 0) < end[k] <= n  # every queue with a backlog gets >= 1
        if total <= max_rows:
            assert end[k] == n
        else:
            share = Fraction(max_rows * sizes[k], total)
            assert taken[k] == min(sizes[k], max(1, int(share)))
            assert taken[k] <= share or taken[k] == 1
    assert sum(taken.values()) <= max_rows + len(waiting)
    assert sum(taken.values()) <= total
    if total > max_rows:  # a bigger backlog never gets a smaller share
        for a in waiting:
            for b in waiting:
                if sizes[a] >= sizes[b]:
                    assert taken[a] >= taken[b]


def test_limit_rows_rounds_small_shares_up() -> None:
    """§9: 1000 rows wanted from backlogs of 99,000, 990 and 10: 990, 9 and 1 (not 0)."""
    start = {"t": {"b": {"0": 1000, "1": 10}}}
    latest = {"t": {"b": {"0": 100_000, "1": 1000, "2": 10}}}
    assert limit_rows(start, latest, 1000) == {"t": {"b": {"0": 1990, "1": 19, "2": 1}}}


def test_limit_rows_total_can_exceed_max_rows_by_the_rounding_bound() -> None:
    """The documented bound: 3 queues of 1 row with max_rows 1 give 3 rows (1 + 3 - 1)."""
    latest = {"t": {"b": {"0": 1, "1": 1, "2": 1}}}
    out = limit_rows({}, latest, 1)
    assert out == latest
    assert backlog({}, out) <= 1 + 3


def test_limit_rows_keeps_latest_for_queues_without_backlog() -> None:
    """Kafka's rateLimit: a queue at or behind its start gets latest; a vanished one is dropped."""
    start = {"t": {"b": {"0": 50, "1": 7}}, "gone": {"b": {"0": 3}}}
    latest = {"t": {"b": {"0": 40, "1": 7, "2": 100}}}
    assert limit_rows(start, latest, 10) == {"t": {"b": {"0": 40, "1": 7, "2": 10}}}


def test_limit_rows_refuses_a_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="max_rows must be positive, got 0"):
        limit_rows({}, {"t": {"b": {"0": 1}}}, 0)


# -- ranges ------------------------------------------------------------------------------------


def check_cover(start: Offsets, end: Offsets, out: list[QueueRange]) -> None:
    """The ranges cover exactly [start, end) of each queue with rows, contiguous, in order."""
    s = flat(start)
    by_queue: dict[Queue, list[QueueRange]] = defaultdict(list)
    for r in out:
        by_queue[(r.topic, r.broker_name, str(r.queue_id))].append(r)
        assert r.start < r.end
    wanted = {k: (s.get(k, 0), n) for k, n in flat(end).items() if s.get(k, 0) < n}
    assert by_queue.keys() == wanted.keys()
    for k, pieces in by_queue.items():
        assert pieces[0].start == wanted[k][0]
        assert pieces[-1].end == wanted[k][1]
        for a, b in itertools.pairwise(pieces):
            assert a.end == b.start
        sizes = [p.end - p.start for p in pieces]
        assert max(sizes) - min(sizes) <= 1
    order = [(r.topic, r.broker_name, r.queue_id, r.start) for r in out]
    assert order == sorted(order)


@settings(max_examples=300)
@given(start_and_latest(), st.one_of(st.none(), st.integers(1, 60)))
def test_ranges_properties(case: tuple[Offsets, Offsets], min_partitions: int | None) -> None:
    """§5 rules 2, 5, 6 and §8.2 minPartitions: exact contiguous cover of [start, end) per queue,
    start past end is empty, at least min_partitions pieces when there are rows enough, pure."""
    start, end = case
    out = ranges(start, end, min_partitions)
    check_cover(start, end, out)
    assert ranges(shuffled(start, 3), shuffled(end, 4), min_partitions) == out
    assert ranges(from_json(to_json(start)), from_json(to_json(end)), min_partitions) == out
    queues = len({(r.topic, r.broker_name, r.queue_id) for r in out})
    rows = expected_backlog(start, end)
    assert len(out) == max(queues, min(min_partitions or 0, rows))


def test_ranges_example() -> None:
    """One range per queue with rows; start past end (§5 rule 5) and vanished queues give none."""
    start = {"t": {"b": {"0": 5, "1": 20, "2": 3}}, "gone": {"b": {"0": 1}}}
    end = {"t": {"b": {"0": 8, "1": 13, "2": 3, "10": 2}}}
    assert ranges(start, end) == [
        QueueRange("t", "b", 0, 5, 8),
        QueueRange("t", "b", 10, 0, 2),
    ]


def test_ranges_split_the_largest_in_proportion() -> None:
    """Kafka's minPartitions: a queue of 900 rows and one of 100 into 10 pieces: 9 and 1."""
    end = {"t": {"b": {"0": 900, "1": 100}}}
    out = ranges({}, end, 10)
    assert [(r.queue_id, r.end - r.start) for r in out] == [(0, 100)] * 9 + [(1, 100)]
    odd = ranges({}, {"t": {"b": {"0": 10}}}, 3)
    assert [(r.start, r.end) for r in odd] == [(0, 4), (4, 7), (7, 10)]
    assert len(ranges({}, {"t": {"b": {"0": 2}}}, 5)) == 2  # one row per piece at most
    assert len(ranges({}, end, 1)) == 2  # fewer wanted than queues: one per queue


def test_queue_range_pickles() -> None:
    """§3: an InputPartition must pickle (Spark uses cloudpickle)."""
    r = QueueRange("orders", "broker-a", 3, 10, 42)
    assert isinstance(r, InputPartition)
    for dumps in (pickle.dumps, cloudpickle.dumps):
        back = pickle.loads(dumps(r))
        assert back == r
        assert (back.topic, back.broker_name, back.queue_id, back.start, back.end) == (
            "orders",
            "broker-a",
            3,
            10,
            42,
        )
