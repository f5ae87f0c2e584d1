"""A broker's etcd lease, kept alive, and its replica key registered under it.

Every ``interval`` (a quarter of the TTL) one keep-alive; each success moves the Fence
(fence.py) to its send time + TTL - margin. A keep-alive etcd answers with TTL 0 means the
lease expired (the keys held with it, the master key among them, are gone): the fence drops at
once and a new lease is granted, and the replica key (layout.py ``replicas/<id>``) is written
again under it. A keep-alive that fails (etcd unreachable, partitioned, no leader) changes
nothing: the fence runs out by itself, before etcd can expire the lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiorocketmq.broker.controller.etcd import Etcd, EtcdError, LeaseGone
from aiorocketmq.broker.controller.fence import Fence, boot_clock
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.throttle import Throttle

log = get_logger(__name__)


class LeaseKeeper:
    def __init__(
        self,
        etcd: Etcd,
        ttl: int,
        fence: Fence,
        register: Callable[[int], Awaitable[None]],
        *,
        changed: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = boot_clock,
        throttle: Throttle | None = None,
    ) -> None:
        """``register(lease_id)`` writes the keys held with a new lease; ``changed()`` is
        called when the lease is granted or lost (the controller looks at the state again)."""
        self.etcd = etcd
        self.ttl = ttl
        self.fence = fence
        self.interval = ttl / 4
        self.lease_id: int | None = None
        self.registered = False
        self.keep_alives = 0
        self._register = register
        self._changed = changed
        self._clock = clock
        self.failures = 0  # rounds that failed (etcd unreachable, our access refused, ...)
        # once a minute per cause: a failure repeats every interval while it lasts
        self._throttle = throttle or Throttle()

    def valid(self) -> bool:
        return self.lease_id is not None and self.fence.valid(self._clock())

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            try:
                await self._round()
            except EtcdError as e:
                self.failures += 1
                left_out = self._throttle.allow(("controller_lease_failed", type(e), str(e)))
                if left_out is not None:
                    log.warning("controller_lease_failed", error=str(e), lease=self.lease_id,
                                left_out=left_out)  # fmt: skip
            await asyncio.sleep(self.interval)

    async def _round(self) -> None:
        if self.lease_id is None:
            sent = self._clock()
            lease_id, ttl = await self.etcd.grant(self.ttl)
            self.lease_id, self.registered = lease_id, False
            self.fence.renewed(sent, ttl)
            log.info("controller_lease_granted", lease=f"{lease_id:x}", ttl=ttl)
        elif self.registered:
            sent = self._clock()
            try:
                ttl = await self.etcd.keep_alive(self.lease_id)
            except LeaseGone:
                self._lost()
                return
            self.fence.renewed(sent, ttl)
            self.keep_alives += 1
        if not self.registered:
            try:
                await self._register(self.lease_id)
            except LeaseGone:
                self._lost()
                return
            self.registered = True
            self._changed()

    def _lost(self) -> None:
        log.warning("controller_lease_lost", lease=f"{self.lease_id or 0:x}")
        self.fence.lost()
        self.lease_id, self.registered = None, False
        self._changed()

    async def revoke(self) -> None:
        """Gives the lease up (a clean stop): its keys go at once, not after the TTL."""
        lease_id, self.lease_id, self.registered = self.lease_id, None, False
        self.fence.lost()
        if lease_id is not None:
            await self.etcd.revoke(lease_id)
