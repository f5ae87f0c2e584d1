"""How ``make test`` shares the suite between pytest-xdist workers (``-n 3``; pyproject's
addopts has ``--dist loadgroup``, which tests/conftest.py implements with these units).

A work unit -- what one worker runs -- is one test, except that the tests sharing a fixture
wider than one test are one unit, so that it is set up once: the tests of a directory with a
session or package fixture (the Spark session, one JVM; the admin cluster), those of a
module with module fixtures. tests/test_units.py checks these tables against the fixtures."""

from __future__ import annotations

import pytest

SHARED_DIRS = ("tests/admin/", "tests/spark/")
SHARED_MODULES = (
    "tests/broker/test_acl.py",
    "tests/broker/test_metrics.py",
    "tests/broker/test_names.py",
    "tests/broker/test_reply.py",
    "tests/client/test_request_reply.py",
    "tests/client/test_trace.py",
    "tests/remoting/test_bad_input.py",
    "tests/test_wheel.py",
)
_WIDER = ("session", "package", "module")


def work_unit(nodeid: str) -> str:
    """The unit of the test ``nodeid``: its shared directory or module, or itself."""
    module = nodeid.split("::", 1)[0]
    shared = [d for d in SHARED_DIRS if module.startswith(d)]
    if shared:
        return shared[0]
    return module if module in SHARED_MODULES else nodeid


def shared_fixtures(item: pytest.Item) -> list[str]:
    """The fixtures of ours wider than one test that ``item`` uses, each named with the
    tests that share it: ``"cluster of tests/admin"``, ``"cluster of tests/x/test_y.py"``."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    defs = [d[-1] for d in info.name2fixturedefs.values() if d]
    wider = [d for d in defs if d.baseid.startswith("tests") and d.scope in _WIDER]
    module = item.nodeid.split("::", 1)[0]
    return [f"{d.argname} of {module if d.scope == 'module' else d.baseid}" for d in wider]


def slow_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` (stable) so that the units with slow tests come first, larger units
    first: no long test starts last and keeps one worker busy alone."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)

    def key(item: pytest.Item) -> tuple[bool, int]:
        unit = units[work_unit(item.nodeid)]
        return all(i.get_closest_marker("slow") is None for i in unit), -len(unit)

    items.sort(key=key)
