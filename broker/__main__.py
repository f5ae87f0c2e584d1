"""``mqbroker`` / ``python -m aiorocketmq.broker``: start a broker."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from pathlib import Path

from aiorocketmq.broker.config import DEFAULT_LISTEN_PORT, BrokerConfig
from aiorocketmq.broker.controller.access import access_from_config
from aiorocketmq.broker.server import Broker
from aiorocketmq.broker.store.config import StoreConfig
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
    parser = argparse.ArgumentParser(prog="mqbroker", description="aiorocketmq broker")
    add_common_args(parser)
    parser.add_argument(
        "-n",
        "--namesrv-addr",
        metavar="ADDR[;ADDR]",
        help="name servers (else namesrvAddr, else NAMESRV_ADDR)",
    )
    return parser.parse_args(argv)


def configs(
    args: argparse.Namespace,
) -> tuple[BrokerConfig, StoreConfig, ServerConfig, TlsConfig]:
    broker, store, server, tls = load_configs(
        args,
        [BrokerConfig, StoreConfig, ServerConfig, TlsConfig],
        defaults={"listenPort": str(DEFAULT_LISTEN_PORT)},
    )
    namesrv = args.namesrv_addr or broker.namesrv_addr or os.environ.get("NAMESRV_ADDR", "")
    # the metrics port it will use, as -p prints it (by default listenPort + 1000)
    metrics = metrics_port(broker.metrics_port, server.listen_port)
    broker = dataclasses.replace(broker, namesrv_addr=namesrv, metrics_port=metrics)
    if metrics >= 0 and broker.metrics_bearer_token_file:  # a token file that cannot serve
        read_token(Path(broker.metrics_bearer_token_file).expanduser())
    if broker.enable_controller_mode:  # etcd's TLS files and password file, read now
        access_from_config(broker)
    return broker, store, server, load_tls(tls)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        broker, store, server, tls = configs(args)
    except ConfigError as exc:
        return config_error_exit(exc)
    if args.print_config:
        print_config(broker, store, server, tls.masked())
        return 0

    async def serve(stop: asyncio.Event) -> None:
        async with Broker(broker, store, server, config_file=args.config, tls=tls):
            await stop.wait()

    return run(serve, log_level=args.log_level, log_format=args.log_format)


if __name__ == "__main__":
    sys.exit(main())
