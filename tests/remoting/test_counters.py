"""The plain counters behind /metrics: Prometheus's bucket rule (a value equal to a bound
counts in that bound's bucket, ``le`` is inclusive), cumulative buckets, per-code counts."""

from __future__ import annotations

import time

from aiorocketmq.remoting.counters import LATENCY_BOUNDS, NO_RESPONSE, Histogram, RequestStats
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to


def test_a_value_on_a_bound_counts_in_that_bucket_and_buckets_are_cumulative() -> None:
    h = Histogram((0.1, 1.0))
    for v in (0.0, 0.1, 0.5, 1.0, 1.0000001, 7.0):
        h.observe(v)
    assert h.counts == [2, 2, 2]
    assert h.cumulative() == [("0.1", 2.0), ("1.0", 4.0), ("+Inf", 6.0)]
    assert h.total == sum((0.0, 0.1, 0.5, 1.0, 1.0000001, 7.0))


def test_requests_are_counted_per_code_and_response_code() -> None:
    stats = RequestStats()
    req = RemotingCommand.request(10, {})
    started = time.perf_counter()
    stats.record(10, response_to(req, 0), started)
    stats.record(10, response_to(req, 0), started - 0.2)
    stats.record(10, response_to(req, 1), started)
    stats.record(10, None, started)
    entry = stats.codes[10]
    assert entry.responses == {0: 2, 1: 1, NO_RESPONSE: 1}
    assert sum(entry.counts) == 4
    assert entry.counts[LATENCY_BOUNDS.index(0.25)] == 1  # the one 0.2 s ago
    assert 0.2 <= entry.total < 1.0
