"""The faults a failover run injects on its broker group's master, and how each is healed:

- ``kill``: SIGKILL mid-stream; healed by starting it again on its own store.
- ``pause``: SIGSTOP (a master that stops answering, a long GC or a VM freeze); SIGCONT.
- ``cut-namesrv``, ``cut-slave``, ``cut-clients``: the master partitioned from the name
  server, from its slaves, from the clients; healed by removing the drop rules.
- controller mode only: ``cut-controller`` (the master cut from etcd: its lease lapses) and
  ``kill-with-controller`` (master and etcd SIGKILLed together, r#7689's case; etcd comes
  back when the hold ends -- ``Active.early``, before the survivors are read with the
  master still dead -- and the master at healing).

``schedule(mode, rounds)`` cycles through them in that order, starting with the three
that ``make test``'s short run uses."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.failover.history import Fault
from tests.failover.topology import GROUP, Topology

SHORT = ("kill", "cut-slave", "cut-clients")
KINDS = (*SHORT, "pause", "cut-namesrv", "cut-controller", "kill-with-controller")
CONTROLLER_ONLY = frozenset({"cut-controller", "kill-with-controller"})
# not in any schedule: the harness's own check that its verdicts fail on real processes
# (a master restarted without its CommitLog: what a second master lacking the first's
# acknowledgements looks like to the clients)
SELF_TEST = ("kill-wipe",)


def schedule(mode: str, rounds: int) -> list[str]:
    kinds = [k for k in KINDS if mode == "controller" or k not in CONTROLLER_ONLY]
    return list(itertools.islice(itertools.cycle(kinds), rounds))


def _nothing() -> None:
    pass


@dataclass
class Active:
    kind: str
    host: str  # the master's host name in the topology
    addr: str  # its address as the clients see it
    start: float
    undo: Callable[[], None]
    # what ends when the hold does, before the survivors are read (run.py): the fault's
    # other part stays until healing
    early: Callable[[], None] = _nothing


class Nemesis:
    def __init__(self, topo: Topology) -> None:
        self.topo = topo

    def inject(self, kind: str) -> Active:
        topo, net = self.topo, self.topo.net
        master = topo.master
        addr = topo.broker_addr(master)
        undo: Callable[[], None]
        early: Callable[[], None] = _nothing
        if kind == "kill":
            topo.kill(master)
            undo = lambda: topo.restart(master)  # noqa: E731
        elif kind == "kill-wipe":
            topo.kill(master)
            topo.wipe(master)
            undo = lambda: topo.restart(master)  # noqa: E731
        elif kind == "kill-with-controller":
            topo.kill(master)
            topo.kill("ctl")
            # etcd down for the hold, not also for the survivors' read-back (seconds more)
            early = lambda: topo.restart("ctl")  # noqa: E731
            undo = lambda: topo.restart(master)  # noqa: E731

        elif kind == "pause":
            topo.pause(master)
            undo = lambda: topo.resume(master)  # noqa: E731
        elif kind.startswith("cut-"):
            other = {"namesrv": ["ns"], "slave": topo.slaves(), "clients": ["cl"],
                     "controller": ["ctl"]}[kind.removeprefix("cut-")]  # fmt: skip
            net.partition([master], other)
            undo = net.heal
        else:
            raise ValueError(f"unknown fault {kind!r}; one of {KINDS + SELF_TEST}")
        # the fault's start: once in effect (the process gone or frozen, the rules loaded)
        return Active(kind, master, addr, time.monotonic(), undo, early)

    def heal(self, active: Active) -> Fault:
        """Undoes the fault; its record, ``end`` when healing is done (a killed master is
        listening again)."""
        active.undo()
        return Fault(active.kind, GROUP, active.addr, active.start, time.monotonic())
