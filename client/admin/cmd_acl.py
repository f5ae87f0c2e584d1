"""ACL commands (tools/command/acl in 4.9.8): updateAclConfig (UpdateAccessConfigSubCommand),
deleteAclConfig (DeleteAccessConfigSubCommand), updateGlobalWhiteAddr
(UpdateGlobalWhiteAddrSubCommand), clusterAclConfigVersion
(ClusterAclConfigVersionListSubCommand): codes 50, 51, 53 and 52, to one broker (-b) or every
broker of a cluster (-c: masters and slaves; clusterAclConfigVersion asks the masters).

Each broker keeps its own ACL files (r#1966): -c changes every broker's.
compat: 4.9.8's updateAclConfig also prints the config object (``PlainAccessConfig@1b6d3586``,
an object id); here only the success lines, and never the secret.
"""

from __future__ import annotations

import json
import time
from argparse import Namespace
from typing import Any

from aiorocketmq.client import api
from aiorocketmq.client.admin.cmd_broker import cluster_addrs
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.codes import RequestCode as C

VERSION_COLUMNS = {
    "#Cluster Name": "clusterName",
    "#Broker Name": "brokerName",
    "#Broker Addr": "brokerAddr",
    "#AclFilePath": "aclFilePath",
    "#AclConfigVersionNum": "counter",
    "#AclLastUpdateTime": "lastUpdateTime",
}


async def _brokers(session: Session, args: Namespace, *, slaves: bool = True) -> list[str]:
    """-b's broker, else the brokers of -c's cluster (CommandUtil.fetchMasterAndSlave...)."""
    if args.brokerAddr:
        return [args.brokerAddr.strip()]
    return [addr for _, addr in await cluster_addrs(session, args.clusterName.strip(), slaves)]


def _split(text: str) -> str:
    # compat: the perms go on the wire as the comma list given (String.split, then join)
    return ",".join(p for p in text.strip().split(","))


@command(
    "updateAclConfig",
    "Update acl config yaml file in broker",
    opt("b", "brokerAddr", "update acl config file to which broker", group="target",
        required=True),
    opt("c", "clusterName", "update acl config file to which cluster", group="target"),
    opt("a", "accessKey", "set accessKey in acl config file", required=True),
    opt("s", "secretKey", "set secretKey in acl config file", required=True),
    opt("w", "whiteRemoteAddress", "set white ip Address for account in acl config file"),
    opt("i", "defaultTopicPerm", "set default topicPerm in acl config file"),
    opt("u", "defaultGroupPerm", "set default GroupPerm in acl config file"),
    opt("t", "topicPerms", "set topicPerms list,eg: topicA=DENY,topicD=SUB"),
    opt("g", "groupPerms", "set groupPerms list,eg: groupD=DENY,groupD=SUB"),
    opt("m", "admin", "set admin flag in acl config file"),
)  # fmt: skip
async def update_acl_config(session: Session, args: Namespace) -> Output:
    """50 to each broker (MQClientAPIImpl.createPlainAccessConfig)."""
    ext: dict[str, str] = {
        "accessKey": args.accessKey.strip(),
        "secretKey": args.secretKey.strip(),
        # compat: Boolean.parseBoolean -- anything but "true" is false
        "admin": "true" if (args.admin or "").strip().lower() == "true" else "false",
    }
    for key in ("whiteRemoteAddress", "defaultTopicPerm", "defaultGroupPerm"):
        if getattr(args, key) is not None:
            ext[key] = getattr(args, key).strip()
    for key in ("topicPerms", "groupPerms"):
        if getattr(args, key) is not None:
            ext[key] = _split(getattr(args, key))
    lines = []
    for addr in await _brokers(session, args):
        await session.ok(addr, api.request(C.UPDATE_AND_CREATE_ACL_CONFIG, ext))
        lines.append(f"create or update plain access config to {addr} success.")
    return Output(data={"accessKey": ext["accessKey"], "brokers": len(lines)}, lines=lines)


@command(
    "deleteAclConfig",
    "Delete Acl Config Account in broker",
    opt("b", "brokerAddr", "delete acl config account from which broker", group="target",
        required=True),
    opt("c", "clusterName", "delete acl config account from which cluster", group="target"),
    opt("a", "accessKey", "set accessKey in acl config file for deleting which account",
        required=True),
)  # fmt: skip
async def delete_acl_config(session: Session, args: Namespace) -> Output:
    """51 to each broker (MQClientAPIImpl.deletePlainAccessConfig)."""
    access_key = args.accessKey.strip()
    lines = []
    for addr in await _brokers(session, args):
        await session.ok(addr, api.request(C.DELETE_ACL_CONFIG, {"accessKey": access_key}))
        lines.append(f"delete plain access config account from {addr} success.")
    lines.append(f"account's accesskey is:{access_key}")
    return Output(data={"accessKey": access_key, "brokers": len(lines) - 1}, lines=lines)


@command(
    "updateGlobalWhiteAddr",
    "Update global white address for acl Config File in broker",
    opt("b", "brokerAddr", "update global white address to which broker", group="target",
        required=True),
    opt("c", "clusterName", "update global white address to which cluster", group="target"),
    opt("g", "globalWhiteRemoteAddresses",
        "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*", required=True),
    opt("p", "aclFileFullPath",
        "update global white address of specified acl file,eg: /xxx/plain_test.yml"),
)  # fmt: skip
async def update_global_white_addr(session: Session, args: Namespace) -> Output:
    """53 to each broker (MQClientAPIImpl.updateGlobalWhiteAddrsConfig); without -p the
    broker's default ACL file."""
    ext = {"globalWhiteAddrs": args.globalWhiteRemoteAddresses.strip()}
    if args.aclFileFullPath:
        ext["aclFileFullPath"] = args.aclFileFullPath.strip()
    lines = []
    for addr in await _brokers(session, args):
        await session.ok(addr, api.request(C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext))
        lines.append(f"update global white remote addresses to {addr} success.")
    return Output(data={"globalWhiteAddrs": ext["globalWhiteAddrs"]}, lines=lines)


@command(
    "clusterAclConfigVersion",
    "List all of acl config version information in cluster",
    opt("b", "brokerAddr", "query acl config version for which broker", group="target",
        required=True),
    opt("c", "clusterName", "query acl config version for specified cluster", group="target"),
)  # fmt: skip
async def cluster_acl_config_version(session: Session, args: Namespace) -> Output:
    """52 to one broker, or to each master of the cluster: a row per ACL file with its
    dataVersion (counter, and the time of its last update)."""
    rows: list[dict[str, Any]] = []
    for addr in await _brokers(session, args, slaves=False):
        resp = await session.ok(addr, api.request(C.GET_BROKER_CLUSTER_ACL_INFO))
        ext = resp.ext_fields
        try:
            versions = json.loads(ext.get("allAclFileVersion") or "{}")
            for path, version in sorted(versions.items()):
                rows.append({
                    "clusterName": ext.get("clusterName"), "brokerName": ext.get("brokerName"),
                    "brokerAddr": ext.get("brokerAddr"), "aclFilePath": path,
                    "counter": int(version.get("counter", 0)),
                    "lastUpdateTime": _time(int(version.get("timestamp", 0))),
                })  # fmt: skip
        except (ValueError, AttributeError, TypeError) as exc:
            raise AdminError(f"{addr}: bad allAclFileVersion: {exc}") from None
    done = "broker's" if args.brokerAddr else "cluster's"
    return Output(data=rows, tables=[Table.of(VERSION_COLUMNS, rows)],
                  lines=[f"get {done} plain access config version success."])  # fmt: skip


def _time(ms: int) -> str:
    """UtilAll.YYYY_MM_DD_HH_MM_SS in local time, as SimpleDateFormat prints it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
