"""ControllerProcessor: the controller-mode requests of 5.x's AdminBrokerProcessor
(rocketmq-all-5.3.3): NOTIFY_BROKER_ROLE_CHANGED (1008), the controller naming the group's
master, and GET_BROKER_EPOCH_CACHE (1007), this broker's epoch entries.

Both answer only with ``enableControllerMode`` ("this request only for controllerMode", as
getBrokerEpochCache answers; 5.x's notifyBrokerRoleChanged answers SUCCESS doing nothing).
1008 makes this broker master when ``masterBrokerId`` is its own id (brokerId: its id as a
slave), else a slave of ``masterAddress`` (ReplicasManager.changeBrokerRole); it is an
admin request under ACL (remoting.acl.permission). The SyncStateSet body is not read here.
"""

from __future__ import annotations

from typing import Any

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.roles import RoleError, Roles
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.role import NotifyBrokerRoleChangedRequestHeader
from aiorocketmq.remoting.protocol.route import dumps

ONLY_CONTROLLER_MODE = "this request only for controllerMode "  # 5.x's remark, its space too
NO_END = (1 << 63) - 1  # EpochEntry.endOffset of the last entry, Long.MAX_VALUE


class ControllerProcessor:
    def __init__(self, ctx: BrokerContext, roles: Roles) -> None:
        self.ctx = ctx
        self.roles = roles

    async def role_changed(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        if not self.roles.controller:
            return response_to(req, ResponseCode.SYSTEM_ERROR, ONLY_CONTROLLER_MODE)
        hdr = NotifyBrokerRoleChangedRequestHeader.from_ext(req.ext_fields)
        me = self.roles.replica_id
        try:
            if hdr.master_broker_id == me:
                await self.roles.become_master(hdr.master_epoch)
            else:
                await self.roles.become_slave(hdr.master_address, hdr.master_epoch, me)
        except RoleError as exc:
            return response_to(req, ResponseCode.SYSTEM_ERROR, str(exc))
        return response_to(req, ResponseCode.SUCCESS)

    def epoch_cache(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """EpochEntryCache: cluster, name, id, the entries (each ending where the next
        starts, the last at Long.MAX_VALUE, as EpochFileCache.getAllEntries) and maxOffset."""
        if not self.roles.controller:
            return response_to(req, ResponseCode.SYSTEM_ERROR, ONLY_CONTROLLER_MODE)
        cfg, store = self.ctx.config, self.ctx.store
        entries = store.epochs.entries
        ends = [e.start_offset for e in entries[1:]] + [NO_END]
        epoch_list: list[dict[str, Any]] = [
            {"epoch": e.epoch, "startOffset": e.start_offset, "endOffset": end}
            for e, end in zip(entries, ends, strict=True)
        ]
        body = {"clusterName": cfg.broker_cluster_name, "brokerName": cfg.broker_name,
                "brokerId": cfg.broker_id, "epochList": epoch_list,
                "maxOffset": store.max_phys_offset}  # fmt: skip
        return response_to(req, ResponseCode.SUCCESS, body=dumps(body))
