"""Compatibility fixtures: ali-ons 3.12.0 (node) against a real cluster of our processes.

The tests skip, with a clear reason, only when node or the installed ali-ons is missing
(`make test` runs `npm ci` in tests/compat/js when npm is present)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.remoting.client import RemotingClient
from tests.broker.wire import create_topic
from tests.cluster import Cluster
from tests.util import wait_until

JS = Path(__file__).resolve().parent / "js"
# retries come back after 1 s instead of 10 s (delay level 3), so redelivery is testable
FAST_DELAYS = " ".join(["1s"] * 18)
PROTOCOL_ERRORS = {"frame_error", "bad_request", "handler_failed", "response_unencodable"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = None
    if shutil.which("node") is None:
        reason = "node is not installed: the ali-ons compatibility tests need it"
    elif not (JS / "node_modules" / "ali-ons").is_dir():
        reason = "ali-ons is not installed: run `npm ci` in tests/compat/js (make test does)"
    for item in items:
        if reason and item.get_closest_marker("compat"):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def compat_cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path)
    cluster.start_namesrv()
    try:
        for name in ("broker-a", "broker-b"):
            cluster.add_broker(name, messageDelayLevel=FAST_DELAYS)
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    events = [
        e
        for p in (cluster.namesrv, *(b.proc for b in cluster.brokers.values()))
        if p is not None
        for e in p.events
    ]
    errors = [e for e in events if e.get("event") in PROTOCOL_ERRORS]
    assert not errors, f"protocol errors logged during the scenario: {errors}"
    assert all(code == 0 for code in codes.values()), codes


@pytest.fixture
async def admin() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()


async def create_everywhere(
    cli: RemotingClient, cluster: Cluster, topic: str, queues: int = 4
) -> None:
    """protocol.md 14.4: topics must exist on every master before ali-ons uses them."""
    for broker in cluster.brokers.values():
        assert (await cli.invoke(broker.addr, create_topic(topic, queues))).code == 0


class Node:
    """A node script running in the background; its stdout JSON lines are collected."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self.stderr = b""
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, script: str, *args: str) -> Node:
        proc = await asyncio.create_subprocess_exec(
            "node",
            script,
            *args,
            cwd=JS,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            if line.startswith(b"{"):
                self.lines.append(json.loads(line))

    async def ready(self, timeout: float = 20) -> None:
        await wait_until(lambda: any(line.get("ready") for line in self.lines), timeout)

    async def wait(self, timeout: float = 120) -> int:
        """Exit code; the process is killed (by PID) if it overruns ``timeout``."""
        try:
            async with asyncio.timeout(timeout):
                code = await self.proc.wait()
                await self._reader
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise
        finally:
            assert self.proc.stderr is not None
            self.stderr = await self.proc.stderr.read()
        return code

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if "body" in line]
