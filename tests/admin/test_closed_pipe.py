"""Issue 31 item 7: ``mqadmin ... | head`` -- the reader of mqadmin's output goes away before
all is written. mqadmin says nothing about it (no BrokenPipeError traceback) and exits 141,
the status a shell shows for a program SIGPIPE ended (``seq 1000000 | head -1``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster import Cluster
from tests.harness import ROOT

MQADMIN = [sys.executable, "-m", "aiorocketmq.client.admin"]


@pytest.mark.parametrize("argv", [["topicList", "--json"], ["topicList"]])
def test_a_pipe_whose_reader_is_gone_is_quiet(cluster: Cluster, argv: list[str]) -> None:
    """A real pipe whose read end is closed before mqadmin writes: every write fails (EPIPE).
    (``-h`` was quiet already: argparse drops a help text it cannot write.)"""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*MQADMIN, *argv, "-n", cluster.namesrv_addr], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, timeout=120)  # fmt: skip
    finally:
        os.close(write)
    assert done.stderr.decode() == "", done.stderr.decode()
    assert done.returncode == 141


def test_head_in_a_shell_pipeline(cluster: Cluster) -> None:
    """As typed: the first line arrives, and whether or not head was gone before mqadmin's
    last write, nothing is said on stderr; pipefail shows 0 or 141, never a traceback's 1/120."""
    script = (f"set -o pipefail; {' '.join(MQADMIN)} topicList --json -n {cluster.namesrv_addr}"
              " | head -1; echo status=$?")  # fmt: skip
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.stderr == "", done.stderr
    first, status = done.stdout.splitlines()
    assert first in ("{", "[")
    assert status in ("status=0", "status=141"), done.stdout
