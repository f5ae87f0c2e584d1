"""Whether the brokers of a read evaluate an SQL92 subscription, asked at planning (driver
side) before a TAG read is turned into an SQL92 one for pushed ``keys`` filters
(spark/pushdown.py, spark/source.py ``PushingBatchReader``).

A pull carrying the expression, at each broker's first queue's max offset (so nothing is
scanned or sent), is the question: a broker refuses it before reading when property
filtering is off (4.9.8's PullMessageProcessor: SYSTEM_ERROR "The broker does not support
consumer to filter message by SQL92"; ``enablePropertyFilter`` is false by default there and
here) and when it cannot parse it (SUBSCRIPTION_PARSE_FAILED).
"""

from __future__ import annotations

import asyncio
import logging

from aiorocketmq.client import MessageQueue, MessageSelector, MQBrokerError
from aiorocketmq.spark import cluster
from aiorocketmq.spark.options import ReadOptions

log = logging.getLogger(__name__)
_told: set[str] = set()  # name servers whose refusal this process logged


def refusal(opts: ReadOptions, mqs: list[MessageQueue], expression: str) -> str | None:
    """None when every broker of ``mqs`` takes a pull with ``expression``; else the first
    refusal, logged once per name servers and process."""
    firsts: dict[str, MessageQueue] = {}
    for mq in sorted(mqs):
        firsts.setdefault(mq.broker_name, mq)
    c = cluster.consumer(opts)
    selector = MessageSelector.by_sql(expression)
    timeout = opts.pull_timeout_ms / 1000

    async def one(mq: MessageQueue) -> str | None:
        try:
            end = await c.max_offset(mq)
            await c.pull_raw(mq, end, 1, timeout, expression=selector)
        except MQBrokerError as exc:
            return f"{mq.broker_name} ({exc.code}): {exc}"
        return None

    async def every() -> list[str | None]:
        return await asyncio.gather(*(one(mq) for mq in firsts.values()))

    refused = [why for why in cluster.run(every(), 60) if why is not None]
    if not refused:
        return None
    if opts.name_server not in _told:
        _told.add(opts.name_server)
        log.warning(
            "keys filters are left to Spark: a broker refuses an SQL92 subscription (set "
            "enablePropertyFilter=true on the brokers to push them): %s",
            refused[0],
        )
    return refused[0]
