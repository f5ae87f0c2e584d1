"""``mqadmin <command> [options] [--json]``: parse, run one command, print, exit.

Exit codes: 0 done; 1 the command failed (a refusal, an unreachable or silent server, or some
rows failed: the error is printed on stderr in one line); 2 bad usage (argparse's); 141 the
reader of our output went away (``mqadmin topicList --json | head -1``): nothing more is
printed, no traceback, and the status is what a shell shows for a program SIGPIPE ended
(128 + 13), as ``seq 1000000 | head -1`` ends.
The name server comes from ``-n``, else (as Apache's tools read it) the NAMESRV_ADDR variable,
else 127.0.0.1:9876 -- ours: the local cluster ``make run`` starts (Apache's would ask an
address server over HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from aiorocketmq.client import MQClientError
from aiorocketmq.client.admin import access
from aiorocketmq.client.admin.output import Output, render_json, render_tables
from aiorocketmq.client.admin.registry import COMMANDS, MODULES, Command
from aiorocketmq.client.admin.session import AdminError, Session

PROG = "mqadmin"
DEFAULT_NAMESRV = "127.0.0.1:9876"


def namesrv_addrs(option: str | None, env: dict[str, str] | os._Environ[str]) -> list[str]:
    """``-n``'s "a:p;b:p" list, else $NAMESRV_ADDR's, else the local default."""
    text = option if option is not None else (env.get("NAMESRV_ADDR") or DEFAULT_NAMESRV)
    return [a.strip() for a in text.split(";") if a.strip()]


def load_commands() -> dict[str, Command]:
    for module in MODULES:
        importlib.import_module(module)
    return COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="RocketMQ admin commands (Apache's names and flags) for aiorocketmq and "
        "Apache RocketMQ 4.x clusters. `mqadmin <command> -h` shows a command's options.",
    )
    subs = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for cmd in load_commands().values():
        sub = subs.add_parser(cmd.name, help=cmd.summary, description=cmd.summary)
        _add_options(sub, cmd)
    return parser


def _add_options(sub: argparse.ArgumentParser, cmd: Command) -> None:
    if cmd.needs_namesrv:
        sub.add_argument("-n", "--namesrvAddr", dest="namesrvAddr", metavar="ADDR",
                         help="name server address list, e.g. 127.0.0.1:9876;192.168.0.1:9876"
                         " (default: $NAMESRV_ADDR, else 127.0.0.1:9876)")  # fmt: skip
    sub.add_argument("--json", action="store_true", help="print JSON instead of tables")
    sub.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                     help="each request's timeout (default 5)")  # fmt: skip
    access.add_arguments(sub)
    groups: dict[str, Any] = {}  # OptionGroup name -> argparse's mutually exclusive group
    for o in cmd.options:
        target: Any = sub
        if o.group:
            if o.group not in groups:
                required = any(p.required for p in cmd.options if p.group == o.group)
                groups[o.group] = sub.add_mutually_exclusive_group(required=required)
            target = groups[o.group]
        flags = [f"-{o.short}", f"--{o.long}"] if o.short else [f"--{o.long}"]
        if o.flag:
            target.add_argument(*flags, dest=o.long, action="store_true", help=o.help)
        else:
            target.add_argument(*flags, dest=o.long, metavar=o.long, type=o.kind,
                                required=o.required and not o.group, default=o.default,
                                help=o.help)  # fmt: skip


async def _run(cmd: Command, args: argparse.Namespace) -> Output:
    addrs = namesrv_addrs(args.namesrvAddr, os.environ) if cmd.needs_namesrv else []
    warnings: list[str] = []
    signing = access.resolve(args, os.environ, warnings)
    for line in warnings:
        print(f"{PROG} {cmd.name}: {line}", file=sys.stderr)
    session = Session(addrs, timeout=args.timeout, access=signing)
    try:
        if cmd.needs_namesrv and not session.namesrv_addrs:
            raise AdminError("no name server: -n is empty")
        return await cmd.run(session, args)
    finally:
        await session.close()


CLOSED_PIPE = 128 + signal.SIGPIPE  # 141: the status a shell shows for `seq 1e6 | head -1`


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; quiet on a closed pipe (the Python docs' "Note on SIGPIPE")."""
    try:
        try:
            return _main(argv)
        finally:  # here, not at exit (-h too): a flush failing at exit prints a traceback
            sys.stdout.flush()
    except BrokenPipeError:
        # the rest goes nowhere: the interpreter's own flush at exit finds nothing to fail on
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return CLOSED_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = COMMANDS[args.command]
    try:
        out = asyncio.run(_run(cmd, args))
    except (AdminError, MQClientError, ValueError) as exc:  # access.AccessError too
        print(f"{PROG} {cmd.name}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} {cmd.name}: interrupted", file=sys.stderr)
        return 130
    if args.json:
        render_json(out, sys.stdout)
    else:
        render_tables(out)
    return 1 if out.failed else 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
