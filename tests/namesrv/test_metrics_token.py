"""Issue 32 item 2: /metrics can require a bearer token (``metricsBearerTokenFile``), as
Prometheus sends one from ``authorization: credentials_file:``. A real name server process:
without the token, or with a wrong one, every request gets 401 with ``WWW-Authenticate:
Bearer`` and no metric; the token is never logged; rewriting the file rotates it; a file that
cannot serve stops the start with one line naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aiorocketmq.remoting.metrics_token import KEY
from tests.harness import ROOT, serving
from tests.scrape import get, http, scrape, value

TOKEN = "s3cr3t-Token_for.metrics~42"
NEW_TOKEN = "rotated/Token+2=="


def namesrv_argv(tmp_path: Path, token_file: Path) -> list[str]:
    return ["-m", "aiorocketmq.namesrv", "--listen-port", "0",
            "--set", f"kvConfigPath={tmp_path / 'kv.json'}",
            "--set", f"{KEY}={token_file}"]  # fmt: skip


async def assert_refused(port: int, raw: bytes) -> None:
    status, headers, body = await http(port, raw)
    assert status == 401, (raw, status, body)
    assert headers["www-authenticate"].startswith("Bearer"), headers
    assert b"rocketmq_" not in body and b"process_" not in body


async def test_metrics_need_the_token_from_the_file(tmp_path: Path) -> None:
    token_file = tmp_path / "metrics.token"
    token_file.write_text(f"{TOKEN}\n")  # the newline an editor leaves is not part of it
    with serving(namesrv_argv(tmp_path, token_file)) as ns:
        port = ns.metrics_port()
        assert ns.wait_for("metrics_listening")["bearer_token"] is True
        for raw in (
            get(),  # none
            get(token="wrong"),
            get(token=TOKEN[:-1]),  # a prefix
            get(token=TOKEN + "x"),
            get(method="HEAD"),
            get("/other"),  # no 404 either: nothing is said without the token
            f"GET /metrics HTTP/1.1\r\nAuthorization: Basic {TOKEN}\r\n\r\n".encode(),
            f"GET /metrics HTTP/1.1\r\nAuthorization: {TOKEN}\r\n\r\n".encode(),
        ):
            await assert_refused(port, raw)
        samples = await scrape(port, TOKEN)
        assert value(samples, "process_cpu_seconds_total") > 0
        lower = f"GET /metrics HTTP/1.1\r\nauthorization: bearer {TOKEN}\r\n\r\n".encode()
        assert (await http(port, lower))[0] == 200  # header name and scheme: any case
        status, _, body = await http(port, get("/other", TOKEN))
        assert status == 404, body
        ns.wait_for("metrics_unauthorized", 60)  # its log comes through a pipe: waited for
        refusals = [e for e in ns.events if e.get("event") == "metrics_unauthorized"]
        assert len(refusals) == 1, refusals  # eight refusals from one host: logged once
        assert refusals[0]["client"] == "127.0.0.1"

        token_file.write_text(NEW_TOKEN)  # rotated by rewriting the file
        await assert_refused(port, get(token=TOKEN))
        assert (await http(port, get(token=NEW_TOKEN)))[0] == 200
        assert ns.wait_for("metrics_token_reloaded")

        token_file.write_text("")  # a broken rewrite: the last good token holds
        assert (await http(port, get(token=NEW_TOKEN)))[0] == 200
        assert "is empty" in ns.wait_for("metrics_token_not_reloaded")["error"]
        await assert_refused(port, get(token=""))
    log = ns.dump()
    assert TOKEN not in log and NEW_TOKEN not in log


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("", "is empty"),
        ("  \n", "is empty"),
        ("two words", "must hold one token"),
    ],
)
def test_a_token_file_that_cannot_serve_stops_the_start(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    """Serving /metrics to anyone when the operator asked for a token would be worse than not
    starting: one line on stderr names the key and the file (never what the file holds)."""
    token_file = tmp_path / "metrics.token"
    if content is not None:
        token_file.write_text(content)
    argv = [sys.executable, *namesrv_argv(tmp_path, token_file), "--set", "metricsPort=0"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"config error: {KEY}: " in done.stderr and str(token_file) in done.stderr
    assert expected in done.stderr, done.stderr
    assert "two words" not in done.stderr
    assert '"listening"' not in done.stdout


async def test_without_the_key_metrics_stay_open(tmp_path: Path) -> None:
    argv = ["-m", "aiorocketmq.namesrv", "--listen-port", "0",
            "--set", f"kvConfigPath={tmp_path / 'kv.json'}"]  # fmt: skip
    with serving(argv) as ns:
        assert ns.wait_for("metrics_listening")["bearer_token"] is False
        assert value(await scrape(ns.metrics_port()), "process_cpu_seconds_total") > 0
