"""A store cut to be killed: ``python -m tests.store.cut_crasher ROOT CUT CALL NAME NTH``.

Opens the store at ROOT (the replication tests' config) and cuts its log back to CUT
(``truncate_to``); the NTH call of ``os.CALL`` whose first path argument's ``directory/name``
contains NAME (any call: ``*``) stops this process (SIGSTOP) before it runs, so the parent can
SIGKILL it exactly there: a crash in the middle of the cut, at a known step. ``os`` is
patched, not the store's own code: compiled store modules call each other directly
(setup.py), ``os`` they call through the module. Exits 3 if the cut finished without
meeting that call.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.remoting.runtime import configure_logging
from tests.store.conftest import HOST, small_config
from tests.store.replication import replica_config


def stop_at(call: str, name: str, nth: int) -> None:
    real: Callable[..., Any] = getattr(os, call)
    seen = 0

    def patched(*args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        first = args[0] if args else None
        path = Path(first) if isinstance(first, str | os.PathLike) else None
        named = path is not None and name in f"{path.parent.name}/{path.name}"
        if name == "*" or named:
            seen += 1
            if seen == nth:
                os.kill(os.getpid(), signal.SIGSTOP)
        return real(*args, **kwargs)

    setattr(os, call, patched)


async def main(root: str, cut: int, call: str, name: str, nth: int) -> None:
    configure_logging("warning", json=True)
    store = MessageStore(small_config(Path(root), **replica_config()), store_host=HOST)
    await store.start()
    store.set_slave(True)
    stop_at(call, name, nth)
    store.truncate_to(cut)
    sys.exit(3)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])))
