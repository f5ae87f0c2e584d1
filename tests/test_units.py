"""make test's two xdist workers set a fixture wider than one test up once only if all the
tests using it are one work unit (tests/units.py)."""

from __future__ import annotations

import pytest

from tests.units import shared_fixtures, work_unit


def test_tests_sharing_a_fixture_are_one_work_unit(request: pytest.FixtureRequest) -> None:
    """Over the tests collected with this one (the whole suite under make test)."""
    units: dict[str, set[str]] = {}
    for item in request.session.items:
        for fixture in shared_fixtures(item):
            units.setdefault(fixture, set()).add(work_unit(item.nodeid))
    split = sorted(fixture for fixture, where in units.items() if len(where) > 1)
    assert not split, f"tests/units.py: add the tests sharing {split} to SHARED_DIRS or MODULES"
