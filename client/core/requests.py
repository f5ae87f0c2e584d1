"""Requests brokers send to a client (Java's ClientRemotingProcessor), replies (326) too.

The consumers (issue 15) and the transaction producer (issue 17) plug into ``hooks``; until
one of the process's consumers or producers answers for a group, the answers are Java's
for a client without it: 307/309 SYSTEM_ERROR "The Consumer Group <g> not exist in this
consumer", 221 an empty status table, 39/40/220 nothing (they are oneway notices).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiorocketmq.client.core.replies import Replies
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.dispatch import Route, Routes
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_record

log = get_logger(__name__)

Notice = Callable[[RemotingCommand], None]
Answer = Callable[[RemotingCommand], RemotingCommand | Awaitable[RemotingCommand]]
# a check-back: the request, its decoded body, and the channel the answer goes back on
CheckNotice = Callable[[RemotingCommand, MessageExt, Channel], None]


@dataclass(slots=True)
class ClientRequests:
    """What the process answers for each group: ``consumer_ids_changed[group]`` (40),
    ``reset_offset[group]`` (220), ``answers[(code, group)]`` (221, 307, 309) and
    ``check_transaction[producer group]`` (39); ``replies`` takes the replies to the
    instance's requests (326)."""

    consumer_ids_changed: dict[str, Callable[[], None]] = field(default_factory=dict)
    reset_offset: dict[str, Notice] = field(default_factory=dict)
    answers: dict[tuple[int, str], Answer] = field(default_factory=dict)
    check_transaction: dict[str, CheckNotice] = field(default_factory=dict)
    replies: Replies = field(default_factory=Replies)

    def plug_consumer(
        self,
        group: str,
        ids_changed: Callable[[], None],
        reset_offset: Notice | None,
        answers: dict[int, Answer],
    ) -> None:
        """A consumer group's answers (the codes it leaves out keep Java's answer for a group
        this client does not know)."""
        self.consumer_ids_changed[group] = ids_changed
        if reset_offset is not None:
            self.reset_offset[group] = reset_offset
        for code, answer in answers.items():
            self.answers[(code, group)] = answer

    def unplug_consumer(self, group: str) -> None:
        self.consumer_ids_changed.pop(group, None)
        self.reset_offset.pop(group, None)
        for key in [k for k in self.answers if k[1] == group]:
            del self.answers[key]

    def routes(self) -> Routes:
        return {
            C.NOTIFY_CONSUMER_IDS_CHANGED: Route(self._ids_changed),
            C.RESET_CONSUMER_CLIENT_OFFSET: Route(self._reset),
            C.CHECK_TRANSACTION_STATE: Route(self._check),
            C.GET_CONSUMER_STATUS_FROM_CLIENT: Route(self._consumer_call),
            C.GET_CONSUMER_RUNNING_INFO: Route(self._consumer_call),
            C.CONSUME_MESSAGE_DIRECTLY: Route(self._consumer_call),
            C.PUSH_REPLY_MESSAGE_TO_CLIENT: Route(self.replies.push),
        }

    def _ids_changed(self, req: RemotingCommand, ch: Channel) -> None:
        """ClientRemotingProcessor.notifyConsumerIdsChanged: rebalance that group now."""
        group = req.ext_fields.get("consumerGroup", "")
        log.info("consumer_ids_changed", group=group, broker=ch.peer)
        rebalance = self.consumer_ids_changed.get(group)
        if rebalance is not None:
            rebalance()

    def _reset(self, req: RemotingCommand, ch: Channel) -> None:
        group = req.ext_fields.get("group", "")
        reset = self.reset_offset.get(group)
        if reset is None:
            log.info("reset_offset_for_unknown_group", group=group, broker=ch.peer)
            return
        reset(req)

    def _check(self, req: RemotingCommand, ch: Channel) -> None:
        """checkTransactionState: the producer group is the message's PGROUP property."""
        try:
            msg = decode_record(req.body, inflate=True)  # MessageDecoder.decode inflates
        except ValueError as exc:
            log.warning("check_transaction_state_bad_message", broker=ch.peer, error=str(exc))
            return
        group = msg.properties.get(Prop.PGROUP)
        check = self.check_transaction.get(group or "")
        if check is None:
            log.info("check_transaction_state_no_producer", group=group, broker=ch.peer)
            return
        check(req, msg, ch)

    async def _consumer_call(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        key = "group" if req.code == C.GET_CONSUMER_STATUS_FROM_CLIENT else "consumerGroup"
        group = req.ext_fields.get(key, "")
        answer = self.answers.get((req.code, group))
        if answer is not None:
            result = answer(req)
            return await result if inspect.isawaitable(result) else result
        if req.code == C.GET_CONSUMER_STATUS_FROM_CLIENT:  # getConsumeStatus: an empty table
            return response_to(req, R.SUCCESS, body=b'{"consumerTable":{},"messageQueueTable":{}}')
        return response_to(
            req, R.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
        )
