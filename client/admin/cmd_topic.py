"""Topic commands (tools/command/topic, 4.9.8): updateTopic (UpdateTopicSubCommand), deleteTopic
(DeleteTopicSubCommand), topicList (TopicListSubCommand), topicRoute (TopicRouteSubCommand),
topicStatus (TopicStatusSubCommand), topicClusterList (TopicClusterSubCommand)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from aiorocketmq.client import api
from aiorocketmq.client.admin import api_cluster as capi
from aiorocketmq.client.admin import requests as rq
from aiorocketmq.client.admin.cmd_broker import cluster_addrs, on_every_namesrv
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.route import ClusterInfo, TopicRouteData
from aiorocketmq.remoting.protocol.topic import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    TopicSysFlag,
)


def _true(text: str | None) -> bool:
    """Java's Boolean.parseBoolean of an option's value."""
    return (text or "").strip().lower() == "true"


def _topic_config(args: Namespace) -> dict[str, Any]:
    """The TopicConfig updateTopic builds: 8/8 queues and perm 6 unless given."""
    return {
        "topicName": args.topic.strip(),
        "readQueueNums": args.readQueueNums,
        "writeQueueNums": args.writeQueueNums,
        "perm": args.perm,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": TopicSysFlag.build(_true(args.unit), _true(args.hasUnitSub)),
        "order": _true(args.order),
    }


def _config_text(c: dict[str, Any]) -> str:
    """TopicConfig.toString, as updateTopic prints it."""
    return (f"TopicConfig [topicName={c['topicName']}, readQueueNums={c['readQueueNums']}, "
            f"writeQueueNums={c['writeQueueNums']}, perm={capi.perm_text(c['perm'])}, "
            f"topicFilterType={c['topicFilterType']}, topicSysFlag={c['topicSysFlag']}, "
            f"order={'true' if c['order'] else 'false'}]")  # fmt: skip


@command(
    "updateTopic",
    "Update or create topic",
    opt("b", "brokerAddr", "create topic to which broker", group="target", required=True),
    opt("c", "clusterName", "create topic to which cluster", group="target"),
    opt("t", "topic", "topic name", required=True),
    opt("r", "readQueueNums", "set read queue nums", kind=int, default=8),
    opt("w", "writeQueueNums", "set write queue nums", kind=int, default=8),
    opt("p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]", kind=int, default=6),
    opt("o", "order", "set topic's order(true|false)"),
    opt("u", "unit", "is unit topic (true|false)"),
    opt("s", "hasUnitSub", "has unit sub (true|false)"),
)
async def update_topic(session: Session, args: Namespace) -> Output:
    """-b: 17 to that broker; -c: 106, then 17 to every master of the cluster. With ``-o
    true`` the order conf goes to the name servers' KV (ORDER_TOPIC_CONFIG): -b merges it
    into the old value (106, 101, 100), -c writes every broker of the cluster (100)."""
    config = _topic_config(args)
    req = api.create_topic(config["topicName"], config["writeQueueNums"], config["perm"],
                           read_queues=config["readQueueNums"], order=config["order"],
                           topic_sys_flag=config["topicSysFlag"])  # fmt: skip
    if args.brokerAddr:
        addrs = [args.brokerAddr.strip()]
    else:
        addrs = [a for _, a in await cluster_addrs(session, args.clusterName.strip(), False)]
    brokers: list[dict[str, Any]] = []
    lines: list[str] = []
    for addr in addrs:
        try:
            await session.ok(addr, req)
        except AdminError as exc:
            if len(addrs) == 1:
                raise
            brokers.append({"brokerAddr": addr, "ok": False, "error": str(exc)})
            lines.append(f"create topic to {addr} failed: {exc}")
            continue
        brokers.append({"brokerAddr": addr, "ok": True})
        lines.append(f"create topic to {addr} success.")
    order_conf: str | None = None
    kv_failed: dict[str, str] = {}
    if config["order"]:
        order_conf, kv_failed = await _order_conf(session, args, config)
        where = "broker" if args.brokerAddr else "cluster"
        lines.append(f"set {where} orderConf. isOrder=true, orderConf=[{order_conf}]")
        lines.extend(kv_failed.values())
    lines.append(_config_text(config))
    data = {"topicConfig": config, "brokers": brokers, "orderConf": order_conf}
    failed = bool(kv_failed) or not all(b["ok"] for b in brokers)
    return Output(data=data, lines=lines, failed=failed)


async def _order_conf(
    session: Session, args: Namespace, config: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    """DefaultMQAdminExtImpl.createOrUpdateOrderConf: the value written to every name server,
    and the name servers that did not take it."""
    topic, queues = config["topicName"], config["writeQueueNums"]
    info = await session.cluster_info()
    if args.brokerAddr:
        name = capi.broker_name_of(info, args.brokerAddr.strip())
        if name is None:
            raise AdminError(f"broker {args.brokerAddr.strip()} not found in the cluster table")
        resp = await session.namesrv(
            capi.get_kv(capi.ORDER_TOPIC_CONFIG, topic), R.SUCCESS, R.QUERY_NOT_FOUND
        )
        value = capi.merge_order_conf(resp.ext_fields.get("value"), f"{name}:{queues}")
    else:
        names = sorted(info.cluster_addr_table.get(args.clusterName.strip(), []))
        value = ";".join(f"{n}:{queues}" for n in names)
    _, failed = await on_every_namesrv(session, capi.put_kv(capi.ORDER_TOPIC_CONFIG, topic, value))
    return value, failed


@command(
    "deleteTopic",
    "Delete topic from broker and NameServer.",
    opt("t", "topic", "topic name", required=True),
    opt("c", "clusterName", "delete topic from which cluster", required=True),
)
async def delete_topic(session: Session, args: Namespace) -> Output:
    """106, 215 to every master of the cluster, then 216 (topic and cluster) to every name
    server; not the name servers when a broker refused (Java stops at the first)."""
    topic, cluster = args.topic.strip(), args.clusterName.strip()
    addrs = [a for _, a in await cluster_addrs(session, cluster, False)]
    errors = []
    for addr in addrs:
        try:
            await session.ok(addr, rq.delete_topic_in_broker(topic))
        except AdminError as exc:
            errors.append(str(exc))
    if errors:
        if len(errors) == len(addrs):
            raise AdminError(errors[0])
        data = {"topic": topic, "cluster": cluster, "brokers": addrs, "errors": errors}
        return Output(data=data, lines=errors, failed=True)
    lines = [f"delete topic [{topic}] from cluster [{cluster}] success."]
    done, failed = await on_every_namesrv(session, rq.delete_topic_in_namesrv(topic, cluster))
    lines.append(f"delete topic [{topic}] from NameServer success." if not failed else
                 "; ".join(failed.values()))  # fmt: skip
    data = {"topic": topic, "cluster": cluster, "brokers": addrs, "namesrvAddrs": sorted(done)}
    if failed:
        data["errors"] = list(failed.values())
    return Output(data=data, lines=lines, failed=bool(failed))


@command(
    "topicList",
    "Fetch all topic list from name server",
    opt("c", "clusterModel", "clusterModel", flag=True),
)
async def topic_list(session: Session, args: Namespace) -> Output:
    """206; -c: 106, 206, then per topic (not %RETRY%/%DLQ%) 105 and 300 to its first broker."""
    resp = await session.namesrv(api.all_topics())
    topics = api.parse_topic_list(resp)
    if not args.clusterModel:
        return Output(data=topics, lines=topics)
    info = await session.cluster_info()
    data: list[dict[str, Any]] = []
    errors: list[str] = []
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        cluster, groups = await _cluster_and_groups(session, info, topic, errors)
        data.append({"cluster": cluster, "topic": topic, "groups": groups})
    rows = [[d["cluster"] or "", d["topic"], g] for d in data for g in d["groups"] or [""]]
    table = Table(["#Cluster Name", "#Topic", "#Consumer Group"], rows)
    return Output(data=data, tables=[table], lines=errors, failed=bool(errors))


async def _cluster_and_groups(
    session: Session, info: ClusterInfo, topic: str, errors: list[str]
) -> tuple[str | None, list[str]]:
    """The topic's cluster (that of its route's first broker) and the groups consuming it (300
    to that broker). A refusal leaves them empty as in Java; no answer is an error."""
    try:
        route = await session.route(topic)
        if not route.broker_datas:
            return None, []
        first = route.broker_datas[0]
        cluster = capi.cluster_of(info, first.broker_name)
        addr = rq.select_addr(first)
        if addr is None:
            return cluster, []
        resp = await session.ok(addr, rq.consume_by_who(topic))
        return cluster, rq.parse_group_list(resp.body)
    except AdminError as exc:
        if not exc.refused:
            errors.append(f"{topic}: {exc}")
        return None, []


ROUTE_COLUMNS = ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue",
                 "#Perm"]  # fmt: skip


@command(
    "topicRoute",
    "Examine topic route info",
    opt("t", "topic", "topic name", required=True),
    opt(
        "l", "list", "Use list format to print data (ours: always; --json for the route)", flag=True
    ),
)
async def topic_route(session: Session, args: Namespace) -> Output:
    """105. The table is Apache's -l format; --json prints the TopicRouteData."""
    route = await session.route(args.topic.strip())
    return Output(data=route.to_json(), tables=[_route_table(route)])


def _route_table(route: TopicRouteData) -> Table:
    queues = {q.broker_name: q for q in route.queue_datas}
    rows: list[list[Any]] = []
    for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(broker.broker_name)
        addrs = "{" + ", ".join(f"{k}={v}" for k, v in sorted(broker.broker_addrs.items())) + "}"
        counts = (q.read_queue_nums, q.write_queue_nums, q.perm) if q else ("", "", "")
        rows.append([broker.cluster, broker.broker_name, addrs, *counts])
    total_r = sum(q.read_queue_nums for q in queues.values())
    total_w = sum(q.write_queue_nums for q in queues.values())
    rows.append(["Total:", len(queues), "", total_r, total_w, ""])
    return Table(ROUTE_COLUMNS, rows)


STATUS_COLUMNS = {
    "#Broker Name": "brokerName", "#QID": "queueId", "#Min Offset": "minOffset",
    "#Max Offset": "maxOffset", "#Last Updated": "lastUpdated",
}  # fmt: skip


@command(
    "topicStatus",
    "Examine topic Status info",
    opt("t", "topic", "topic name", required=True),
)
async def topic_status(session: Session, args: Namespace) -> Output:
    """105, then 202 to each broker of the route (its master, else a slave)."""
    topic = args.topic.strip()
    route = await session.route(topic)
    queues: list[capi.QueueStats] = []
    errors: list[str] = []
    for broker in route.broker_datas:
        addr = rq.select_addr(broker)
        if addr is None:
            continue
        try:
            resp = await session.ok(addr, rq.topic_stats(topic))
            queues.extend(capi.parse_topic_stats(resp.body))
        except (AdminError, ValueError) as exc:
            errors.append(str(exc) if isinstance(exc, AdminError) else f"{addr}: {exc}")
    if not queues:
        raise AdminError(errors[0] if errors else "Not found the topic stats info")
    queues.sort(key=lambda q: (q.topic, q.broker_name, q.queue_id))  # MessageQueue.compareTo
    data = [q.to_json() for q in queues]
    rows = [{**d, "lastUpdated": capi.human_ms(d["lastUpdateTimestamp"])
             if d["lastUpdateTimestamp"] > 0 else ""} for d in data]  # fmt: skip
    return Output(data=data, tables=[Table.of(STATUS_COLUMNS, rows)], lines=errors,
                  failed=bool(errors))  # fmt: skip


@command(
    "topicClusterList",
    "get cluster info for topic",
    opt("t", "topic", "topic name", required=True),
)
async def topic_cluster_list(session: Session, args: Namespace) -> Output:
    """106 and 105: the clusters holding the route's first broker name."""
    info = await session.cluster_info()
    route = await session.route(args.topic.strip())
    if not route.broker_datas:
        raise AdminError(f"topic {args.topic.strip()} has no broker in its route")
    name = route.broker_datas[0].broker_name
    clusters = sorted(c for c, names in info.cluster_addr_table.items() if name in names)
    return Output(data=clusters, lines=clusters)
