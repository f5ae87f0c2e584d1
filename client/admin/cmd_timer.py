"""Timer wheel views (issue 36): getTimerCheckPoint (GET_TIMER_CHECK_POINT, 60) and
getTimerMetrics (GET_TIMER_METRICS, 61), to one broker (-b) or every broker of a cluster (-c).

# compat: 5.3.3's mqadmin has no command for 60/61 -- its brokers ask them of each other
# (BrokerOuterAPI.getTimerCheckPoint / getTimerMetrics, SlaveSynchronize); the names here are
# AdminBrokerProcessor's handlers'. 5.x's own timer view is clusterList's "#Timer(Progress)"
# cell (ClusterListSubCommand: ``%d-%d(%.1fw, %.1f, %.1f)`` of the runtime info's
# timerReadBehind, timerOffsetBehind, timerCongestNum / 10,000, timerEnqueueTps,
# timerDequeueTps); getTimerMetrics prints that line too when the broker's runtime info has
# those keys.

Both bodies are read as a 5.x broker writes them as well as ours: the checkpoint as
TimerCheckpoint.encode's 56 bytes (7 big-endian longs) or a JSON object; the metrics as
TimerMetricsSerializeWrapper's JSON (``timingCount``: per topic ``count`` and ``timeStamp``,
``dataVersion``) or any JSON object of figures.
"""

from __future__ import annotations

import json
import struct
from argparse import Namespace
from typing import Any

from aiorocketmq.client import api
from aiorocketmq.client.admin.cmd_broker import cluster_addrs
from aiorocketmq.client.admin.cmd_cluster import progress_cell, runtime_info
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.codes import RequestCode as C

# compat: TimerCheckpoint.encode -- the order of its longs
CHECKPOINT_FIELDS = (
    "lastReadTimeMs",
    "lastTimerLogFlushPos",
    "lastTimerQueueOffset",
    "masterTimerQueueOffset",
    "dataVersion.stateVersion",
    "dataVersion.timestamp",
    "dataVersion.counter",
)
TARGET = (
    opt("b", "brokerAddr", "Broker address", group="target", required=True),
    opt("c", "clusterName", "which cluster", group="target"),
)


def decode_checkpoint(body: bytes) -> dict[str, Any]:
    """TimerCheckpoint.decode (32 bytes before 5.x added dataVersion, 56 after) or JSON."""
    if len(body) in (32, 56) and not body.lstrip().startswith(b"{"):
        count = len(body) // 8
        return dict(zip(CHECKPOINT_FIELDS, struct.unpack(f">{count}q", body), strict=False))
    return _json_object(body, "timer checkpoint")


def _json_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise AdminError(f"the broker's {what} is neither JSON nor 5.x's binary form") from None
    if not isinstance(value, dict):
        raise AdminError(f"the broker's {what} is not a JSON object")
    return value


def flat(value: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested objects as dotted keys, sorted: one row each."""
    rows: list[tuple[str, Any]] = []
    for key in sorted(value):
        item = value[key]
        if isinstance(item, dict) and item:
            rows += flat(item, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", item))
    return rows


async def _addrs(session: Session, args: Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr.strip()]
    return [addr for _, addr in await cluster_addrs(session, args.clusterName.strip(), True)]


async def _each(
    session: Session, args: Namespace, code: int, read: Any, title: str
) -> tuple[list[dict[str, Any]], list[str]]:
    data: list[dict[str, Any]] = []
    errors: list[str] = []
    addrs = await _addrs(session, args)
    for addr in addrs:
        try:
            resp = await session.ok(addr, api.request(code))
            record: dict[str, Any] = {"brokerAddr": addr, title: read(resp.body)}
            if code == C.GET_TIMER_METRICS:
                cell = progress_cell(await runtime_info(session, addr))
                if cell is not None:
                    record["timerProgress"] = cell
            data.append(record)
        except AdminError as exc:
            if len(addrs) == 1:
                raise
            errors.append(str(exc))
    return data, errors


@command(
    "getTimerCheckPoint",
    "Fetch the timer wheel's checkpoint of a broker (GET_TIMER_CHECK_POINT)",
    *TARGET,
)
async def get_timer_check_point(session: Session, args: Namespace) -> Output:
    """60 to one broker, or (-c: after 106) to every master and slave of the cluster."""
    data, errors = await _each(
        session, args, C.GET_TIMER_CHECK_POINT, decode_checkpoint, "checkpoint"
    )
    tables = [Table.pairs(flat(d["checkpoint"]), d["brokerAddr"]) for d in data]
    return Output(data=data, tables=tables, lines=errors, failed=bool(errors))


@command(
    "getTimerMetrics",
    "Fetch the timer wheel's metrics of a broker (GET_TIMER_METRICS)",
    *TARGET,
)
async def get_timer_metrics(session: Session, args: Namespace) -> Output:
    """61 (and 28, for 5.x's #Timer(Progress) cell) to one broker, or every broker of -c."""
    data, errors = await _each(
        session, args, C.GET_TIMER_METRICS, lambda b: _json_object(b, "timer metrics"), "metrics"
    )
    tables: list[Table] = []
    lines: list[str] = []
    for d in data:
        metrics = dict(d["metrics"])
        timing = metrics.pop("timingCount", None)
        tables.append(Table.pairs(flat(metrics), d["brokerAddr"]))
        if isinstance(timing, dict) and timing:  # 5.x: waiting messages per topic
            rows = [{"topic": t, "count": m.get("count"), "timeStamp": m.get("timeStamp")}
                    for t, m in sorted(timing.items()) if isinstance(m, dict)]  # fmt: skip
            tables.append(Table.of({"#Topic": "topic", "#Count": "count",
                                    "#TimeStamp": "timeStamp"}, rows,
                                   f"{d['brokerAddr']} timingCount"))  # fmt: skip
        if "timerProgress" in d:
            lines.append(f"{d['brokerAddr']}  #Timer(Progress)  {d['timerProgress']}")
    return Output(data=data, tables=tables, lines=lines + errors, failed=bool(errors))
