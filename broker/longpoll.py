"""PullHold: parked pulls (PullRequestHoldService, seed 003).

A pull that finds nothing and may be held is parked -- no task, no bulkhead slot -- keyed by
topic and queue. It is re-run (without the right to park again) as soon as a matching message
is dispatched, when the periodic check (5 s; 1 s with short polling) finds the queue grown, or
at its own deadline. A closed channel's parked pulls are dropped; at stop all are answered.
A filtered pull woken by messages it does not match is parked again (``repark``) from past
them, under its first deadline.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.deadlines import Deadlines, Expired
from aiorocketmq.remoting.protocol.command import RemotingCommand

log = structlog.get_logger(__name__)


@dataclass(slots=True, eq=False)
class ParkedPull:
    cmd: RemotingCommand
    channel: Channel
    topic: str
    queue_id: int
    offset: int  # the queue offset it waits for
    codes: frozenset[int] | None  # tag codes it accepts, None = all
    id: int = 0
    deadline: float = 0.0  # loop time
    final: bool = False  # woken by its deadline or the stop: answered whatever it finds


class PullHold:
    def __init__(self, max_offset: Callable[[str, int], int], *, limit: int = 100_000) -> None:
        self.wake: Callable[[ParkedPull], None] = _unwired  # PullProcessor.wake, set by its owner
        self._max_offset = max_offset
        self.limit = limit
        self.parked: dict[tuple[str, int], dict[int, ParkedPull]] = {}
        self.by_id: dict[int, ParkedPull] = {}
        self._deadlines = Deadlines(self._expired, self.by_id)
        self._ids = itertools.count(1)

    def park(self, pull: ParkedPull, timeout: float) -> bool:
        """Hold ``pull`` for up to ``timeout`` seconds; False when the hold is full."""
        if len(self.by_id) >= self.limit:
            return False
        pull.id = next(self._ids)
        self.by_id[pull.id] = pull
        self.parked.setdefault((pull.topic, pull.queue_id), {})[pull.id] = pull
        pull.deadline = asyncio.get_running_loop().time() + timeout
        self._deadlines.add(pull.deadline, pull.id, 0, timeout)
        return True

    def repark(self, pull: ParkedPull, offset: int) -> bool:
        """Hold a woken ``pull`` again, now waiting for ``offset``, until its first deadline;
        False when the hold is full or the pull's channel is gone."""
        if len(self.by_id) >= self.limit or pull.channel.closed.done():
            return False
        pull.offset = offset
        self.by_id[pull.id] = pull
        self.parked.setdefault((pull.topic, pull.queue_id), {})[pull.id] = pull
        left = pull.deadline - asyncio.get_running_loop().time()
        self._deadlines.add(pull.deadline, pull.id, 0, max(0.0, left))
        return True

    def _take(self, pull: ParkedPull) -> None:
        self.by_id.pop(pull.id, None)
        queue = self.parked.get((pull.topic, pull.queue_id))
        if queue is not None:
            queue.pop(pull.id, None)
            if not queue:
                del self.parked[(pull.topic, pull.queue_id)]

    def _run(self, pull: ParkedPull) -> None:
        self._take(pull)
        asyncio.get_running_loop().call_soon(self.wake, pull)

    def arrived(self, topic: str, queue_id: int, offset: int, tags_code: int, _stamp: int) -> None:
        """A message was dispatched (the store's listener): wake the pulls it satisfies."""
        queue = self.parked.get((topic, queue_id))
        if not queue:
            return
        for pull in list(queue.values()):
            if offset >= pull.offset and (pull.codes is None or tags_code in pull.codes):
                self._run(pull)

    def check(self) -> None:
        """The periodic round: wake pulls whose queue has grown past their offset."""
        for (topic, queue_id), queue in list(self.parked.items()):
            high = self._max_offset(topic, queue_id)
            for pull in list(queue.values()):
                if high > pull.offset:
                    self._run(pull)

    def _expired(self, due: Expired) -> None:
        for pull_id, _code, _timeout in due:
            pull = self.by_id.get(pull_id)
            if pull is not None:
                pull.final = True
                self._run(pull)  # answered with whatever is there now (usually not found)

    def channel_closed(self, channel: Channel) -> None:
        for pull in [p for p in self.by_id.values() if p.channel is channel]:
            self._take(pull)

    def wake_all(self) -> None:
        """At stop: answer every parked pull so consumers move on."""
        for pull in list(self.by_id.values()):
            pull.final = True
            self._run(pull)
        self._deadlines.close()


def _unwired(pull: ParkedPull) -> None:
    raise RuntimeError("PullHold.wake was never set")
