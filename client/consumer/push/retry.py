"""Giving messages back (DefaultMQPushConsumerImpl.sendMessageBack and
ConsumeMessageOrderlyService.sendMessageBack of 4.9.8).

``send_back``: CONSUMER_SEND_MSG_BACK to the message's broker, which stores it again in
``%RETRY%<group>`` after a delay level (or in ``%DLQ%<group>`` past the maximum); if that
fails, the client sends a copy to the retry topic itself through an inner producer.
``to_dlq`` (orderly): a copy to the retry topic whose reconsume count is already at the
maximum, which the broker puts in the DLQ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiorocketmq.client.consumer.types import ConsumerOptions, message_id, retry_topic
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import Message
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.message import MessageExt, Prop

if TYPE_CHECKING:
    from aiorocketmq.client.core.instance import ClientInstance
    from aiorocketmq.client.producer.producer import Producer

log = get_logger(__name__)

INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"  # MixAll.CLIENT_INNER_PRODUCER_GROUP


class Returns:
    def __init__(self, instance: ClientInstance, group: str, options: ConsumerOptions) -> None:
        self.instance = instance
        self.group = group
        self.options = options
        self._producer: Producer | None = None
        mx = options.max_reconsume_times
        self.max_reconsume = 16 if mx == -1 else mx

    async def send_back(self, msg: MessageExt, delay_level: int) -> bool:
        """True when the broker (or the fallback send) took the message back."""
        try:
            addr = await self.instance.master_addr(msg.broker_name, msg.topic)
        except MQClientError:
            addr = msg.store_host
        original_id = msg.properties.get(Prop.ORIGIN_MESSAGE_ID) or message_id(msg)
        request = api.send_back(
            msg.commit_log_offset, self.group, delay_level, origin_msg_id=original_id,
            origin_topic=msg.topic, max_reconsume_times=self.max_reconsume,
        )  # fmt: skip
        try:
            resp = await self.instance.remoting.invoke(addr, request, 3.0)
            if resp.code != R.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark, addr)
            return True
        except (MQClientError, RemotingError) as exc:
            log.warning("send_back_failed", group=self.group, id=message_id(msg), error=str(exc))
        delay = 3 + msg.reconsume_times
        return await self._resend(msg, msg.reconsume_times + 1, self.max_reconsume, delay)

    async def to_dlq(self, msg: MessageExt, max_times: int) -> bool:
        """Orderly: past the maximum; the broker sees reconsume times >= max and stores the
        copy in the DLQ."""
        return await self._resend(msg, msg.reconsume_times, max_times, 3 + msg.reconsume_times)

    async def _resend(self, msg: MessageExt, times: int, max_times: int, delay: int) -> bool:
        props = dict(msg.properties)
        props[Prop.ORIGIN_MESSAGE_ID] = props.get(Prop.ORIGIN_MESSAGE_ID) or message_id(msg)
        props[Prop.RETRY_TOPIC] = msg.topic
        props[Prop.RECONSUME_TIME] = str(times)
        props[Prop.MAX_RECONSUME_TIMES] = str(max_times)
        for name in (Prop.TRAN_MSG, Prop.MIN_OFFSET, Prop.MAX_OFFSET, "CONSUME_START_TIME"):
            props.pop(name, None)
        props.pop(Prop.DELAY, None)
        copy = Message(retry_topic(self.group), msg.body, properties=props, flag=msg.flag,
                       delay_level=min(delay, 18))  # fmt: skip
        try:
            await (await self._inner()).send(copy)
            return True
        except (MQClientError, RemotingError) as exc:
            log.warning("resend_to_retry_failed", group=self.group, id=message_id(msg),
                        error=str(exc))  # fmt: skip
            return False

    async def _inner(self) -> Producer:
        if self._producer is None:
            from aiorocketmq.client.producer.producer import Producer

            o = self.options
            self._producer = Producer(
                INNER_PRODUCER_GROUP, namesrv_addr=";".join(self.instance.namesrv_addrs),
                instance_name=o.instance_name, serialize_type=o.serialize_type,
                access_key=o.access_key, secret_key=o.secret_key,
                security_token=o.security_token, tls=o.tls,
            )  # fmt: skip
            await self._producer.start()
        return self._producer

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.shutdown()
            self._producer = None
