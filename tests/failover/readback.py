"""After healing: every queue of every broker group of the topic read back from where a
consumer would read it (the route's master, brokerId 0; a group without one: its lowest
brokerId), each message a ``Stored`` record in a JSON-lines file. Run inside the clients'
namespace: ``python -m tests.failover.readback --namesrv ADDR --topic T --groups a,b --out F``.
Waits (up to --wait seconds) for every group named to have a master in the route. With
``--addrs``: those brokers of one group, read directly (a slave while its master is dead)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path

import uvloop

from aiorocketmq.client import MQClientError, api
from aiorocketmq.remoting.protocol.route import TopicRouteData
from tests.failover.history import Recorder, Stored

GROUP = "fv_readback"


async def route_with_masters(
    remote: api.Remote, namesrv: str, topic: str, groups: set[str], wait: float
) -> TopicRouteData:
    """The topic's route once every group in ``groups`` has a brokerId 0 in it; after
    ``wait`` seconds, the route as it is."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    route = TopicRouteData()
    while True:
        with contextlib.suppress(MQClientError):
            route = api.parse_route(await remote.invoke(namesrv, api.get_route(topic), 3.0))
            have = {b.broker_name for b in route.broker_datas if 0 in b.broker_addrs}
            if have >= groups:
                return route
        if loop.time() > deadline:
            return route
        await asyncio.sleep(0.2)


async def read_queue(
    remote: api.Remote, addr: str, broker: str, topic: str, queue: int
) -> list[Stored]:
    out: list[Stored] = []
    offset = 0
    while True:
        req = api.pull_message(GROUP, topic, queue, offset, max_nums=32,
                               sys_flag=api.FLAG_SUBSCRIPTION, suspend_ms=0,
                               subscription="*")  # fmt: skip
        reply = api.parse_pull(await remote.invoke(addr, req, 10.0), addr)
        if reply.status is not api.PullStatus.FOUND:
            if reply.status is api.PullStatus.OFFSET_ILLEGAL and reply.next_begin_offset > offset:
                offset = reply.next_begin_offset
                continue
            return out
        for m in reply.messages():
            key = m.body.decode(errors="replace")
            out.append(Stored(broker, queue, m.queue_offset, key, addr))
        offset = reply.next_begin_offset


async def main(args: argparse.Namespace) -> None:
    remote = api.Remote.open()
    record = Recorder(Path(args.out))
    try:
        if args.addrs:  # these brokers directly, the group's queues 0..queues-1
            for addr in args.addrs.split(","):
                for queue in range(args.queues):
                    for s in await read_queue(remote, addr, args.groups, args.topic, queue):
                        record(s)
            print(json.dumps({"event": "readback_done", "addrs": args.addrs}), flush=True)
            return
        groups = set(args.groups.split(","))
        route = await route_with_masters(remote, args.namesrv, args.topic, groups, args.wait)
        queues = {q.broker_name: q.read_queue_nums for q in route.queue_datas}
        where = {}
        for b in route.broker_datas:
            if not b.broker_addrs:
                continue
            addr = b.broker_addrs[min(b.broker_addrs)]
            where[b.broker_name] = {"addr": addr, "master": 0 in b.broker_addrs}
            for queue in range(queues.get(b.broker_name, 0)):
                for s in await read_queue(remote, addr, b.broker_name, args.topic, queue):
                    record(s)
        print(json.dumps({"event": "readback_done", "groups": where}), flush=True)
    finally:
        record.close()
        await remote.close()


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--groups", required=True, help="broker groups that must have a master")
    ap.add_argument("--out", required=True)
    ap.add_argument("--wait", type=float, default=30.0)
    ap.add_argument("--addrs", default="", help="read these brokers of the (one) group instead")
    ap.add_argument("--queues", type=int, default=4, help="with --addrs: the group's queues")
    return ap.parse_args(argv)


if __name__ == "__main__":
    uvloop.run(main(parse(sys.argv[1:])))
