"""Where a broker group's controller state lives in etcd, and how each value is written.

One prefix per cluster and broker group (brokerName)::

    /aiorocketmq/controller/<cluster>/<brokerName>/master        the live master, with its lease
    /aiorocketmq/controller/<cluster>/<brokerName>/epoch         the last master epoch (no lease)
    /aiorocketmq/controller/<cluster>/<brokerName>/syncStateSet  the SyncStateSet and its epoch
    /aiorocketmq/controller/<cluster>/<brokerName>/replicas/<id> a live replica, with its lease

Values are JSON objects with 5.x's field names (SyncStateSet, ElectMasterResponseHeader):
``{"brokerId", "brokerAddr", "masterEpoch"}`` for the master, ``{"masterEpoch", "brokerId"}``
for the epoch, ``{"syncStateSet", "syncStateSetEpoch", "masterEpoch"}`` for the set and
``{"brokerId", "brokerAddr"}`` for a replica. No I/O here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

ROOT: Final = "/aiorocketmq/controller"


class LayoutError(ValueError):
    """A value under the controller's prefix that is not what this module writes."""


@dataclass(frozen=True, slots=True)
class GroupKeys:
    """The keys of one broker group (brokerName) of ``cluster``."""

    cluster: str
    broker_name: str

    def __post_init__(self) -> None:
        for name in (self.cluster, self.broker_name):
            if not name or "/" in name:
                raise ValueError(f"a cluster or broker name for etcd keys: {name!r}")

    @property
    def prefix(self) -> str:
        return f"{ROOT}/{self.cluster}/{self.broker_name}/"

    @property
    def master(self) -> str:
        return self.prefix + "master"

    @property
    def epoch(self) -> str:
        return self.prefix + "epoch"

    @property
    def sync_state_set(self) -> str:
        return self.prefix + "syncStateSet"

    @property
    def replicas(self) -> str:
        return self.prefix + "replicas/"

    def replica(self, broker_id: int) -> str:
        return f"{self.replicas}{broker_id}"

    def replica_id(self, key: str) -> int | None:
        """The brokerId of a replica key; None for any other key."""
        if not key.startswith(self.replicas):
            return None
        tail = key[len(self.replicas) :]
        return int(tail) if tail.isdigit() else None


def encode(value: dict[str, object]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def decode(raw: bytes, key: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except ValueError as e:
        raise LayoutError(f"{key}: not JSON ({e})") from None
    if not isinstance(value, dict):
        raise LayoutError(f"{key}: not a JSON object")
    return value


def field_int(value: dict[str, object], name: str, key: str) -> int:
    got = value.get(name)
    if not isinstance(got, int) or isinstance(got, bool):
        raise LayoutError(f"{key}: {name} is not an integer")
    return got


def field_str(value: dict[str, object], name: str, key: str) -> str:
    got = value.get(name)
    if not isinstance(got, str):
        raise LayoutError(f"{key}: {name} is not a string")
    return got


def field_ids(value: dict[str, object], name: str, key: str) -> frozenset[int]:
    got = value.get(name)
    if not isinstance(got, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in got
    ):
        raise LayoutError(f"{key}: {name} is not a list of brokerIds")
    return frozenset(got)
