"""Cluster commands: clusterList (ClusterListSubCommand) and clusterRT
(CLusterSendMsgRTCommand)."""

from __future__ import annotations

import asyncio
import datetime
import math
import time
from argparse import Namespace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from aiorocketmq.client import Message, MQClientError, Producer, api
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.route import decode_kv_table


async def runtime_info(session: Session, addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO (28): the broker's KVTable."""
    resp = await session.ok(addr, api.request(C.GET_BROKER_RUNTIME_INFO))
    return decode_kv_table(resp.body)


RUNTIME_KEYS = (
    "timerReadBehind",
    "timerOffsetBehind",
    "timerCongestNum",
    "timerEnqueueTps",
    "timerDequeueTps",
)


def progress_cell(kv: dict[str, str]) -> str | None:
    """# compat: ClusterListSubCommand's "#Timer(Progress)" cell; None without the keys."""
    if not all(k in kv for k in RUNTIME_KEYS):
        return None
    try:
        read, offset, congest = (int(kv[k]) for k in RUNTIME_KEYS[:3])
        enq, deq = float(kv["timerEnqueueTps"]), float(kv["timerDequeueTps"])
    except ValueError:
        return None
    return f"{read}-{offset}({_f1(congest / 10000.0)}w, {_f1(enq)}, {_f1(deq)})"


def _f1(value: float) -> str:
    """Java's ``%.1f``: the shortest decimal of the value, rounded half up (Python's rounds
    the binary value half to even: 1.25 -> "1.2", Java's "1.3")."""
    return str(Decimal(repr(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


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
        # 5.x: a broker with the timer wheel reports its progress (timerReadBehind ...)
        **({"timerProgress": timer} if (timer := progress_cell(kv)) is not None else {}),
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


def _with_timer(columns: dict[str, str]) -> dict[str, str]:
    """5.x's columns: "#Timer(Progress)" after "#OutTPS(LOAD)"."""
    out: dict[str, str] = {}
    for header, key in columns.items():
        out[header] = key
        if header == "#OutTPS(LOAD)":
            out["#Timer(Progress)"] = "timerProgress"
    return out


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
    if any("timerProgress" in r for r in rows):  # compat: 5.x ClusterListSubCommand's column
        for row in rows:
            row.setdefault("timerProgress", "")
        columns = _with_timer(columns)
    data = [{k: v for k, v in r.items() if k not in ("in", "out")} for r in rows]
    return Output(data=data, tables=[Table.of(columns, rows)], lines=errors, failed=bool(errors))


# ------------------------------------------------------------------ clusterRT


RT_COLUMNS = {
    "#Cluster Name": "cluster", "#Broker Name": "brokerName", "#RT": "rt",
    "#successCount": "successCount", "#failCount": "failCount",
}  # fmt: skip


@command(
    "clusterRT",
    "List All clusters Message Send RT",
    opt("a", "amount", "message amount | default 100", kind=int, default=100),
    opt("s", "size", "message size | default 128 Byte", kind=int, default=128),
    opt("c", "cluster", "cluster name | default display all cluster"),
    opt("p", "printLog", "print as tlog | default false", default="false"),
    opt("m", "machineRoom", "machine room name | default noname", default="noname"),
    opt("i", "interval", "seconds between rounds | default 10", kind=float, default=10.0),
    opt(
        "",
        "rounds",
        "rounds to run | default 1 (ours: Apache's runs until killed)",
        kind=int,
        default=1,
    ),
)
async def cluster_rt(session: Session, args: Namespace) -> Output:
    """106, then a producer sends ``-a`` messages of ``-s`` bytes to the topic named after
    each broker (105, 34, 310; 35 at the end) and reports the mean send time in ms of all but
    the first (CLusterSendMsgRTCommand). ``--rounds`` rounds, ``-i`` seconds apart."""
    if args.amount < 1 or args.size < 0 or args.rounds < 1 or args.interval < 0:
        raise AdminError("-a and --rounds must be at least 1, -s and -i not negative")
    info = await session.cluster_info()
    clusters = [args.cluster.strip()] if args.cluster else sorted(info.cluster_addr_table)
    for name in clusters:
        if name not in info.cluster_addr_table:
            raise AdminError(f"cluster [{name}] not exist")
    targets = [(c, b) for c in clusters for b in sorted(info.cluster_addr_table[c])]
    group = str(int(time.time() * 1000))
    producer = Producer(group, namesrv_addr=";".join(session.namesrv_addrs),
                        instance_name=f"mqadmin-{group}",
                        send_msg_timeout=int(session.timeout * 1000),
                        **session.keywords)  # fmt: skip
    rows: list[dict[str, Any]] = []
    log: list[str] = []  # -p true: "time|room|cluster|broker|rt" as Apache's tlog lines
    async with producer:
        for round_no in range(args.rounds):
            if round_no:
                await asyncio.sleep(args.interval)
            for cluster, broker in targets:
                rt, ok, bad = await _send_rt(producer, broker, args.amount, args.size)
                rows.append({"round": round_no + 1, "cluster": cluster, "brokerName": broker,
                             "rt": round(rt, 2), "successCount": ok, "failCount": bad})  # fmt: skip
                half_up = math.floor(rt + 0.5)  # BigDecimal.setScale(0, ROUND_HALF_UP)
                log.append(f"{_gmt8_now()}|{args.machineRoom.strip()}|{cluster}|{broker}|{half_up}")
    if args.printLog.strip().lower() == "true":
        return Output(data=rows, lines=log)
    return Output(data=rows, tables=[Table.of(RT_COLUMNS, rows)])


async def _send_rt(
    producer: Producer, topic: str, amount: int, size: int
) -> tuple[float, int, int]:
    """Send ``amount`` messages; the mean time in ms of all sends but the first (which also
    looks the route up; ours: with one message, its time), the successes and the failures."""
    msg = Message(topic, b"a" * size)
    times: list[float] = []
    ok = bad = 0
    for _ in range(amount):
        start = time.perf_counter()
        try:
            await producer.send(msg)
            ok += 1
        except MQClientError:
            bad += 1
        times.append(time.perf_counter() - start)
    rest = times[1:] or times
    return sum(rest) * 1000 / len(rest), ok, bad


def _gmt8_now() -> str:
    """CLusterSendMsgRTCommand.getCurTime: GMT+8 ``yyyy-MM-dd HH:mm:ss``."""
    tz = datetime.timezone(datetime.timedelta(hours=8))
    return datetime.datetime.now(tz).strftime("%Y-%m-%d %H:%M:%S")
