"""MemoryLimits gives the heap back (remoting.limits, remoting.process): ``trim`` runs once
connections have let go of ``trim_after`` bytes since the last time, whether a buffer
drained, a connection closed or the cap shed it. Pure: no process, no socket."""

from __future__ import annotations

from aiorocketmq.remoting.limits import MemoryLimits


class Conn:
    def __init__(self, name: str) -> None:
        self.peer, self.size, self.aborted = name, 0, False

    def write_buffer_size(self) -> int:
        return self.size

    def abort(self) -> None:
        self.aborted = True


def test_trim_runs_after_enough_is_let_go_by_drains_and_closes() -> None:
    calls: list[int] = []
    limits = MemoryLimits(1 << 30, 1 << 30, trim=lambda: calls.append(1), trim_after=100)
    a, b = Conn("a"), Conn("b")
    limits.output(a, 80)
    limits.partial(b, 50)
    limits.output(a, 30)  # drained 50
    assert (calls, limits.trims) == ([], 0)
    limits.forget(b)  # 50 more: 100 let go
    assert (calls, limits.trims) == ([1], 1)
    limits.forget(a)  # 30: counting starts again
    limits.output(a, 0)
    assert limits.trims == 1
    assert (limits.output_total, limits.partial_total) == (0, 0)


def test_what_the_cap_sheds_counts_once() -> None:
    calls: list[int] = []
    limits = MemoryLimits(100, 1 << 30, trim=lambda: calls.append(1), trim_after=110)
    big, small = Conn("big"), Conn("small")
    big.size, small.size = 90, 20
    limits.output(big, 90)
    limits.output(small, 20)  # over the cap: big is shed (90 let go)
    assert big.aborted and not small.aborted
    limits.forget(big)  # its close, after the shed: nothing more
    assert calls == []
    limits.forget(small)  # 20: 110 in all
    assert calls == [1]


def test_no_trim_without_a_trimmer() -> None:
    limits = MemoryLimits(1 << 30, 1 << 30)
    conn = Conn("c")
    limits.output(conn, 1 << 25)
    limits.forget(conn)
    assert limits.trims == 0
