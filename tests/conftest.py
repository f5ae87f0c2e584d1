"""Shared fixtures: a real RemotingServer on 127.0.0.1 port 0 in the test's loop; the
``--dist loadgroup`` of ``make test``'s xdist workers (tests/units.py); the hypothesis
profile every test runs under. Refuses to run against compiled modules older than their
sources."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Bulkhead, Route, Routes
from aiorocketmq.remoting.server import RemotingServer
from tests.units import slow_first, work_unit

ServerFactory = Callable[..., Awaitable[RemotingServer]]

ROOT = Path(__file__).resolve().parent.parent

# No per-example deadline (hypothesis' default is 200 ms): on a busy machine (the suite shares
# its cores with other work) a slow example is not a failing one, and DeadlineExceeded failed
# test_frames_round_trip_with_bodies and test_route_decoders_raise_only_value_error there
# (issue 30). Everything else, max_examples included, stays hypothesis' default or the
# test's own @settings. Loaded here, before any test module builds its @settings from it.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    """An edited module never runs as its stale compiled build (setup.py, mypyc)."""
    stale = [
        str(so.relative_to(ROOT))
        for pkg in ("remoting", "broker", "client", "namesrv", "spark")
        for so in (ROOT / pkg).rglob("*.so")
        if (py := so.with_name(so.name.split(".")[0] + ".py")).exists()
        and py.stat().st_mtime > so.stat().st_mtime
    ]
    if stale:
        raise pytest.UsageError(
            f"compiled modules older than their .py: {', '.join(stale)}; run make setup"
        )


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scope scheduling over tests/units.py's work units, handed
    out in the workers' collection order. (Not xdist's own loadgroup: pytest 9.2 silently
    drops its xdist_group marks, pytest-xdist issue 1386.)"""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order slow_first gave
    return WorkUnits(config, log)


# pytest-timeout's limit (pyproject, 60 s) is a guard against hangs, not a bound on speed: a
# ``slow`` test (10,000 queues recovered, segments filled) took longer than 60 s beside CPU
# hogs (issue 30), so slow tests without a limit of their own get this many times as long
SLOW_TIMEOUT_FACTOR = 4


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the xdist workers of ``--dist loadgroup`` (which all sort alike: xdist checks they
    collected the same list), slow units first; a run without xdist keeps file order. Slow
    tests get SLOW_TIMEOUT_FACTOR times the suite's timeout."""
    if config.getoption("loadgroup", default=False):  # set in xdist's workers only
        slow_first(items)
    limit = float(config.getini("timeout") or 0)
    for item in items:
        if limit and item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(limit * SLOW_TIMEOUT_FACTOR))


@pytest.fixture
async def start_server() -> AsyncIterator[ServerFactory]:
    """``await start_server(routes, bulkheads, **ServerConfig fields)``: a started server."""
    servers: list[RemotingServer] = []

    async def start(
        routes: Routes, bulkheads: Mapping[str, Bulkhead] | None = None, **config: object
    ) -> RemotingServer:
        cfg = ServerConfig(listen_port=0, bind_address="127.0.0.1", **config)  # type: ignore[arg-type]
        server = RemotingServer(routes, cfg, bulkheads=bulkheads)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close(drain_timeout=1.0)


__all__ = ["Route", "ServerFactory"]
