"""Running a request handler's first step inline, before any Task exists (remoting.dispatch):
the stand-in current task during that step, and the wrapper a Task resumes the handler with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any


class InlineTask:
    """The current task while a handler's first step runs inline, before any Task exists.

    It has what asyncio's own helpers use of the current task -- ``asyncio.timeout`` and
    ``TaskGroup`` call ``cancel``, ``uncancel``, ``cancelling`` and ``done`` -- and once the
    handler suspends and a real Task takes it over, every call goes to that Task. (Python
    3.12's eager tasks make a real Task current from the start; 3.11 has none.) One is made
    per request, so it costs no ``__init__``: its state starts as class defaults.
    """

    _task: asyncio.Task[None] | None = None
    _cancels: list[Any] | None = None  # cancel() messages asked for before the hand-over

    def hand_over(self, task: asyncio.Task[None]) -> None:
        self._task = task
        for msg in self._cancels or ():
            task.cancel(msg)

    def cancel(self, msg: Any = None) -> bool:
        if self._task is not None:
            return self._task.cancel(msg)
        if self._cancels is None:
            self._cancels = []
        self._cancels.append(msg)
        return True

    def uncancel(self) -> int:
        if self._task is not None:
            return self._task.uncancel()
        if self._cancels:
            self._cancels.pop()
        return len(self._cancels or ())

    def cancelling(self) -> int:
        return self._task.cancelling() if self._task is not None else len(self._cancels or ())

    def done(self) -> bool:
        return self._task.done() if self._task is not None else False

    def __repr__(self) -> str:
        return f"<InlineTask task={self._task!r}>"


_STARTED: Any = object()


class Resume(Coroutine[Any, Any, None]):
    """A coroutine whose first step already ran (inline) and suspended, dressed so a Task can
    take it over: the Task's first ``send`` returns what that step yielded (the Task then
    waits on it); everything after -- a cancellation that arrives before the Task ever ran
    included -- goes straight to the coroutine."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, None], waiting_on: Any) -> None:
        self.coro = coro
        self.first = waiting_on

    def send(self, value: Any) -> Any:
        first = self.first
        if first is not _STARTED:
            self.first = _STARTED
            return first
        return self.coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self.first = _STARTED
        if val is None and tb is None:
            return self.coro.throw(typ)
        return self.coro.throw(typ, val, tb)

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, Any, None]:
        raise TypeError("a Resume is run by a Task, never awaited")
