"""The verdicts of a failover run, pure functions of its history (history.py): each returns a
Verdict whose ``problems`` name every violation found (empty: it holds).

What the clients can observe, and so what is checked:
- A send's answer says which broker group and queue took the message, its queue offset, and
  (in the offsetMsgId) the store host that wrote it. It does not say the master's epoch:
  the SEND_MESSAGE response carries none (a broker hook could add one; until then two
  acknowledgements' epochs cannot be compared directly).
- "Exactly one master per group acknowledges at any time" is therefore checked through what
  two concurrent masters would leave behind, a queue's log that forked: (1) two different
  messages acknowledged at the same (group, queue, offset); (2) an acknowledgement whose
  offset is not above that of one acknowledged *before it was sent* (the queue's log must
  grow in real time: a later append on the same log gets a larger offset). (2) catches a
  second master appending to a log that lacks what the first acknowledged, and an
  acknowledged message truncated away and its offset reused. Also reported, not judged:
  which store hosts acknowledged for each group, in order (a master change shows there).
- Offsets: a consumer offset the broker acknowledged (UPDATE_CONSUMER_OFFSET answered
  SUCCESS) must never be read back lower by a query sent after the acknowledgement, and no
  message below it is delivered after it.
- Time to a new master: from a fault that takes the master away to the first acknowledged
  write by another broker of its group; None when there never was one in the fault's round
  (unbounded: what static roles give).
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tests.failover.history import Commit, Delivery, Fault, Query, Send, Stored

# faults after which the group's master is gone for good unless another is elected: the
# master killed, frozen, or cut from the controller (whose lease then lapses)
LOSS_KINDS = frozenset({"kill", "pause", "kill-with-controller", "cut-controller"})
# problems listed in a verdict at most (the count is always exact)
SHOWN = 20


@dataclass
class Verdict:
    name: str
    problems: list[str] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)
    count: int = 0

    @property
    def ok(self) -> bool:
        return self.count == 0

    def add(self, problem: str) -> None:
        self.count += 1
        if len(self.problems) < SHOWN:
            self.problems.append(problem)

    def __str__(self) -> str:
        head = f"{self.name}: {'ok' if self.ok else f'{self.count} problem(s)'}"
        lines = [head, *(f"  {k}: {v}" for k, v in self.figures.items())]
        return "\n".join([*lines, *(f"  - {p}" for p in self.problems)])


def acked_readable(sends: Iterable[Send], stored: Iterable[Stored]) -> Verdict:
    """Every acknowledged send is read back after healing, at the queue and offset it was
    acknowledged at (another message there means the queue's log was rewritten)."""
    v = Verdict("acknowledged messages readable after healing")
    at: dict[tuple[str, int, int], str] = {}
    keys: set[str] = set()
    for s in stored:
        at[(s.broker, s.queue, s.offset)] = s.key
        keys.add(s.key)
    acked = [s for s in sends if s.outcome == "ok"]
    lost = 0
    for send in acked:
        there = at.get((send.broker, send.queue, send.offset))
        if there == send.key:
            continue
        if send.key not in keys:
            lost += 1
            v.add(f"lost: {send.key} acked at {send.broker}/{send.queue}@{send.offset} "
                  f"by {send.host} ({send.start:.3f}-{send.end:.3f})")  # fmt: skip
        else:
            v.add(f"moved: {send.key} acked at {send.broker}/{send.queue}@{send.offset}, "
                  f"which now holds {there!r}")  # fmt: skip
    v.figures.update(acknowledged=len(acked), lost=lost, read_back=len(at))
    return v


def single_master(sends: Iterable[Send]) -> Verdict:
    """No fork in any queue's log among the acknowledged sends (see the module's
    docstring): no offset acknowledged for two messages; none at or below one acknowledged
    before the send began."""
    v = Verdict("one master per group acknowledges at a time")
    by_queue: dict[tuple[str, int], list[Send]] = defaultdict(list)
    hosts: dict[str, list[str]] = defaultdict(list)
    for send in sorted((s for s in sends if s.outcome == "ok"), key=lambda s: s.end):
        by_queue[(send.broker, send.queue)].append(send)
        if not hosts[send.broker] or hosts[send.broker][-1] != send.host:
            hosts[send.broker].append(send.host)
    for (broker, queue), acks in sorted(by_queue.items()):
        seen: dict[int, Send] = {}
        for send in acks:
            other = seen.setdefault(send.offset, send)
            if other.key != send.key:
                v.add(f"fork: {broker}/{queue}@{send.offset} acked for {other.key} "
                      f"(by {other.host}) and {send.key} (by {send.host})")  # fmt: skip
        _grows_in_real_time(v, broker, queue, acks)
    v.figures["acking hosts in order"] = {b: " -> ".join(h) for b, h in sorted(hosts.items())}
    return v


def _grows_in_real_time(v: Verdict, broker: str, queue: int, acks: Sequence[Send]) -> None:
    """For each ack, the highest offset among those acknowledged (ended) before it began
    must be below its own. ``acks`` are sorted by end."""
    ends = [a.end for a in acks]
    best: list[tuple[int, Send]] = []  # running max of offset over acks by end order
    for a in acks:
        prev = best[-1] if best else (-1, a)
        best.append(max(prev, (a.offset, a), key=lambda p: p[0]))
    for a in acks:
        i = bisect.bisect_left(ends, a.start)  # acks[:i] ended before a began
        if i == 0:
            continue
        top, which = best[i - 1]
        if top >= a.offset:
            v.add(f"went back: {broker}/{queue}: {a.key} acked at offset {a.offset} by "
                  f"{a.host} after {which.key} was acked at {top} by {which.host}")  # fmt: skip


def offsets_never_back(
    commits: Iterable[Commit], queries: Iterable[Query], deliveries: Iterable[Delivery]
) -> Verdict:
    """A consumer offset acknowledged by a broker is never read back lower by a later query,
    and no message below it is delivered afterwards."""
    v = Verdict("consumer offsets never move back past committed ones")
    done: dict[tuple[str, int], list[Commit]] = defaultdict(list)
    for c in sorted((c for c in commits if c.ok), key=lambda c: c.end):
        done[(c.broker, c.queue)].append(c)
    high: dict[tuple[str, int], tuple[list[float], list[int]]] = {}
    for where, cs in done.items():
        tops, top = [], -1
        for c in cs:
            top = max(top, c.offset)
            tops.append(top)
        high[where] = ([c.end for c in cs], tops)

    def committed_before(broker: str, queue: int, t: float) -> int:
        ends, tops = high.get((broker, queue), ([], []))
        i = bisect.bisect_left(ends, t)
        return tops[i - 1] if i else -1

    n_queries = 0
    for q in queries:
        if not q.ok:
            continue
        n_queries += 1
        floor = committed_before(q.broker, q.queue, q.start)
        if q.offset < floor:
            v.add(f"query went back: {q.broker}/{q.queue} answered {q.offset} by {q.host} "
                  f"at {q.start:.3f}, committed {floor} before")  # fmt: skip
    for d in deliveries:
        floor = committed_before(d.broker, d.queue, d.t)
        if d.first < floor:
            v.add(f"redelivered: {d.broker}/{d.queue} offsets {d.first}..{d.last} at "
                  f"{d.t:.3f}, committed {floor} before")  # fmt: skip
    v.figures.update(commits_acked=sum(len(c) for c in done.values()), queries=n_queries)
    return v


@dataclass(frozen=True)
class Recovery:
    """After one fault: seconds to the first write acknowledged by another broker of the
    group (``new_master``; None: none in the fault's round) and by any broker
    (``writes_back``; the old master's return counts)."""

    fault: Fault
    new_master: float | None
    writes_back: float | None


def recoveries(sends: Sequence[Send], faults: Sequence[Fault], until: float) -> list[Recovery]:
    """A Recovery per fault; a fault's round lasts until the next fault (or ``until``). Only
    sends begun after the fault count."""
    acked = sorted((s for s in sends if s.outcome == "ok"), key=lambda s: s.end)
    ordered = sorted(faults, key=lambda f: f.start)
    out = []
    for i, f in enumerate(ordered):
        stop = ordered[i + 1].start if i + 1 < len(ordered) else until
        mine = [s for s in acked if s.broker == f.broker and f.start <= s.start and s.end < stop]
        other = next((s for s in mine if s.host != f.host), None)
        first = next(iter(mine), None)
        out.append(
            Recovery(
                f,
                None if other is None else other.end - f.start,
                None if first is None else first.end - f.start,
            )
        )
    return out


def time_to_new_master(recs: Iterable[Recovery]) -> Verdict:
    """The figures of the faults that take a master away (LOSS_KINDS): p50 and max of the
    time to a new master's first acknowledged write, "never" counted as unbounded. Judges
    nothing by itself (no timed assertions): ``figures["unbounded"]`` counts the faults no
    new master followed; the caller decides what its mode expects."""
    v = Verdict("time from the master's loss to a new master's first acknowledged write")
    losses = [r for r in recs if r.fault.kind in LOSS_KINDS]
    times = [r.new_master for r in losses if r.new_master is not None]
    back = [r.writes_back for r in losses if r.writes_back is not None]
    never = len(losses) - len(times)
    if not losses:
        v.figures.update(losses=0, p50="n/a (no master lost)", max="n/a (no master lost)")
        return v
    v.figures.update(
        losses=len(losses),
        unbounded=never,
        p50=_fmt(_p50(times, never)),
        max=_fmt(None if never else max(times, default=None)),
        old_master_back_p50=_fmt(_p50(back, len(losses) - len(back))),
    )
    return v


def _p50(times: list[float], never: int) -> float | None:
    """The median with each "never" as +inf; None when that is infinite (or no data)."""
    values = sorted(times) + [float("inf")] * never
    if not values:
        return None
    mid = statistics.median_low(values)
    return None if mid == float("inf") else mid


def _fmt(x: float | None) -> str:
    return "never (unbounded)" if x is None else f"{x:.2f} s"
