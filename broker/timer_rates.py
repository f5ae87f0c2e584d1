"""TimerRates: the timer wheel's enqueue and dequeue rates (5.x TimerMessageStore's
perfCounterTicks ``enqueue_put`` / ``dequeue_put`` and their ``getLastTps``), for the runtime
info's timerEnqueueTps / timerDequeueTps. Pure: the caller passes the clock and the totals.

A sample of the two totals is kept at most once a second, the last WINDOW_SECONDS of them;
a rate is the change from the oldest kept sample to now. The wheel samples as it works (each
index pass, each delivery round) and each look samples too, so an idle wheel reads 0 once
its last work is older than the window.
"""

from __future__ import annotations

from collections import deque
from typing import Final

WINDOW_SECONDS: Final = 10.0
EVERY_SECONDS: Final = 1.0


class TimerRates:
    def __init__(self) -> None:
        self._samples: deque[tuple[float, int, int]] = deque()

    def tick(self, now: float, enqueued: int, dequeued: int) -> None:
        """Keep a sample of the totals if the last one is a second old."""
        samples = self._samples
        if samples and now - samples[-1][0] < EVERY_SECONDS:
            return
        samples.append((now, enqueued, dequeued))
        while len(samples) > 1 and now - samples[0][0] > WINDOW_SECONDS:
            samples.popleft()

    def tps(self, now: float, enqueued: int, dequeued: int) -> tuple[float, float]:
        """Enqueues and dequeues per second over the window (0 without an older sample)."""
        self.tick(now, enqueued, dequeued)
        first_t, first_enq, first_deq = self._samples[0]
        span = now - first_t
        if span <= 0:
            return 0.0, 0.0
        return (enqueued - first_enq) / span, (dequeued - first_deq) / span
