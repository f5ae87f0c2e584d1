"""The controller's state read, never changed: what mqadmin's getSyncStateSet and getBrokerEpoch
show. One linearizable range read of the controller's keys -- a group's, a cluster's or every
cluster's -- with no lease and no Controller: a reader is no broker, and etcd's role for it
may be read-only on the prefix.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from aiorocketmq.broker.controller.etcd import Etcd
from aiorocketmq.broker.controller.layout import ROOT, GroupKeys
from aiorocketmq.broker.controller.state import Entry, GroupState, read_state


@dataclass(frozen=True, slots=True)
class GroupView:
    """One broker group (brokerName) of ``cluster``, as etcd holds it."""

    cluster: str
    broker_name: str
    state: GroupState


def _group_of(key: str) -> tuple[str, str] | None:
    """(cluster, brokerName) of a key under ROOT; None for anything else."""
    if not key.startswith(ROOT + "/"):
        return None
    parts = key[len(ROOT) + 1 :].split("/", 2)
    return (parts[0], parts[1]) if len(parts) == 3 and parts[0] and parts[1] else None


async def read_groups(
    etcd: Etcd, cluster: str | None = None, broker_name: str | None = None
) -> list[GroupView]:
    """Every group etcd has a key of (its master, epoch, SyncStateSet or a live replica),
    of ``cluster`` and named ``broker_name`` when given, sorted by cluster and name. Raises
    etcd.EtcdError (AccessDenied when etcd refuses the reader) or layout.LayoutError."""
    if cluster and broker_name:
        prefix = GroupKeys(cluster, broker_name).prefix
    elif cluster:
        prefix = f"{ROOT}/{GroupKeys(cluster, '-').cluster}/"
    else:
        prefix = ROOT + "/"
    snap = await etcd.snapshot(prefix)
    groups: dict[tuple[str, str], dict[str, Entry]] = defaultdict(dict)
    for key, entry in snap.entries.items():
        group = _group_of(key)
        if group is not None and (broker_name is None or group[1] == broker_name):
            groups[group][key] = entry
    return [
        GroupView(c, name, read_state(GroupKeys(c, name), entries, snap.revision))
        for (c, name), entries in sorted(groups.items())
    ]
