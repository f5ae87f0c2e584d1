"""Role-change headers of 5.x's controller mode (remoting/protocol/header/
NotifyBrokerRoleChangedRequestHeader.java, rocketmq-all-5.3.3)."""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire


@header
class NotifyBrokerRoleChangedRequestHeader(Header):
    """NOTIFY_BROKER_ROLE_CHANGED (1008): the group's master, its epoch and id; the body is
    the SyncStateSet JSON (``syncStateSet``, ``syncStateSetEpoch``)."""

    master_address: str = field(metadata=wire("masterAddress"))
    master_epoch: Int32 = field(metadata=wire("masterEpoch"))
    master_broker_id: int = field(metadata=wire("masterBrokerId"))
    sync_state_set_epoch: Int32 | None = field(default=None, metadata=wire("syncStateSetEpoch"))
