"""Controller-mode views (issue 35): getSyncStateSet (ha.GetSyncStateSetSubCommand) and
getBrokerEpoch (broker.GetBrokerEpochSubCommand), read from etcd -- the controller's state --
with no broker and no name server asked.

# compat: 5.x asks its controller (getSyncStateSet) and each broker (getBrokerEpoch); ours
# reads the etcd keys the brokers keep (broker/controller/layout.py) with one range read
# (broker/controller/view.py). Both print 5.x's ``#key<TAB>value`` lines; -c lists the
# groups etcd holds for the cluster (5.x asks the name server for its broker names).
getBrokerEpoch prints each live replica with its group's master epoch and master: the
epoch file's entries (5.x's ``#Epoch: EpochEntry{...}`` with start offsets) are each
broker's own, not in etcd.

etcd's address is ``-a`` (5.x's controllerAddress; etcd's client endpoints, ``;``-separated);
TLS and etcd's user come from the ``--etcd-*`` flags, else from tools.yml (``--tools-yml``,
else ``$ROCKETMQ_HOME/conf/tools.yml``) under the broker's own key names: controllerAddr,
controllerTlsEnable, controllerTlsTrustCertPath, controllerTlsCertPath,
controllerTlsKeyPath, controllerUsername, controllerPasswordFile. The password is always
read from a file.
"""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from typing import Any

from aiorocketmq.broker.controller.access import EtcdAccess, load_access
from aiorocketmq.broker.controller.etcd import Etcd, EtcdError, parse_endpoints
from aiorocketmq.broker.controller.layout import LayoutError
from aiorocketmq.broker.controller.view import GroupView, read_groups
from aiorocketmq.client.admin.access import HOME_ENV, TOOLS_FILE, AccessError, read_tools_yml
from aiorocketmq.client.admin.output import Output
from aiorocketmq.client.admin.registry import Opt, command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.errors import ConfigError

# our flag -> (load_access's setting, the broker key tools.yml may hold instead)
FLAGS = {
    "etcd-tls": ("tls", "controllerTlsEnable"),
    "etcd-ca": ("ca", "controllerTlsTrustCertPath"),
    "etcd-cert": ("cert", "controllerTlsCertPath"),
    "etcd-key": ("key", "controllerTlsKeyPath"),
    "etcd-user": ("username", "controllerUsername"),
    "etcd-password-file": ("password", "controllerPasswordFile"),
}
ETCD_OPTIONS: tuple[Opt, ...] = (
    opt("", "etcd-tls", "TLS to etcd (tools.yml: controllerTlsEnable)", flag=True),
    opt("", "etcd-ca", "PEM CA that signs etcd's certificate (controllerTlsTrustCertPath)"),
    opt(
        "",
        "etcd-cert",
        "client certificate, PEM, for etcd's --client-cert-auth (controllerTlsCertPath)",
    ),
    opt("", "etcd-key", "its private key, PEM (controllerTlsKeyPath)"),
    opt("", "etcd-user", "etcd user (controllerUsername)"),
    opt("", "etcd-password-file", "file holding the etcd user's password (controllerPasswordFile)"),
)


def _tools_yml(args: Namespace) -> dict[str, str]:
    """tools.yml's values, as access.resolve finds the file (none: empty)."""
    path = args.tools_yml
    if path is None and os.environ.get(HOME_ENV):
        path = Path(os.environ[HOME_ENV]) / TOOLS_FILE
    if path is None:
        return {}
    try:
        return read_tools_yml(path.read_text(), str(path))
    except FileNotFoundError:
        return {}  # a named file that is missing was reported already (access.resolve)
    except OSError as exc:
        raise AccessError(f"{path}: {exc.strerror}") from None


def etcd_client(args: Namespace) -> Etcd:
    """A client for etcd at -a (else tools.yml's controllerAddr) with the run's TLS and user."""
    yml = _tools_yml(args)
    addr = (args.controllerAddress or yml.get("controllerAddr", "")).strip()
    if not addr:
        raise AdminError("no controller address: give -a (etcd's client endpoints)")
    given: dict[str, Any] = {}
    names: dict[str, str] = {}
    for flag, (setting, key) in FLAGS.items():
        value = getattr(args, flag)
        if value:
            given[setting], names[setting] = value, f"--{flag}"
        elif yml.get(key, "").strip():
            text = yml[key].strip()
            given[setting] = text.lower() == "true" if setting == "tls" else text
            names[setting] = key
        else:
            names[setting] = f"--{flag}"
    password_file = given.pop("password", "")
    try:
        access: EtcdAccess = load_access(
            tls=bool(given.pop("tls", False)),
            ca_path=given.get("ca", ""),
            cert_path=given.get("cert", ""),
            key_path=given.get("key", ""),
            username=given.get("username", ""),
            password_file=password_file,
            names=names,
        )
        endpoints = parse_endpoints(addr)
    except (ConfigError, ValueError) as exc:
        raise AdminError(str(exc)) from None
    # gRPC's C core logs a refused TLS handshake on stderr by itself; mqadmin's one line
    # (etcd.AccessDenied) says it already. Read when gRPC first starts, so set before that.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    return Etcd(endpoints, timeout=args.timeout, access=access)


async def _groups(args: Namespace) -> list[GroupView]:
    cluster = (args.clusterName or "").strip() or None
    name = (args.brokerName or "").strip() or None
    etcd = etcd_client(args)
    try:
        groups = await read_groups(etcd, cluster, name)
    except (EtcdError, LayoutError) as exc:
        raise AdminError(f"etcd: {exc}") from None
    finally:
        await etcd.close()
    if not groups:
        what = f"broker {name}" if name else f"cluster {cluster}"
        raise AdminError(f"{what}: etcd holds no controller state for it")
    return groups


def _replica(view: GroupView, broker_id: int) -> dict[str, Any]:
    """5.x's ReplicaIdentity; a member whose lease is gone has no address left in etcd."""
    state = view.state
    addr = state.replicas.get(broker_id, "")
    if not addr and state.master is not None and state.master.broker_id == broker_id:
        addr = state.master.broker_addr
    return {"brokerName": view.broker_name, "brokerId": broker_id, "brokerAddress": addr,
            "alive": broker_id in state.replicas}  # fmt: skip


def _identity(r: dict[str, Any]) -> str:
    # compat: BrokerReplicasInfo.ReplicaIdentity.toString
    return (f"ReplicaIdentity{{brokerName='{r['brokerName']}', brokerId={r['brokerId']}, "
            f"brokerAddress='{r['brokerAddress']}', alive={str(r['alive']).lower()}}}")  # fmt: skip


TARGET = (
    opt("c", "clusterName", "which cluster", group="target", required=True),
    opt("b", "brokerName", "which broker to fetch", group="target"),
)


@command(
    "getSyncStateSet",
    "Fetch syncStateSet for target brokers.",
    opt("a", "controllerAddress", "the address of controller (etcd's client endpoints)"),
    *TARGET,
    *ETCD_OPTIONS,
    needs_namesrv=False,
)
async def get_sync_state_set(session: Session, args: Namespace) -> Output:
    """# compat: GetSyncStateSetSubCommand.printData -- its lines; -i (repeat) is not taken."""
    table: dict[str, Any] = {}
    lines: list[str] = []
    for view in await _groups(args):
        s = view.state
        in_sync = [_replica(view, i) for i in sorted(s.sync_state_set)]
        not_in_sync = [_replica(view, i) for i in sorted(s.replicas.keys() - s.sync_state_set)]
        info = {
            "clusterName": view.cluster,
            "masterBrokerId": s.master.broker_id if s.master else -1,
            "masterAddress": s.master.broker_addr if s.master else "",
            "masterEpoch": s.master_epoch,
            "syncStateSetEpoch": s.sync_state_set_epoch,
            "inSyncReplicas": in_sync,
            "notInSyncReplicas": not_in_sync,
        }
        # one cluster's names are unique; -b alone may find the name in two clusters
        table[
            view.broker_name
            if view.broker_name not in table
            else f"{view.cluster}/{view.broker_name}"
        ] = info
        lines += ["", f"#brokerName\t{view.broker_name}",
                  f"#MasterBrokerId\t{info['masterBrokerId']}",
                  f"#MasterAddr\t{info['masterAddress']}", f"#MasterEpoch\t{s.master_epoch}",
                  f"#SyncStateSetEpoch\t{s.sync_state_set_epoch}",
                  f"#SyncStateSetNums\t{len(in_sync)}"]  # fmt: skip
        for r in in_sync:
            lines += ["", f"InSyncReplica:\t{_identity(r)}"]
        for r in not_in_sync:
            lines += ["", f"NotInSyncReplica:\t{_identity(r)}"]
    return Output(data={"replicasInfoTable": table}, lines=lines)


@command(
    "getBrokerEpoch",
    "Fetch broker epoch entries.",
    opt("a", "controllerAddress", "the address of controller (etcd's client endpoints)"),
    *TARGET,
    *ETCD_OPTIONS,
    needs_namesrv=False,
)
async def get_broker_epoch(session: Session, args: Namespace) -> Output:
    """# compat: GetBrokerEpochSubCommand.printData -- its header lines per broker, each live
    replica of the groups; the group's master epoch and master in place of the epoch file."""
    data: list[dict[str, Any]] = []
    lines: list[str] = []
    for view in await _groups(args):
        s = view.state
        for broker_id, addr in sorted(s.replicas.items()):
            is_master = s.master is not None and s.master.broker_id == broker_id
            record = {"clusterName": view.cluster, "brokerName": view.broker_name,
                      "brokerAddr": addr, "brokerId": broker_id, "masterEpoch": s.master_epoch,
                      "masterBrokerId": s.master.broker_id if s.master else -1,
                      "role": "MASTER" if is_master else "SLAVE" if s.master else "NONE",
                      "inSyncStateSet": broker_id in s.sync_state_set}  # fmt: skip
            data.append(record)
            lines += ["", f"#clusterName\t{view.cluster}", f"#brokerName\t{view.broker_name}",
                      f"#brokerAddr\t{addr}", f"#brokerId\t{broker_id}",
                      f"#MasterEpoch\t{s.master_epoch}",
                      f"#MasterBrokerId\t{record['masterBrokerId']}",
                      f"#Role\t{record['role']}",
                      f"#InSyncStateSet\t{str(record['inSyncStateSet']).lower()}"]  # fmt: skip
    if not data:
        raise AdminError("no live replica: etcd holds no broker of these groups now")
    return Output(data=data, lines=lines)
