"""statsAll (StatsAllSubCommand, 4.9.8): per topic and consumer group, the backlog, the TPS in
and out over the last minute and the messages in and out over 24 hours."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Awaitable
from typing import Any, TypeVar

from aiorocketmq.client import api
from aiorocketmq.client.admin import api_cluster as capi
from aiorocketmq.client.admin import requests as rq
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.route import MASTER_ID, TopicRouteData
from aiorocketmq.remoting.protocol.topic import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    retry_topic,
)

T = TypeVar("T")

COLUMNS = {
    "#Topic": "topic", "#Consumer Group": "group", "#Accumulation": "accumulation",
    "#InTPS": "inTps", "#OutTPS": "outTps", "#InMsg24Hour": "inMsg24Hour",
    "#OutMsg24Hour": "outMsg24Hour",
}  # fmt: skip


@command(
    "statsAll",
    "Topic and Consumer tps stats",
    opt("a", "activeTopic", "print active topic only", flag=True),
    opt("t", "topic", "print select topic only"),
)
async def stats_all(session: Session, args: Namespace) -> Output:
    """206; per topic (not %RETRY%/%DLQ%): 105, 300 to its first broker, 315 TOPIC_PUT_NUMS to
    each master; per group: 315 GROUP_GET_NUMS to each master, 105 of the group's retry topic
    and 208 to each of its brokers. Refusals count as nothing, as in Java (a topic whose route
    or groups are refused is left out); a broker that does not answer is reported."""
    topics = api.parse_topic_list(await session.namesrv(api.all_topics()))
    selected = (args.topic or "").strip()
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        if selected and topic != selected:
            continue
        rows.extend(await _topic_rows(session, topic, args.activeTopic, errors))
    table = Table.of(COLUMNS, (_shown(r) for r in rows))
    return Output(data=rows, tables=[table], lines=errors, failed=bool(errors))


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row as Apache prints it: a topic nobody consumes has NO_CONSUMER as its 24-hour out."""
    if row["group"] is not None:
        return row
    return {**row, "group": "", "outTps": "", "outMsg24Hour": "NO_CONSUMER"}


async def _quiet(call: Awaitable[T], errors: list[str], where: str) -> T | None:
    """``call``'s result; None when refused, and noted too when unanswered."""
    try:
        return await call
    except AdminError as exc:
        if not exc.refused:
            errors.append(f"{where}: {exc}")
    return None


async def _topic_rows(
    session: Session, topic: str, active: bool, errors: list[str]
) -> list[dict[str, Any]]:
    """StatsAllSubCommand.printTopicDetail."""
    route = await _quiet(session.route(topic), errors, topic)
    if route is None:
        return []
    first = rq.select_addr(route.broker_datas[0]) if route.broker_datas else None
    groups: list[str] = []
    if first is not None:
        resp = await _quiet(session.ok(first, rq.consume_by_who(topic)), errors, topic)
        if resp is None:
            return []
        groups = rq.parse_group_list(resp.body)
    in_tps, in_sum = await _figures(session, route, capi.TOPIC_PUT_NUMS, topic, errors)
    if not groups:
        if active and in_sum <= 0:
            return []
        return [{"topic": topic, "group": None, "accumulation": 0, "inTps": in_tps,
                 "outTps": None, "inMsg24Hour": in_sum, "outMsg24Hour": None}]  # fmt: skip
    rows = []
    for group in groups:
        key = f"{topic}@{group}"
        out_tps, out_sum = await _figures(session, route, capi.GROUP_GET_NUMS, key, errors)
        if active and in_sum <= 0 and out_sum <= 0:
            continue
        backlog = await _backlog(session, group, topic, errors)
        rows.append({"topic": topic, "group": group, "accumulation": backlog, "inTps": in_tps,
                     "outTps": out_tps, "inMsg24Hour": in_sum,
                     "outMsg24Hour": out_sum})  # fmt: skip
    return rows


async def _figures(
    session: Session, route: TopicRouteData, name: str, key: str, errors: list[str]
) -> tuple[float, int]:
    """315 ``name``/``key`` to every master of the route: the TPS and 24-hour counts summed."""
    tps, total = 0.0, 0
    for broker in route.broker_datas:
        addr = broker.broker_addrs.get(MASTER_ID)
        if addr is None:
            continue
        resp = await _quiet(session.ok(addr, capi.view_stats(name, key)), errors, key)
        if resp is None:
            continue
        try:
            figures = capi.parse_stats(resp.body)
        except ValueError as exc:
            errors.append(f"{addr}: {exc}")
            continue
        tps += figures.tps
        total += figures.sum24
    return tps, total


async def _backlog(session: Session, group: str, topic: str, errors: list[str]) -> int:
    """examineConsumeStats(group, topic).computeTotalDiff, at least 0: 105 of the group's retry
    topic, 208 to each of its brokers."""
    route = await _quiet(session.route(retry_topic(group)), errors, group)
    total = 0
    for broker in route.broker_datas if route else ():
        addr = rq.select_addr(broker)
        if addr is None:
            continue
        resp = await _quiet(session.ok(addr, rq.consume_stats(group, topic)), errors, group)
        if resp is not None:
            try:
                total += capi.parse_consume_diff(resp.body)
            except ValueError as exc:
                errors.append(f"{group}: {exc}")
    return max(total, 0)
