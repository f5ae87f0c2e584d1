"""Issue 19 "Done when": the README's quick start is `make run`, then `mqadmin clusterList`,
then the SDK example, exactly as a new user types them. The cluster is `make run`'s launcher
(on free ports, so NAMESRV_ADDR points the commands at it instead of :9876); the second
terminal's lines run as written in one bash session."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.deploy.launcher import Launcher, close
from tests.harness import ROOT

pytestmark = pytest.mark.slow


def quick_start() -> tuple[list[str], list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    first, second = re.findall(r"```sh\n(.*?)```", section, re.S)
    return first.splitlines(), second.splitlines()


def test_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    first, second = quick_start()
    assert first == ["make run"]
    assert second[:2] == ["source .venv/bin/activate", "mqadmin clusterList"]
    launcher = Launcher(tmp_path / "data")
    try:
        launcher.wait_ready()
        env = {**os.environ, "NAMESRV_ADDR": launcher.addr("namesrv")}
        if not (ROOT / ".venv" / "bin" / "activate").exists():  # a checkout using another venv
            env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
            second = second[1:]
        script = "set -e\n" + "".join(f"echo '>>> {line}'\n{line}\n" for line in second)
        out, code = launcher.run_beside(["bash", "-c", script], env)
        launcher.proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert launcher.wait_exit() == 0, launcher.text
    finally:
        close(launcher)
    assert code == 0, out
    steps = dict(re.findall(r">>> ([^\n]+)\n(.*?)(?=>>> |\Z)", out, re.S))
    cluster = steps["mqadmin clusterList"]
    assert re.search(r"^DefaultCluster\s+broker-a\s+0\s+127\.0\.0\.1:", cluster, re.M), cluster
    assert re.search(r"^DefaultCluster\s+broker-b\s+0\s+127\.0\.0\.1:", cluster, re.M), cluster
    assert "all 10 received" in steps["python examples/quickstart.py"]
    progress = steps["mqadmin consumerProgress -g quickstart_consumers"]
    assert "QuickStart" in progress and re.search(r"Diff Total:\s*0\b", progress), progress
