"""Cluster and broker commands: clusterList (ClusterListSubCommand) ..."""

from __future__ import annotations

import time
from argparse import Namespace
from typing import Any

from client import api
from client.admin.output import Output, Table
from client.admin.registry import command, opt
from client.admin.session import AdminError, Session
from remoting.protocol.codes import RequestCode as C
from remoting.protocol.route import decode_kv_table


async def runtime_info(session: Session, addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO (28): the broker's KVTable."""
    resp = await session.ok(addr, api.request(C.GET_BROKER_RUNTIME_INFO))
    return decode_kv_table(resp.body)


def _first_float(text: str | None) -> float:
    """The first number of a "tps tps tps" value (putTps, getTransferedTps)."""
    try:
        return float((text or "").split(" ")[0])
    except ValueError:
        return 0.0


def _base_row(cluster: str, name: str, bid: int, addr: str, kv: dict[str, str]) -> dict[str, Any]:
    """ClusterListSubCommand.printClusterBaseInfo's columns, from one broker's KVTable."""
    earliest = kv.get("earliestMessageTimeStamp") or ""
    hours = (time.time() * 1000 - int(earliest)) / 3_600_000 if earliest.isdigit() else 0.0
    try:
        space = float(kv.get("commitLogDiskRatio") or 0)
    except ValueError:
        space = 0.0
    return {
        "cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
        "version": kv.get("brokerVersionDesc", ""),
        "inTps": _first_float(kv.get("putTps")),
        "sendQueue": kv.get("sendThreadPoolQueueSize", ""),
        "sendWaitMs": kv.get("sendThreadPoolQueueHeadWaitTimeMills", ""),
        "outTps": _first_float(kv.get("getTransferedTps")),
        "pullQueue": kv.get("pullThreadPoolQueueSize", ""),
        "pullWaitMs": kv.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
        "pageCacheLockMs": kv.get("pageCacheLockTimeMills", ""),
        "hours": round(hours, 2), "commitLogDiskRatio": round(space, 4),
    }  # fmt: skip


def _more_row(cluster: str, name: str, bid: int, addr: str, kv: dict[str, str]) -> dict[str, Any]:
    """printClusterMoreStats: yesterday's and today's message counts in and out."""

    def n(key: str) -> int:
        value = kv.get(key, "")
        return int(value) if value.lstrip("-").isdigit() else 0

    return {
        "cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
        "inTotalYest": n("msgPutTotalTodayMorning") - n("msgPutTotalYesterdayMorning"),
        "outTotalYest": n("msgGetTotalTodayMorning") - n("msgGetTotalYesterdayMorning"),
        "inTotalToday": n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
        "outTotalToday": n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning"),
    }  # fmt: skip


BASE_COLUMNS = {
    "#Cluster Name": "cluster", "#Broker Name": "brokerName", "#BID": "brokerId",
    "#Addr": "addr", "#Version": "version", "#InTPS(LOAD)": "in", "#OutTPS(LOAD)": "out",
    "#PCWait(ms)": "pageCacheLockMs", "#Hour": "hours", "#SPACE": "commitLogDiskRatio",
}  # fmt: skip
MORE_COLUMNS = {
    "#Cluster Name": "cluster", "#Broker Name": "brokerName", "#BID": "brokerId",
    "#Addr": "addr", "#InTotalYest": "inTotalYest", "#OutTotalYest": "outTotalYest",
    "#InTotalToday": "inTotalToday", "#OutTotalToday": "outTotalToday",
}  # fmt: skip


@command(
    "clusterList",
    "List all of clusters",
    opt("m", "moreStats", "Print more stats", flag=True),
    opt("c", "clusterName", "only this cluster (ours: Apache's clusterList has no -c)"),
)
async def cluster_list(session: Session, args: Namespace) -> Output:
    """106, then 28 per broker address (ClusterListSubCommand). A broker that does not answer
    gets a row with its error and the command exits 1."""
    info = await session.cluster_info()
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    build = _more_row if args.moreStats else _base_row
    for cluster in sorted(info.cluster_addr_table):
        if args.clusterName and cluster != args.clusterName:
            continue
        for name in sorted(info.cluster_addr_table[cluster]):
            group = info.broker_addr_table.get(name)
            for bid, addr in sorted(group.broker_addrs.items()) if group else ():
                try:
                    kv = await runtime_info(session, addr)
                except AdminError as exc:
                    errors.append(str(exc))
                    kv = {}
                rows.append(build(cluster, name, bid, addr, kv))
    if args.clusterName and not rows:
        raise AdminError(f"cluster {args.clusterName} not found")
    for row in rows if not args.moreStats else ():
        row["in"] = f"{row['inTps']:.2f}({row['sendQueue']},{row['sendWaitMs']}ms)"
        row["out"] = f"{row['outTps']:.2f}({row['pullQueue']},{row['pullWaitMs']}ms)"
    columns = MORE_COLUMNS if args.moreStats else BASE_COLUMNS
    data = [{k: v for k, v in r.items() if k not in ("in", "out")} for r in rows]
    return Output(data=data, tables=[Table.of(columns, rows)], lines=errors, failed=bool(errors))
