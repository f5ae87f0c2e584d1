"""The few etcd v3 calls the controller makes, typed, over aetcd (the ``failover`` extra).

aetcd (etcd's gRPC API on grpc.aio) is imported when the first client connects, so the broker
imports without it while controller mode is off. One endpoint is used at a time; a call that
fails for the connection (etcd unreachable, a deadline passed) closes it, and the next call
goes to the next endpoint of ``controllerAddr``: an etcd cluster member lost is a member
skipped. Every call has a deadline (``timeout``): a call to a partitioned etcd fails instead of
hanging, and the caller decides what that means (fence.py: nothing is assumed alive).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from aiorocketmq.broker.controller.state import Entry

T = TypeVar("T")


class EtcdError(Exception):
    """An etcd call failed: unreachable, timed out, or refused (the message says which)."""


class LeaseGone(EtcdError):
    """etcd no longer has the lease a request named (it expired or was revoked)."""


@dataclass(frozen=True, slots=True)
class Compare:
    """One compare of a transaction: ``target`` of ``key`` ``op`` ``value`` (etcd's Compare;
    an absent key has version, create and mod revision 0)."""

    key: str
    target: Literal["version", "create", "mod", "value"]
    op: Literal["==", "!=", ">", "<"]
    value: int | bytes


@dataclass(frozen=True, slots=True)
class Put:
    key: str
    value: bytes
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A prefix's keys at ``revision`` (the store's revision when it was read)."""

    revision: int
    entries: dict[str, Entry]


def parse_endpoints(controller_addr: str) -> list[tuple[str, int]]:
    """``controllerAddr``: etcd client endpoints, ``host:port`` separated by ``;`` or ``,``
    (5.x separates controller addresses with ``;``); an ``http://`` prefix is allowed."""
    out = []
    for part in controller_addr.replace(",", ";").split(";"):
        addr = part.strip().removeprefix("http://")
        if not addr:
            continue
        host, sep, port = addr.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError(f"controllerAddr: {part.strip()!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("controllerAddr names no etcd endpoint")
    return out


def _range_end(prefix: bytes) -> bytes:
    """etcd's range end for all keys under ``prefix`` (prefix + 1)."""
    tail = bytearray(prefix)
    while tail and tail[-1] == 0xFF:
        tail.pop()
    if not tail:
        return b"\0"
    tail[-1] += 1
    return bytes(tail)


class Etcd:
    def __init__(self, endpoints: Sequence[tuple[str, int]], timeout: float = 2.0) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoint")
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._next = 0
        self._client: Any = None  # aetcd.Client, untyped
        self._aetcd: Any = None
        self._closed = False

    @property
    def endpoint(self) -> str:
        """The endpoint the next call goes to."""
        host, port = self.endpoints[self._next % len(self.endpoints)]
        return f"{host}:{port}"

    async def _connected(self) -> Any:
        if self._closed:
            raise EtcdError("closed")
        if self._client is None:
            if self._aetcd is None:
                import aetcd  # the failover extra: imported only in controller mode

                self._aetcd = aetcd
            host, port = self.endpoints[self._next % len(self.endpoints)]
            self._client = self._aetcd.Client(host=host, port=port, timeout=self.timeout)
        return self._client

    async def _drop(self) -> None:
        """The connection failed: close it; the next call tries the next endpoint."""
        client, self._client = self._client, None
        self._next += 1
        if client is not None:
            with contextlib.suppress(EtcdError):
                await self._run("close", client.close(), self.timeout)

    async def close(self) -> None:
        await self._drop()
        self._closed = True

    async def _run(self, what: str, call: Coroutine[Any, Any, T], timeout: float) -> T:
        """Awaits one aetcd coroutine in a task of its own, for at most ``timeout`` s.

        Its own task: a deadline cancels that task, never the caller's, and aetcd's handling
        of cancellation (it swallows some, and turns others into errors) stays inside it --
        cancelling the caller's own task directly, a deadline was seen to leave the caller
        cancelled for good."""
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_retrieve)
            raise EtcdError(f"{what}: no answer from {self.endpoint} within {timeout:g} s")
        if task.cancelled():
            raise EtcdError(f"{what}: cancelled inside the etcd client ({self.endpoint})")
        error = task.exception()
        if error is None:
            return task.result()
        if isinstance(error, self._aetcd.exceptions.ClientError):
            raise self._failed(what, error) from error
        if isinstance(error, Exception):
            # gRPC's own (a channel closed by another call meanwhile): a failed call too
            raise EtcdError(f"{what}: {self.endpoint}: {type(error).__name__}: {error}") from error
        raise error

    async def _call(self, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        client = await self._connected()
        try:
            return await self._run(what, getattr(client, method)(*args, **kwargs), self.timeout)
        except LeaseGone:
            raise
        except EtcdError:
            if self._client is client:
                await self._drop()
            raise

    def _failed(self, what: str, e: Exception) -> EtcdError:
        """An aetcd error as ours. Only a lease etcd does not know keeps the connection:
        anything else (unreachable, no leader, a transport failure) may go better at the
        next member."""
        text = str(e) or type(e).__name__
        if "lease not found" in text:
            return LeaseGone(f"{what}: {text}")
        return EtcdError(f"{what}: {self.endpoint}: {type(e).__name__}: {text}")

    async def snapshot(self, prefix: str) -> Snapshot:
        """Every key under ``prefix``, read linearizably."""
        key = prefix.encode()
        got = await self._call("range", "get_prefix", key)
        entries = {
            bytes(kv.key).decode(): Entry(
                bytes(kv.value), int(kv.create_revision), int(kv.mod_revision), int(kv.lease)
            )
            for kv in got.kvs
        }
        return Snapshot(int(got.header.revision), entries)

    async def grant(self, ttl: int) -> tuple[int, int]:
        """A new lease: (its ID, the TTL etcd granted, in seconds)."""
        lease = await self._call("lease grant", "lease", ttl)
        return int(lease.id), int(lease.ttl)

    async def keep_alive(self, lease_id: int) -> int:
        """One keep-alive: the TTL it renewed the lease for; raises LeaseGone when etcd has
        no such lease any more (it answers TTL 0)."""
        reply = await self._call("lease keep-alive", "refresh_lease", lease_id)
        ttl = int(reply.TTL) if reply is not None else 0
        if ttl <= 0:
            raise LeaseGone(f"lease {lease_id:x} has expired")
        return ttl

    async def revoke(self, lease_id: int) -> None:
        await self._call("lease revoke", "revoke_lease", lease_id)

    async def put(self, key: str, value: bytes, lease: int = 0) -> None:
        await self._call("put", "put", key.encode(), value, lease=lease)

    async def txn(self, compares: Sequence[Compare], puts: Sequence[Put]) -> bool:
        """Applies ``puts`` if every compare holds, in one transaction; whether it did."""
        await self._connected()
        t = self._aetcd.transactions
        targets = {"version": t.Version, "create": t.Create, "mod": t.Mod, "value": t.Value}
        built = []
        for c in compares:
            target = targets[c.target](c.key.encode())
            match c.op:
                case "==":
                    built.append(target == c.value)
                case "!=":
                    built.append(target != c.value)
                case ">":
                    built.append(target > c.value)
                case "<":
                    built.append(target < c.value)
        ops = [t.Put(p.key.encode(), p.value, lease=p.lease) for p in puts]
        succeeded, _ = await self._call("txn", "transaction", built, ops, [])
        return bool(succeeded)

    async def wait_change(self, prefix: str, after: int, timeout: float) -> bool:
        """Whether a key under ``prefix`` changed after revision ``after`` (a watch from
        ``after + 1``: no change between a read and this call is missed), waiting up to
        ``timeout`` seconds for one."""
        key = prefix.encode()
        client = await self._connected()
        try:
            watch = await self._run(
                "watch",
                client.watch(key, range_end=_range_end(key), start_revision=after + 1),
                self.timeout,
            )
            try:
                return await self._run("watch", _first(watch), timeout)
            except EtcdError as e:
                if "no answer" in str(e):
                    return False  # nothing changed within timeout
                raise
            finally:
                if self._client is client:
                    with contextlib.suppress(EtcdError):
                        await self._run("watch cancel", watch.cancel(), self.timeout)
        except LeaseGone:
            raise
        except EtcdError:
            if self._client is client:
                await self._drop()
            raise


async def _first(watch: Any) -> bool:
    """Whether the watch gives an event (False: it ended without one)."""
    async for _ in watch:
        return True
    return False


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A call left behind at its deadline: its outcome is nobody's now."""
    if not task.cancelled():
        task.exception()
