"""The command table: each command's name, flags (Apache's short and long names) and coroutine.

A command module declares its commands with ``@command(...)``; ``cli`` imports every module
listed in ``MODULES`` so they register, then builds one argparse sub-parser per command.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from argparse import Namespace

    from aiorocketmq.client.admin.output import Output
    from aiorocketmq.client.admin.session import Session

# the modules holding commands, imported by cli (in this order for `mqadmin --help`)
MODULES = (
    "aiorocketmq.client.admin.cmd_cluster",
    "aiorocketmq.client.admin.cmd_broker",
    "aiorocketmq.client.admin.cmd_topic",
    "aiorocketmq.client.admin.cmd_stats",
    "aiorocketmq.client.admin.cmd_group",
    "aiorocketmq.client.admin.cmd_offset",
    "aiorocketmq.client.admin.cmd_message",
    "aiorocketmq.client.admin.cmd_query",
    "aiorocketmq.client.admin.cmd_trace",
    "aiorocketmq.client.admin.cmd_acl",
    "aiorocketmq.client.admin.cmd_controller",
    "aiorocketmq.client.admin.cmd_timer",
)

Run = Callable[["Session", "Namespace"], Awaitable["Output"]]


@dataclass(frozen=True, slots=True)
class Opt:
    """One option as Apache's commons-cli Option: ``-t`` / ``--topic``; ``flag`` options take no
    value (Apache's ``hasArg=false``), the others one. Options sharing a ``group`` are one of
    Apache's OptionGroups (at most one of them; the group is required if a member says so)."""

    short: str
    long: str
    help: str
    required: bool = False
    default: Any = None
    kind: type = str
    flag: bool = False
    group: str = ""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    summary: str
    options: tuple[Opt, ...]
    run: Run
    needs_namesrv: bool = True


COMMANDS: dict[str, Command] = {}


@dataclass(slots=True)
class _Builder:
    name: str
    summary: str
    options: tuple[Opt, ...] = field(default_factory=tuple)
    needs_namesrv: bool = True

    def __call__(self, run: Run) -> Run:
        if self.name in COMMANDS:
            raise ValueError(f"mqadmin command {self.name} declared twice")
        COMMANDS[self.name] = Command(
            self.name, self.summary, self.options, run, self.needs_namesrv
        )
        return run


def command(name: str, summary: str, *options: Opt, needs_namesrv: bool = True) -> _Builder:
    """Register the decorated coroutine as mqadmin command ``name``."""
    return _Builder(name, summary, options, needs_namesrv)


def opt(short: str, long: str, help: str, **more: Any) -> Opt:
    return Opt(short, long, help, **more)
