"""``mqcluster`` (``make run``; ``python -m aiorocketmq.deploy.launcher``): a local cluster without
Docker -- a name server on 9876 and brokers broker-a (10911) and broker-b (10921), data under
./data of the current directory, every server's log lines in this terminal with its name in front.

It starts the servers in tiers (the name server, the masters, the slaves), says when each tier
is ready and how long it took, then prints every endpoint -- each server's address, a broker's
role, VIP and HA ports, and its metrics URL -- and a first command to try.

``--slaves N`` adds N slaves to each broker group (``make run ARGS="--slaves 1"``): brokerId 1..N,
brokerRole SLAVE, the group's brokerName, data under ./data/broker-a-s1 and so on; ``--sync``
makes the masters SYNC_MASTER (else ASYNC_MASTER). Port plan: ``aiorocketmq.deploy.procs``.
"cluster ready" waits until every slave follows its master.

Stop it with Ctrl-C, ``kill <launcher pid>`` (SIGTERM) or by closing the terminal (SIGHUP): the
slaves stop first, then the masters, then the name server (each group: SIGTERM, up to 10 s,
then SIGKILL), and the launcher exits 0. A server that exits by itself stops the cluster too:
the launcher names it and how it ended, and exits 1 -- unless ``--keep-going`` was given: then,
once the cluster is ready, the launcher names the server and how it ended, the others keep
running and their output keeps coming (so failover and reading from a slave can be tried),
and a stop signal stops them as usual; the exit code is then 1 (a server died). Each server
is started with this interpreter, in its own session (only the launcher sees Ctrl-C, so the
order holds) and with PR_SET_PDEATHSIG: if the launcher dies, even by SIGKILL, the kernel sends
every server SIGTERM. The launcher asks the same for itself, so it stops the cluster when
``make`` dies.

``--acl`` turns ACL 1.0 on: the brokers start with ``aclEnable=true`` and a demo
``plain_acl.yml`` (an admin and an application account, generated keys, kept under
``<data>/acl``: ``aiorocketmq.deploy.acl``), and the launcher prints the keys and how the SDK
and mqadmin use them.

``--failover`` starts etcd (``aiorocketmq.deploy.etcd``: the binary ``make setup`` installs,
data under ``<data>/etcd``, client port 12379) and, instead of the two groups, one broker group
of three replicas in controller mode (broker-a-1..3, brokerId 1..3: ``procs.failover_plan``)
that elect their master in etcd; "cluster ready" waits for that election. The launcher prints
etcd's endpoint, the mqadmin commands showing the controller's view, which replica is master
and how to kill it; each time another becomes master it says so. It implies ``--keep-going``:
a killed master leaves the others running, to take over.

One launcher at a time runs from a data directory (a lock file, ``aiorocketmq.deploy.datadir``);
``--reset`` empties it and exits. ``--data DIR`` puts all state under DIR; ``--ephemeral``
runs every process on a free port, metrics included (the brokers find the name server through
its ``listening`` line). Tests use both.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from aiorocketmq.deploy import acl as demo_acl
from aiorocketmq.deploy import etcd
from aiorocketmq.deploy.cluster import Cluster
from aiorocketmq.deploy.datadir import Busy, lock, reset, shown
from aiorocketmq.deploy.procs import (
    FAILOVER_GROUP,
    MAX_SLAVES,
    NAMESRV,
    REPLICA,
    die_with_parent,
    failover_plan,
    plan,
    say,
)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="mqcluster", description="a local name server and two broker groups"
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("data"),
        metavar="DIR",
        help="where all state goes (default: ./data)",
    )
    parser.add_argument(
        "--reset",
        action="store_true",
        help="remove the cluster's state from the data directory and exit (not while it runs)",
    )
    parser.add_argument(
        "--ephemeral", action="store_true", help="every process on a free port (for tests)"
    )
    parser.add_argument(
        "--slaves",
        type=int,
        default=0,
        metavar="N",
        help=f"N slaves (brokerId 1..N) per broker group, 0 to {MAX_SLAVES} (default: 0)",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="once ready, a server that dies leaves the others running (try failover, or "
        "reading from a slave while its master is gone); without it, the cluster stops",
    )
    parser.add_argument(
        "--acl",
        action="store_true",
        help="ACL 1.0 on the brokers (aclEnable=true) with a demo plain_acl.yml under "
        "DIR/acl: an admin and an application account whose keys are printed",
    )
    parser.add_argument(
        "--sync",
        action="store_true",
        help="SYNC_MASTER masters: a send is answered once a slave holds it (needs --slaves)",
    )
    parser.add_argument(
        "--failover",
        action="store_true",
        help="automatic failover: etcd and one broker group of three controller-mode replicas "
        "(brokerId 1..3) that elect their master; implies --keep-going",
    )
    args = parser.parse_args(argv)
    if args.failover and (args.slaves or args.sync):
        parser.error("--failover starts its own three replicas: no --slaves or --sync with it")
    if not 0 <= args.slaves <= MAX_SLAVES:
        parser.error(f"--slaves: 0 to {MAX_SLAVES}, got {args.slaves}")
    if args.sync and not args.slaves:
        parser.error("--sync needs --slaves 1 or more (else every send is SLAVE_NOT_AVAILABLE)")
    return args


def mqadmin() -> str:
    """How to type ``mqadmin`` here: bare when it is this interpreter's on the PATH, else the
    path next to this interpreter (``.venv/bin/mqadmin`` from the repository root)."""
    script = Path(sys.executable).parent / "mqadmin"
    if shutil.which("mqadmin") == str(script):
        return "mqadmin"
    with contextlib.suppress(ValueError):
        return str(script.absolute().relative_to(Path.cwd()))
    return str(script)


def announce(cluster: Cluster, began: float) -> None:
    """The endpoints, a first command and how to stop; "cluster ready" comes last."""
    for server in cluster.servers:
        say(f"  {server.describe()}")
    namesrv = next(s for s in cluster.servers if s.spec.role == NAMESRV)
    addr = f"127.0.0.1:{namesrv.port}"
    if cluster.acl is not None:
        for line in demo_acl.usage(cluster.acl, addr, shown(cluster.acl.home)):
            say(line)
        say(f"try: ROCKETMQ_HOME={shown(cluster.acl.home)} {mqadmin()} clusterList -n {addr}")
    else:
        say(f"try: {mqadmin()} clusterList -n {addr}")
    if any(s.spec.role == REPLICA for s in cluster.servers):
        failover_usage(cluster, addr)
    count, took = len(cluster.servers), time.monotonic() - began
    say(f"cluster ready ({count} processes, {took:.1f} s); stop it with Ctrl-C or "
        f"`kill {os.getpid()}`")  # fmt: skip


def failover_usage(cluster: Cluster, namesrv: str) -> None:
    """--failover: etcd, the controller's view with mqadmin, the master and how to kill it."""
    controller = f"127.0.0.1:{cluster.etcd_ports[0]}"
    say(f"etcd (the controller's store): controllerAddr={controller}, data in "
        f"{shown(cluster.data / etcd.ETCD_DIR)}")  # fmt: skip
    where = f"-a {controller} -b {FAILOVER_GROUP}"
    say(f"the controller's view: {mqadmin()} getSyncStateSet {where}")
    say(f"                       {mqadmin()} getBrokerEpoch {where}")
    say(f"the route (the master is brokerId 0): {mqadmin()} topicRoute -n {namesrv} -t TBW102")
    master = cluster.master_now()
    if master is not None:
        say(
            f"watch a failover: `kill -9 {master.proc.pid}` kills the master, {master.name}; "
            "a SyncStateSet replica takes over within seconds and the launcher says which"
        )


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    die_with_parent(os.getppid())  # when `make` dies, stop the cluster too
    if args.failover and etcd.binary() is None:
        say(etcd.MISSING)
        return 1
    cluster = Cluster(args.data.absolute(), args.ephemeral, args.keep_going or args.failover)
    for signum in STOP_SIGNALS:
        signal.signal(signum, cluster.on_signal)
    try:
        lock(cluster.data)  # held until we exit: the fd stays open
    except Busy as exc:
        say(f"{exc}: stop it first")
        return 1
    say(f"data in {shown(cluster.data)}")
    if args.acl:
        cluster.acl = demo_acl.prepare(cluster.data)
    if cluster.start(failover_plan() if args.failover else plan(args.slaves, args.sync)):
        announce(cluster, began)
        cluster.watch()
    clean = cluster.stop()
    return 0 if clean and not cluster.failed and cluster.signal is not None else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reset:
        try:
            ours = [spec.name for spec in plan(MAX_SLAVES)] + [demo_acl.ACL_DIR, etcd.ETCD_DIR]
            ours += [spec.name for spec in failover_plan() if spec.role == REPLICA]
            lines = reset(args.data.absolute(), ours)
        except Busy as exc:
            say(f"not resetting: {exc}; stop it first")
            return 1
        for line in lines:
            say(line)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
