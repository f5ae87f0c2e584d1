"""One failover run, as the test and benchmarks/failover.py make it: namespaces up, the
group and the clients started, ``rounds`` faults each held ``hold`` seconds and healed (the
next one once a write was acknowledged again, or ``recover`` seconds passed), the clients
stopped, every queue read back, the verdicts computed, and everything stopped and deleted
(processes by PID, then the namespaces with their links and rules), even on failure."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.failover import checkers
from tests.failover.checkers import Recovery, Verdict
from tests.failover.history import (
    OK,
    Fault,
    History,
    Recorder,
    Send,
    Stored,
    decode,
    history_of,
    read_records,
)
from tests.failover.nemesis import Nemesis, schedule
from tests.failover.netns import network
from tests.failover.topology import Topology, hosts


@dataclass(frozen=True)
class Settings:
    mode: str = "static"
    master_role: str = "SYNC_MASTER"  # static mode only
    rounds: int = 3
    hold: float = 2.0  # s each fault lasts
    recover: float = 60.0  # s to wait, after healing, for an acknowledged write
    quiet: float = 1.0  # s of undisturbed traffic before each fault
    producers: int = 2
    in_flight: int = 2
    kinds: tuple[str, ...] = ()  # the faults in order; () = nemesis.schedule(mode, rounds)


@dataclass
class Outcome:
    settings: Settings
    history: History
    stored: list[Stored]
    verdicts: dict[str, Verdict]
    recoveries: list[Recovery]
    exits: list[tuple[str, int]]
    stuck: list[str] = field(default_factory=list)  # rounds after which no write came back
    elapsed: float = 0.0

    def report(self) -> str:
        counts = self.history.counts()
        lines = [
            f"failover run, mode={self.settings.mode} ({self.settings.master_role} in static "
            f"mode), {len(self.recoveries)} rounds in "
            f"{self.elapsed:.1f} s; sends: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        ]
        lines += [
            f"  {r.fault.kind:<22} held {r.fault.end - r.fault.start:5.2f} s; new master: "
            f"{_secs(r.new_master)}; writes back: {_secs(r.writes_back)}"
            for r in self.recoveries
        ]
        lines += [str(v) for v in self.verdicts.values()]
        lines += [f"  no write acknowledged after healing: {s}" for s in self.stuck]
        return "\n".join(lines)


def _secs(x: float | None) -> str:
    return "never" if x is None else f"{x:.2f} s after the fault"


class Tail:
    """Reads a JSON-lines file as it grows: the acknowledged sends begun after a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pos = 0
        self._buf = ""
        self.acked: list[Send] = []

    def poll(self) -> None:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as f:
            f.seek(self._pos)
            self._buf += f.read()
            self._pos = f.tell()
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            rec = decode(line)
            if isinstance(rec, Send) and rec.outcome == OK:
                self.acked.append(rec)

    def acked_after(self, t: float, timeout: float) -> bool:
        """Whether a send begun at or after ``t`` is acknowledged within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if any(s.start >= t for s in self.acked[-200:]):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)


def run(root: Path, settings: Settings) -> Outcome:
    began = time.monotonic()
    history_file, faults_file, stored_file = (
        root / "history.jsonl",
        root / "faults.jsonl",
        root / "stored.jsonl",
    )
    faults = Recorder(faults_file)
    stuck: list[str] = []
    kills: list[tuple[float, Path]] = []
    with network(hosts(settings.mode)) as net:
        topo = Topology(net, root, settings.mode, settings.master_role)
        try:
            topo.start()
            clients = topo.start_clients(history_file, settings.producers, settings.in_flight)
            tail = Tail(history_file)
            if not tail.acked_after(0, settings.recover):
                raise RuntimeError(f"no write acknowledged within {settings.recover} s of start")
            nemesis = Nemesis(topo)
            kinds = settings.kinds or schedule(settings.mode, settings.rounds)
            for i, kind in enumerate(kinds):
                time.sleep(settings.quiet)  # acknowledgements on both sides of each fault
                tail.poll()
                topo.master = topo.host_of(tail.acked[-1].host)  # whoever acknowledges now
                active = nemesis.inject(kind)
                time.sleep(settings.hold)  # the fault's length: held, not waited on
                active.early()  # kill-with-controller: etcd back, the master still dead
                if kind.startswith("kill"):  # what the survivors hold, the master still dead
                    path = root / f"survivors-{i + 1}.jsonl"
                    topo.read_back(path, hosts=topo.slaves())
                    kills.append((active.start, path))
                fault = nemesis.heal(active)
                faults(fault)
                if not tail.acked_after(fault.end, settings.recover):
                    stuck.append(f"round {i + 1} ({kind})")
            time.sleep(settings.quiet)
            topo.exits.append(("cl", clients.stop()))
            topo.procs.pop("cl")
            topo.read_back(stored_file)
        finally:
            faults.close()
            exits = topo.stop()
            (root / "logs.txt").write_text(topo.dump())
    records = read_records(history_file) + read_records(faults_file)
    history = history_of(records)
    stored = [r for r in read_records(stored_file) if isinstance(r, Stored)]
    survivors = [(t, [r for r in read_records(p) if isinstance(r, Stored)]) for t, p in kills]
    outcome = judge(settings, history, stored, exits, stuck, time.monotonic() - began)
    outcome.verdicts["loss_at_kill"] = on_survivors(history.sends, survivors)
    return outcome


def on_survivors(sends: list[Send], kills: list[tuple[float, list[Stored]]]) -> Verdict:
    """At each kill of the master, with it still dead: every send acknowledged before the
    kill is on the surviving replicas, at the queue and offset it was acknowledged at, on
    one of them at least (SYNC_MASTER's promise, and the ground of any election). A
    survivor outside the SyncStateSet may hold another message there -- one its own log
    took unacknowledged, cut back when it follows the new master -- which is no loss."""
    v = Verdict("acknowledged before the master's kill: on the survivors while it is dead")
    total = lost = 0
    for i, (t, stored) in enumerate(kills):
        held = {(s.broker, s.queue, s.offset, s.key) for s in stored}
        anywhere = {s.key for s in stored}
        acked = [s for s in sends if s.outcome == "ok" and s.end < t]
        total += len(acked)
        for send in acked:
            if (send.broker, send.queue, send.offset, send.key) in held:
                continue
            where = f"{send.broker}/{send.queue}@{send.offset}"
            if send.key in anywhere:
                v.add(f"kill {i + 1}: moved: {send.key} acked at {where}, held elsewhere")
            else:
                lost += 1
                v.add(f"kill {i + 1}: lost: {send.key} acked at {where} by {send.host}")
    v.figures.update(kills=len(kills), acknowledged_summed_over_kills=total, lost=lost)
    return v


def judge(
    settings: Settings,
    history: History,
    stored: list[Stored],
    exits: list[tuple[str, int]],
    stuck: list[str],
    elapsed: float,
) -> Outcome:
    until = max((s.end for s in history.sends), default=0.0)
    recs = checkers.recoveries(history.sends, history.faults, until)
    verdicts = {
        "loss": checkers.acked_readable(history.sends, stored),
        "one_master": checkers.single_master(history.sends),
        "offsets": checkers.offsets_never_back(
            history.commits, history.queries, history.deliveries
        ),
        "new_master": checkers.time_to_new_master(recs),
    }
    return Outcome(settings, history, stored, verdicts, recs, exits, stuck, elapsed)


__all__ = ["Fault", "Outcome", "Settings", "judge", "run"]
