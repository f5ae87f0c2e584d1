"""A lite-pull consumer's answers to what brokers ask of its group (ClientRemotingProcessor and
DefaultLitePullConsumerImpl of 4.9.8): rebalance now (40) and its running info (307). The
rest stays the instance's answer for a group it does not know, as Java answers for a
consumer that is not a push consumer (309: SYSTEM_ERROR; 221: an empty table; 220: ignored).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from typing import TYPE_CHECKING

from aiorocketmq.client.consumer import info as consumer_info
from aiorocketmq.client.core.instance import ClientInstance
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to

if TYPE_CHECKING:
    from aiorocketmq.client.consumer.lite.consumer import PullConsumer


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class LiteRequests:
    def __init__(self, consumer: PullConsumer) -> None:
        self.c = consumer
        self.tasks: set[asyncio.Task[None]] = set()

    def plug(self, inst: ClientInstance) -> None:
        inst.requests.consumer_ids_changed[self.c.group] = self.rebalance_now
        inst.requests.answers[(C.GET_CONSUMER_RUNNING_INFO, self.c.group)] = self.running_info

    def unplug(self, inst: ClientInstance) -> None:
        inst.requests.consumer_ids_changed.pop(self.c.group, None)
        inst.requests.answers.pop((C.GET_CONSUMER_RUNNING_INFO, self.c.group), None)
        for task in self.tasks:
            task.cancel()

    def rebalance_now(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance at once (RebalanceService.wakeup)."""
        task = asyncio.get_running_loop().create_task(self.c.do_rebalance())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def running_info(self, req: RemotingCommand) -> RemotingCommand:
        """consumerRunningInfo: the settings (object2Properties) and subscriptions; Java's
        lite consumer reports no queue table and no status table."""
        c = self.c
        props = {"consumerGroup": c.group}
        for f in dataclasses.fields(c.options):
            value = getattr(c.options, f.name)
            text = value.name if isinstance(value, enum.Enum) else str(value)
            props[_camel(f.name)] = text.lower() if isinstance(value, bool) else text
        props.update({
            "PROP_CONSUMER_START_TIMESTAMP": str(c.started_at),
            "PROP_NAMESERVER_ADDR": "".join(a + ";" for a in c.instance.namesrv_addrs),
            "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
            "PROP_CLIENT_VERSION": consumer_info.MQVersion,
        })  # fmt: skip
        subs = list(c.rebalance.subscriptions.values())
        body = consumer_info.running_info(props, subs, {}, [])
        return response_to(req, R.SUCCESS, body=body)
