"""What a server's ``/metrics`` reports, kept as plain numbers: requests by code and response
code, their latency, and how late the event loop runs.

The dispatcher counts every request it answers here with a few dict and list operations and
a bisect into fixed bucket bounds -- a few hundred nanoseconds; nothing of prometheus_client
is touched per request. ``aiorocketmq.remoting.metrics`` turns these numbers into metric families
only when ``/metrics`` is scraped.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Sequence
from time import perf_counter
from typing import Final

from aiorocketmq.remoting.protocol.command import RemotingCommand

# seconds; a long-polling pull is held up to its suspend timeout (15-30 s)
LATENCY_BOUNDS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                         0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)  # fmt: skip
LAG_BOUNDS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
OTHER_CODE: Final = -1  # request codes with no route, counted together (bounded labels)
NO_RESPONSE: Final = -1  # a oneway request, or a handler that answered nothing


class Histogram:
    """Observations per bucket -- ``counts[i]`` those in ``(bounds[i-1], bounds[i]]``, the last
    those past every bound -- and their sum, as a Prometheus histogram counts them."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, observations <= le)`` per bound, ``+Inf`` last: a histogram family's buckets."""
        out, running = [], 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else repr(bound), float(running)))
        return out


class CodeStats(Histogram):
    """One request code: its latency histogram, and how often each response code answered it."""

    __slots__ = ("responses",)

    def __init__(self) -> None:
        super().__init__(LATENCY_BOUNDS)
        self.responses: dict[int, int] = {}


class RequestStats:
    """Per request code (``OTHER_CODE`` for codes with no route), shared by the listeners of a
    server. ``record`` is the dispatcher's only call: plain Python, a few hundred ns."""

    __slots__ = ("codes",)

    def __init__(self) -> None:
        self.codes: dict[int, CodeStats] = {}

    def record(self, code: int, response: RemotingCommand | None, started: float) -> None:
        """A request of ``code`` answered with ``response``; ``started`` is the
        ``time.perf_counter()`` when it was dispatched."""
        elapsed = perf_counter() - started
        try:
            entry = self.codes[code]
        except KeyError:
            entry = self.codes[code] = CodeStats()
        entry.counts[bisect_left(LATENCY_BOUNDS, elapsed)] += 1
        entry.total += elapsed
        rcode = NO_RESPONSE if response is None else response.code
        try:
            entry.responses[rcode] += 1
        except KeyError:
            entry.responses[rcode] = 1


class LoopLag:
    """How late the event loop runs: every ``period`` seconds a probe sleeps and measures how
    much later than asked it woke (a handler that blocks the loop shows here)."""

    def __init__(self, period: float = 0.5) -> None:
        self.period = period
        self.histogram = Histogram(LAG_BOUNDS)
        self.last = 0.0  # the latest probe's lateness, seconds

    async def run(self) -> None:
        while True:
            started = perf_counter()
            await asyncio.sleep(self.period)
            self.last = max(0.0, perf_counter() - started - self.period)
            self.histogram.observe(self.last)
