"""Fixtures: mqcluster launchers on free ports, none of whose servers outlives the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.deploy.launcher import Launcher, close


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    started = Launcher(tmp_path)
    try:
        yield started
    finally:
        close(started)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., Launcher]]:
    """``launch(*options, names=[...])``: a launcher with more options (``--slaves 1``), which
    must start the servers ``names`` in that order."""
    started: list[Launcher] = []

    def start(*options: str, names: list[str]) -> Launcher:
        started.append(Launcher(tmp_path / f"run{len(started)}", *options, names=names))
        return started[-1]

    try:
        yield start
    finally:
        for each in started:
            close(each)
