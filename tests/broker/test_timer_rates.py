"""TimerRates (broker/timer_rates.py): the runtime info's timerEnqueueTps / timerDequeueTps."""

from __future__ import annotations

from aiorocketmq.broker.timer_rates import TimerRates


def test_rates_over_the_last_ten_seconds_and_zero_when_idle() -> None:
    rates = TimerRates()
    assert rates.tps(100.0, 0, 0) == (0.0, 0.0)  # nothing older to compare with
    for second in range(1, 5):
        rates.tick(100.0 + second, 1000 * second, 500 * second)
        rates.tick(100.5 + second, 1, 1)  # within a second of the last sample: not kept
    assert rates.tps(105.0, 5000, 2500) == (1000.0, 500.0)
    assert rates.tps(130.0, 5000, 2500) == (0.0, 0.0)  # idle for longer than the window
