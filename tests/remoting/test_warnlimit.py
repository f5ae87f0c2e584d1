"""WarnLimiter (issue 29, no poison pill): a repeating warning is logged the first time, then
at most once per interval per key, each line saying how many it held back; every occurrence
is counted; the keys it remembers are bounded. An injected clock, no sleeps."""

from __future__ import annotations

from aiorocketmq.remoting.warnlimit import WarnLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_first_then_once_per_interval_with_the_count_held_back() -> None:
    clock = Clock()
    limiter = WarnLimiter(10.0, clock=clock)
    assert limiter.hit("a") == 0  # the first: logged at once
    for _ in range(99):  # ten a second for ten seconds: all held back
        clock.now += 0.1
        assert limiter.hit("a") is None
    assert limiter.hit("b") == 0  # another key is not held back by "a"
    clock.now = 10.0
    assert limiter.hit("a") == 99  # due again: says how many it held back
    assert limiter.hit("a") is None
    assert limiter.total == 103


def test_keys_are_bounded_and_a_forgotten_key_logs_at_once() -> None:
    clock = Clock()
    limiter = WarnLimiter(60.0, max_keys=3, clock=clock)
    for key in "abcd":
        assert limiter.hit(key) == 0
    assert len(limiter._keys) == 3
    assert limiter.hit("a") == 0  # forgotten (the oldest): logged again, nothing counted back
    assert limiter.hit("d") is None  # remembered: still held back
