"""Broker and name-server commands: brokerStatus (BrokerStatusSubCommand), getBrokerConfig
(GetBrokerConfigCommand), updateBrokerConfig (UpdateBrokerConfigSubCommand), wipeWritePerm /
addWritePerm (namesrv.WipeWritePermSubCommand / AddWritePermSubCommand), updateKvConfig /
deleteKvConfig (namesrv.UpdateKvConfigCommand / DeleteKvConfigCommand)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from aiorocketmq.client.admin import api_cluster as api
from aiorocketmq.client.admin.cmd_cluster import runtime_info
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session, refusal
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.route import MASTER_ID


async def cluster_addrs(session: Session, cluster: str, slaves: bool) -> list[tuple[str, str]]:
    """(role, address) of the brokers of ``cluster`` by name, each master before its slaves
    (CommandUtil.fetchMasterAndSlaveDistinguish; fetchMasterAddrByClusterName without
    ``slaves``)."""
    info = await session.cluster_info()
    if cluster not in info.cluster_addr_table:
        raise AdminError(f"cluster {cluster} not found in the name server's cluster table")
    out: list[tuple[str, str]] = []
    for name in sorted(info.cluster_addr_table[cluster]):
        group = info.broker_addr_table.get(name)
        for bid, addr in sorted(group.broker_addrs.items()) if group else ():
            if bid == MASTER_ID or slaves:
                out.append(("master" if bid == MASTER_ID else "slave", addr))
    return out


async def _targets(session: Session, args: Namespace, slaves: bool) -> list[tuple[str, str]]:
    """-b's broker, else -c's brokers."""
    if args.brokerAddr:
        return [("", args.brokerAddr.strip())]
    return await cluster_addrs(session, args.clusterName.strip(), slaves)


@command(
    "brokerStatus",
    "Fetch broker runtime status data",
    opt("b", "brokerAddr", "Broker address", group="target", required=True),
    opt("c", "clusterName", "which cluster", group="target"),
)
async def broker_status(session: Session, args: Namespace) -> Output:
    """28 to one broker, or (-c: after 106) to every master and slave of the cluster."""
    targets = await _targets(session, args, slaves=True)
    data: list[dict[str, Any]] = []
    errors: list[str] = []
    for _, addr in targets:
        try:
            data.append({"brokerAddr": addr, "runtime": dict(sorted(
                (await runtime_info(session, addr)).items()))})  # fmt: skip
        except AdminError as exc:
            if len(targets) == 1:
                raise
            errors.append(str(exc))
    tables = [Table.pairs(d["runtime"].items(), d["brokerAddr"]) for d in data]
    return Output(data=data, tables=tables, lines=errors, failed=bool(errors))


@command(
    "getBrokerConfig",
    "Get broker config by cluster or special broker!",
    opt("b", "brokerAddr", "get which broker", group="target", required=True),
    opt("c", "clusterName", "get which cluster", group="target"),
)
async def get_broker_config(session: Session, args: Namespace) -> Output:
    """26 to one broker, or (-c: after 106) to each master, then its slaves."""
    targets = await _targets(session, args, slaves=True)
    data: list[dict[str, Any]] = []
    errors: list[str] = []
    for role, addr in targets:
        try:
            resp = await session.ok(addr, api.get_broker_config())
            config = api.parse_properties(resp.body)
        except (AdminError, ValueError) as exc:
            if len(targets) == 1:
                raise
            errors.append(f"{addr}: {exc}" if isinstance(exc, ValueError) else str(exc))
            continue
        data.append({"brokerAddr": addr, "role": role or None, "config": config})
    tables = [
        Table.pairs(d["config"].items(), f"{d['role'] or 'broker'} {d['brokerAddr']}") for d in data
    ]
    return Output(data=data, tables=tables, lines=errors, failed=bool(errors))


@command(
    "updateBrokerConfig",
    "Update broker's config",
    opt("b", "brokerAddr", "update which broker", group="target", required=True),
    opt("c", "clusterName", "update which cluster", group="target"),
    opt("k", "key", "config key", required=True),
    opt("v", "value", "config value", required=True),
)
async def update_broker_config(session: Session, args: Namespace) -> Output:
    """25 (body ``key=value``) to one broker, or (-c: after 106) to every master."""
    addrs = [addr for _, addr in await _targets(session, args, slaves=False)]
    req = api.update_broker_config({args.key.strip(): args.value.strip()})
    data: list[dict[str, Any]] = []
    lines: list[str] = []
    for addr in addrs:
        try:
            resp = await session.ok(addr, req)
        except AdminError as exc:
            if len(addrs) == 1:
                raise
            data.append({"brokerAddr": addr, "ok": False, "error": str(exc)})
            lines.append(f"update broker config failed, {addr}: {exc}")
            continue
        data.append({"brokerAddr": addr, "ok": True, "remark": resp.remark or None})
        note = f" ({resp.remark})" if resp.remark else ""
        lines.append(f"update broker config success, {addr}{note}")
    failed = not all(d["ok"] for d in data)
    return Output(data=data, lines=lines, failed=failed)


# ------------------------------------------------------------------ name-server commands


async def on_every_namesrv(
    session: Session, req: RemotingCommand
) -> tuple[dict[str, RemotingCommand], dict[str, str]]:
    """``req`` to every name server of -n: the successful answers, and why the others failed.
    Raises the first failure when none succeeded."""
    done: dict[str, RemotingCommand] = {}
    failed: dict[str, str] = {}
    for addr, resp in (await session.each_namesrv(req)).items():
        if isinstance(resp, str):
            failed[addr] = resp
        elif resp.code != R.SUCCESS:
            failed[addr] = str(refusal(resp, addr))
        else:
            done[addr] = resp
    if not done:
        raise AdminError(next(iter(failed.values()), "no name server"))
    return done, failed


async def _write_perm(session: Session, args: Namespace, wipe: bool) -> Output:
    name = args.brokerName.strip()
    verb, key = ("wipe", "wipeTopicCount") if wipe else ("add", "addTopicCount")
    req = api.wipe_write_perm(name) if wipe else api.add_write_perm(name)
    done, failed = await on_every_namesrv(session, req)
    data: list[dict[str, Any]] = []
    lines: list[str] = []
    for addr in session.namesrv_addrs:
        if addr in done:
            count = int(done[addr].ext_fields.get(key, "0"))
            data.append({"namesrvAddr": addr, "brokerName": name, key: count})
            lines.append(f"{verb} write perm of broker[{name}] in name server[{addr}] OK, {count}")
        else:
            data.append({"namesrvAddr": addr, "brokerName": name, "error": failed[addr]})
            lines.append(f"{verb} write perm of broker[{name}] in name server[{addr}] Failed: "
                         f"{failed[addr]}")  # fmt: skip
    return Output(data=data, lines=lines, failed=bool(failed))


@command(
    "wipeWritePerm",
    "Wipe write perm of broker in all name server you defined in the -n param",
    opt("b", "brokerName", "broker name", required=True),
)
async def wipe_write_perm(session: Session, args: Namespace) -> Output:
    """205 to every name server."""
    return await _write_perm(session, args, wipe=True)


@command(
    "addWritePerm",
    "Add write perm of broker in all name server you defined in the -n param",
    opt("b", "brokerName", "broker name", required=True),
)
async def add_write_perm(session: Session, args: Namespace) -> Output:
    """327 to every name server."""
    return await _write_perm(session, args, wipe=False)


async def _kv(
    session: Session, req: RemotingCommand, message: str, record: dict[str, Any]
) -> Output:
    done, failed = await on_every_namesrv(session, req)
    lines = [message] if not failed else [f"{a}: {e}" for a, e in failed.items()]
    record = {**record, "namesrvAddrs": sorted(done)}
    if failed:
        record["errors"] = failed
    return Output(data=record, lines=lines, failed=bool(failed))


@command(
    "updateKvConfig",
    "Create or update KV config.",
    opt("s", "namespace", "set the namespace", required=True),
    opt("k", "key", "set the key name", required=True),
    opt("v", "value", "set the key value", required=True),
)
async def update_kv_config(session: Session, args: Namespace) -> Output:
    """100 to every name server."""
    ns, key, value = args.namespace.strip(), args.key.strip(), args.value.strip()
    return await _kv(session, api.put_kv(ns, key, value),
                     "create or update kv config to namespace success.",
                     {"namespace": ns, "key": key, "value": value})  # fmt: skip


@command(
    "deleteKvConfig",
    "Delete KV config.",
    opt("s", "namespace", "set the namespace", required=True),
    opt("k", "key", "set the key name", required=True),
)
async def delete_kv_config(session: Session, args: Namespace) -> Output:
    """102 to every name server."""
    ns, key = args.namespace.strip(), args.key.strip()
    return await _kv(session, api.delete_kv(ns, key),
                     "delete kv config from namespace success.",
                     {"namespace": ns, "key": key})  # fmt: skip
