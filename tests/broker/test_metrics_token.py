"""Issue 32 item 2: a broker's /metrics can require a bearer token (``metricsBearerTokenFile``)
as the name server's can (tests/namesrv/test_metrics_token.py has the details). A real broker
process: 401 with ``WWW-Authenticate: Bearer`` without the token or with a wrong one, its
metrics with it; a file that cannot serve stops the broker before its store opens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from aiorocketmq.remoting.metrics_token import KEY
from tests.broker.test_metrics_port import broker_argv
from tests.harness import ROOT, serving
from tests.scrape import get, http, matching, scrape

TOKEN = "broker-metrics-token-7f3a"


async def test_a_brokers_metrics_need_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    argv = broker_argv(tmp_path, "broker-a", 0, "--set", f"{KEY}={token_file}")
    with serving(argv) as broker:
        port = broker.metrics_port()
        for raw in (get(), get(token="nope"), get(token=TOKEN.upper())):
            status, headers, body = await http(port, raw)
            assert status == 401, (raw, status, body)
            assert headers["www-authenticate"].startswith("Bearer"), headers
            assert b"rocketmq_" not in body
        info = matching(await scrape(port, TOKEN), "rocketmq_broker_info")
        assert {dict(labels)["broker"] for labels in info} == {"broker-a"}
    assert TOKEN not in broker.dump()


def test_a_missing_token_file_stops_the_broker(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-token"
    argv = [sys.executable, *broker_argv(tmp_path, "broker-a", 0, "--set", f"{KEY}={missing}"),
            "--set", "metricsPort=0"]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"config error: {KEY}: cannot read {missing}" in done.stderr, done.stderr
    assert not (tmp_path / "broker-a").exists()  # the store was never opened
