"""Steps: work cut into bounded units -- a generator that yields between units and returns
its result -- so that a caller on the event loop can let others run in between
(``aiorocketmq.remoting.tasks.run_steps``) and a caller elsewhere can run it at once
(``finish``)."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeAlias, TypeVar

T = TypeVar("T")
Steps: TypeAlias = Generator[None, None, T]


def finish(steps: Steps[T]) -> T:
    """Run ``steps`` to its end at once (off the loop, or when it is known to be small)."""
    try:
        while True:
            next(steps)
    except StopIteration as done:
        result: T = done.value
        return result
