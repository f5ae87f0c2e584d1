"""A lite-pull consumer's answers to what brokers ask of its group (ClientRemotingProcessor and
DefaultLitePullConsumerImpl of 4.9.8): rebalance now (40) and its running info (307). The
rest stays the instance's answer for a group it does not know, as Java answers for a
consumer that is not a push consumer (309: SYSTEM_ERROR; 221: an empty table; 220: ignored).
"""

from __future__ import annotations

import dataclasses
import enum

from aiorocketmq.client.consumer import info as consumer_info
from aiorocketmq.client.consumer.lite.options import LitePullOptions
from aiorocketmq.client.consumer.member import GroupMember
from aiorocketmq.client.core.requests import Answer
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class LiteRequests:
    def __init__(self, member: GroupMember, options: LitePullOptions) -> None:
        self.member = member
        self.options = options

    def answers(self) -> dict[int, Answer]:
        return {C.GET_CONSUMER_RUNNING_INFO: self.running_info}

    def running_info(self, req: RemotingCommand) -> RemotingCommand:
        """consumerRunningInfo: the settings (object2Properties) and subscriptions; Java's
        lite consumer reports no queue table and no status table."""
        m, o = self.member, self.options
        props = {"consumerGroup": m.group}
        for f in dataclasses.fields(o):
            value = getattr(o, f.name)
            text = value.name if isinstance(value, enum.Enum) else str(value)
            props[_camel(f.name)] = text.lower() if isinstance(value, bool) else text
        props.update({
            "PROP_CONSUMER_START_TIMESTAMP": str(m.started_at),
            "PROP_NAMESERVER_ADDR": "".join(a + ";" for a in m.instance.namesrv_addrs),
            "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
            "PROP_CLIENT_VERSION": consumer_info.MQVersion,
        })  # fmt: skip
        subs = list(m.rebalance.subscriptions.values())
        body = consumer_info.running_info(props, subs, {}, [])
        return response_to(req, R.SUCCESS, body=body)
