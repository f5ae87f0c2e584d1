"""What a traced client records, and when (4.9.8's trace hooks): ``SendTrace`` a Pub record
per send answered (SendMessageTraceHookImpl) and an EndTransaction record per END_TRANSACTION
(EndTransactionTraceHookImpl); ``ConsumeTrace`` a SubBefore record before a listener call and
a SubAfter record after it (ConsumeMessageTraceHookImpl).

Each hook builds a TraceContext and hands it to the client's TraceDispatcher, which queues it
(or drops it, counted, when full): nothing here waits or raises into the client's path.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiorocketmq.client.core.message import SendResult, SendStatus
from aiorocketmq.client.trace.dispatcher import TraceDispatcher
from aiorocketmq.client.trace.encoder import (
    DEFAULT_REGION,
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
)
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_properties, now_ms

START_DELIVER_TIME = "__STARTDELIVERTIME"  # MessageConst.PROPERTY_STARTDE_LIVER_TIME


class SendTrace:
    """A traced producer's hook (ProducerCore's SendHook): a Pub record per send a broker
    answered, unless the answer says TRACE_ON=false; none for a send that failed without an
    answer, nor for messages to the trace topic itself."""

    __slots__ = ("dispatcher", "group", "topic")

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group
        self.topic = dispatcher.topic

    def sent(
        self,
        topic: str,
        properties: str,
        body_size: int,
        result: SendResult,
        trace_on: str | None,
        addr: str,
        cost: float,
    ) -> None:
        """SendMessageTraceHookImpl.sendMessageAfter; ``cost`` in seconds."""
        if trace_on == "false" or topic.startswith(self.topic):
            return
        props = decode_properties(properties)
        msg_type = MessageType.Normal_Msg
        if props.get(Prop.TRAN_MSG) == "true":
            msg_type = MessageType.Trans_Msg_Half
        if START_DELIVER_TIME in props or Prop.DELAY in props:
            msg_type = MessageType.Delay_Msg
        cost_ms = int(cost * 1000)
        bean = TraceBean(topic=topic, msg_id=result.msg_id, offset_msg_id=result.offset_msg_id,
                         tags=props.get(Prop.TAGS), keys=props.get(Prop.KEYS), store_host=addr,
                         body_length=body_size, msg_type=msg_type)  # fmt: skip
        ok = result.status is SendStatus.SEND_OK
        # compat: MQClientAPIImpl.processSendResponse -- no MSG_REGION reads DefaultRegion
        region = result.region or DEFAULT_REGION
        self.dispatcher.append(TraceContext(TraceType.Pub, now_ms() - cost_ms, region,
                                            self.group, cost_ms, ok, beans=[bean]))  # fmt: skip

    def ended(
        self,
        topic: str,
        properties: dict[str, str],
        msg_id: str,
        transaction_id: str | None,
        state: str,
        addr: str,
        from_check: bool,
    ) -> None:
        """EndTransactionTraceHookImpl.endTransaction: the half's topic, tags and keys, the
        state sent (LocalTransactionState's name) and whether a check-back asked for it."""
        if topic.startswith(self.topic):
            return
        bean = TraceBean(topic=topic, msg_id=msg_id, tags=properties.get(Prop.TAGS),
                         keys=properties.get(Prop.KEYS), store_host=addr,
                         msg_type=MessageType.Trans_msg_Commit, transaction_id=transaction_id,
                         transaction_state=state, from_transaction_check=from_check)  # fmt: skip
        region = properties.get(Prop.MSG_REGION) or DEFAULT_REGION
        self.dispatcher.append(TraceContext(TraceType.EndTransaction, now_ms(), region,
                                            self.group, beans=[bean]))  # fmt: skip


class ConsumeTrace:
    """A traced consumer's hook: ``before`` a listener call, ``after`` it."""

    __slots__ = ("dispatcher", "group")

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(self, msgs: Sequence[MessageExt]) -> TraceContext | None:
        """consumeMessageBefore: a SubBefore record for the messages whose TRACE_ON is not
        "false"; None (and no record) when there are none."""
        beans: list[TraceBean] = []
        region: str | None = ""
        for m in msgs:
            props = m.properties
            if props.get(Prop.TRACE_ON) == "false":
                continue
            # compat: Java sets the context's region from each message's MSG_REGION, which
            # a 4.9.8 broker stores only with a send hook registered: mostly null
            region = props.get(Prop.MSG_REGION)
            beans.append(TraceBean(topic=m.topic, msg_id=props.get(Prop.UNIQ_KEY) or m.msg_id,
                                   tags=props.get(Prop.TAGS), keys=props.get(Prop.KEYS),
                                   store_time=m.store_timestamp, body_length=m.store_size,
                                   retry_times=m.reconsume_times))  # fmt: skip
        if not beans:
            return None
        ctx = TraceContext(TraceType.SubBefore, now_ms(), region, self.group, beans=beans)
        self.dispatcher.append(ctx)
        return ctx

    def after(
        self, before: TraceContext | None, count: int, success: bool, code: ConsumeReturnType
    ) -> None:
        """consumeMessageAfter: a SubAfter record sharing the SubBefore's request id and
        messages; its cost is the call's, divided by the number of messages, as Java's."""
        if before is None:
            return
        now = now_ms()
        self.dispatcher.append(TraceContext(
            TraceType.SubAfter, now, before.region_id, self.group,
            (now - before.timestamp) // max(1, count), success, request_id=before.request_id,
            context_code=int(code), beans=before.beans,
        ))  # fmt: skip

    def pulled(self, msgs: Sequence[MessageExt]) -> None:
        """DefaultLitePullConsumerImpl.pull: a lite consumer's pull that found messages is a
        SubBefore and a successful SubAfter at once."""
        self.after(self.before(msgs), len(msgs), True, ConsumeReturnType.SUCCESS)
