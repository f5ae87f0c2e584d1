"""Importing and using the SDK configures no logging and prints nothing (issue 14 item 2):
library code emits through the standard ``logging`` module unless the program configured
structlog, so the program's own logging configuration decides what appears."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import asyncio, logging, sys
if sys.argv[1] == "debug":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(message)s")
import aiorocketmq.client, aiorocketmq.client.core.api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.server import RemotingServer

async def echo(req, ch):
    return response_to(req, 0, "ok")

async def main():
    server = RemotingServer({1: Route(echo)}, ServerConfig(listen_port=0, bind_address="127.0.0.1"))
    await server.start()
    async with RemotingClient() as cli:
        assert (await cli.invoke(f"127.0.0.1:{server.port}", RemotingCommand.request(1))).code == 0
    await server.close(drain_timeout=1.0)

asyncio.run(main())
"""


def run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_a_program_that_configures_nothing_sees_nothing() -> None:
    done = run("quiet")
    assert (done.stdout, done.stderr) == ("", "")


def test_the_programs_logging_config_decides() -> None:
    done = run("debug")
    assert done.stdout == ""
    assert "aiorocketmq.remoting.client connected addr='127.0.0.1:" in done.stderr
    assert "aiorocketmq.remoting.channel connection_opened" in done.stderr
