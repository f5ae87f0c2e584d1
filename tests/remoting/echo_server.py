"""A RemotingServer process for tests: echo, slow echo and sized replies.

Run as ``python -m tests.remoting.echo_server --listen-port 0 [--set key=value ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.runtime import (
    add_common_args,
    config_error_exit,
    load_configs,
    print_config,
    run,
)
from aiorocketmq.remoting.server import RemotingServer
from aiorocketmq.remoting.tls_config import TlsConfig
from aiorocketmq.remoting.tls_config import load as load_tls
from aiorocketmq.remoting.tls_context import server_tls

ECHO, SLOW, SIZED, HANG = 1, 2, 3, 4


async def echo(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    return response_to(req, ResponseCode.SUCCESS, ext_fields=req.ext_fields, body=req.body)


async def slow(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    await asyncio.sleep(0.5)
    return await echo(req, ch)


async def sized(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    return response_to(req, ResponseCode.SUCCESS, body=b"x" * int(req.ext_fields["size"]))


async def hang(req: RemotingCommand, ch: Channel) -> RemotingCommand:
    await asyncio.Event().wait()  # until the graceful stop gives up and cancels it
    raise AssertionError("unreachable")


ROUTES = {ECHO: Route(echo), SLOW: Route(slow), SIZED: Route(sized), HANG: Route(hang)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="echo_server")
    add_common_args(parser)
    args = parser.parse_args(argv)
    try:
        config, tls = load_configs(args, [ServerConfig, TlsConfig])
        tls = load_tls(tls)
    except ConfigError as exc:
        return config_error_exit(exc)
    if args.print_config:
        print_config(config, tls.masked())
        return 0

    async def serve(stop: asyncio.Event) -> None:
        async with RemotingServer(ROUTES, config, tls=server_tls(tls)):
            await stop.wait()

    return run(serve, log_level=args.log_level, log_format=args.log_format or "json")


if __name__ == "__main__":
    sys.exit(main())
