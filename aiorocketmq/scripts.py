"""The console scripts (pyproject's ``[project.scripts]``): each checks that the extra its
command needs is installed, then runs the command.

``pip install aiorocketmq`` installs the SDK alone; the servers and mqadmin come with extras.
Without its extra a command would die on its first third-party import with a traceback; here
it prints one line naming the extra to install and exits with status 2. The check looks the
modules up (``importlib.util.find_spec``) without importing them, and the command's module is
imported only after it: this module is the one place that names all four commands.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import NamedTuple, cast


class Script(NamedTuple):
    target: str  # "module:function", the function returning the exit status
    extra: str  # pyproject's [project.optional-dependencies] key
    needs: tuple[str, ...]  # the import names of the extra's distributions the command uses


# tests/test_import_cost.py checks that each command imports no third-party module beyond the
# SDK's dependencies and its ``needs``, and that ``needs`` are the extra's distributions
SERVER: tuple[str, ...] = ("uvloop", "structlog", "prometheus_client", "yaml")
SCRIPTS: dict[str, Script] = {
    "mqnamesrv": Script("aiorocketmq.namesrv.__main__:main", "server", SERVER),
    "mqbroker": Script("aiorocketmq.broker.__main__:main", "server", SERVER),
    # the launcher imports no server, but runs mqnamesrv and mqbroker as its children
    "mqcluster": Script("aiorocketmq.deploy.launcher:main", "server", SERVER),
    "mqadmin": Script("aiorocketmq.client.admin.cli:main", "admin", ("rich",)),
}


def missing(script: Script) -> list[str]:
    """The modules of ``script``'s extra that are not installed."""
    return [name for name in script.needs if importlib.util.find_spec(name) is None]


def run(name: str) -> int:
    script = SCRIPTS[name]
    absent = missing(script)
    if absent:
        print(
            f"{name}: needs the '{script.extra}' extra (missing: {', '.join(absent)}); "
            f"install it with: pip install 'aiorocketmq[{script.extra}]'",
            file=sys.stderr,
        )
        return 2
    module, function = script.target.split(":")
    main = cast("Callable[[], int]", getattr(importlib.import_module(module), function))
    return main()


def mqnamesrv() -> int:
    return run("mqnamesrv")


def mqbroker() -> int:
    return run("mqbroker")


def mqcluster() -> int:
    return run("mqcluster")


def mqadmin() -> int:
    return run("mqadmin")
