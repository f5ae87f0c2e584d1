"""TEMPORARY (replaced by the helper's module before commit)."""

from __future__ import annotations
from collections.abc import Sequence
from remoting.protocol.heartbeat import MessageQueue


def averagely(
    group: str, cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    if cid not in cid_all or not mq_all:
        return []
    index, n, m = cid_all.index(cid), len(mq_all), len(cid_all)
    mod = n % m
    size = 1 if n <= m else (n // m + 1 if mod > 0 and index < mod else n // m)
    start = index * size if mod > 0 and index < mod else index * size + mod
    rng = min(size, n - start)
    return [mq_all[(start + i) % n] for i in range(rng)]


STRATEGIES = {"AVG": averagely}


def allocate(
    strategy: str, group: str, cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    return STRATEGIES[strategy](group, cid, sorted(mq_all), sorted(cid_all))
