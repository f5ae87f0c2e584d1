"""mqadmin against a real cluster: one name server and brokers broker-a and broker-b, shared by
the tests of this directory (each test uses its own topic and group names; a test that changes
cluster-wide state -- permissions, broker config -- puts it back)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client.admin.cli import main
from tests.cluster import Cluster, running


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("admin")
    with running(root, ["broker-a", "broker-b"]) as c:
        yield c


def mqadmin(*argv: str) -> Run:
    """``mqadmin argv...`` in this process (the same ``main`` the console script runs); argparse
    usage errors come back as code 2."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture
def admin(cluster: Cluster) -> Any:
    """``admin("topicList")`` = ``mqadmin topicList -n <the cluster's name server>``."""

    def run(name: str, *argv: str) -> Run:
        return mqadmin(name, "-n", cluster.namesrv_addr, *argv)

    return run
