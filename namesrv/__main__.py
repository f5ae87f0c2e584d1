"""``mqnamesrv`` / ``python -m aiorocketmq.namesrv``: start a name server."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

from aiorocketmq.namesrv.config import DEFAULT_BIND_ADDRESS, DEFAULT_LISTEN_PORT, NamesrvConfig
from aiorocketmq.namesrv.server import Namesrv
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.metrics_port import metrics_port
from aiorocketmq.remoting.metrics_token import read_token
from aiorocketmq.remoting.runtime import (
    add_common_args,
    config_error_exit,
    load_configs,
    print_config,
    run,
)
from aiorocketmq.remoting.tls_config import TlsConfig
from aiorocketmq.remoting.tls_config import load as load_tls


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mqnamesrv", description="aiorocketmq name server")
    add_common_args(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config, server, tls = load_configs(
            args,
            [NamesrvConfig, ServerConfig, TlsConfig],
            defaults={
                "listenPort": str(DEFAULT_LISTEN_PORT),
                "bindAddress": DEFAULT_BIND_ADDRESS,
            },
        )
        # the port it will use, as -p prints it (by default listenPort + 1000)
        port = metrics_port(config.metrics_port, server.listen_port)
        config = dataclasses.replace(config, metrics_port=port)
        tls = load_tls(tls)
        if port >= 0 and config.metrics_bearer_token_file:  # a token file that cannot serve
            read_token(Path(config.metrics_bearer_token_file).expanduser())
    except ConfigError as exc:
        return config_error_exit(exc)
    if args.print_config:
        print_config(config, server, tls.masked())
        return 0

    async def serve(stop: asyncio.Event) -> None:
        async with Namesrv(config, server, tls=tls):
            await stop.wait()

    return run(serve, log_level=args.log_level, log_format=args.log_format)


if __name__ == "__main__":
    sys.exit(main())
