"""ProducerCore: the compiled half of Producer (setup.py COMPILED): DefaultMQProducerImpl's
send path (seed 002: sendDefaultImpl, sendKernelImpl, queue selection, latency fault
tolerance; seed 004: ordered sends). ``Producer`` (producer.py, not compiled, so ``help()``
and ``inspect.signature`` show it whole) is the face users read; its methods call these."""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mypy_extensions import mypyc_attr

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import (
    MQBrokerError,
    MQClientError,
    MQTimeoutError,
    like,
    translate,
)
from aiorocketmq.client.core.fault import LatencyFaults
from aiorocketmq.client.core.instance import ClientInstance, namesrv_list
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult
from aiorocketmq.client.core.publish import PublishInfo
from aiorocketmq.client.core.security import Security
from aiorocketmq.client.core.validate import check_message
from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import (
    REPLY_MESSAGE_FLAG,
    Prop,
    SysFlag,
    encode_properties,
)
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX

Selector = Callable[[Sequence[MessageQueue], Message, object], MessageQueue]


class SendHook(Protocol):
    """SendMessageHook.sendMessageAfter, for a send a broker answered (message trace:
    client/trace/hooks.py's SendTrace); it never raises. ``cost`` in seconds."""

    def sent(
        self, topic: str, properties: str, body_size: int, result: SendResult,
        trace_on: str | None, addr: str, cost: float,
    ) -> None: ...  # fmt: skip


@dataclass(slots=True)  # not frozen: built once per send, and frozen inits cost a call a field
class _Prepared:
    topic: str
    body: bytes
    properties: str
    sys_flag: int
    flag: int
    uniq_key: str
    batch: bool = False
    reconsume_times: int | None = None
    max_reconsume_times: int | None = None
    reply: bool = False  # a request's reply (MSG_TYPE=reply): sent as 325


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (setup.py); Producer's base
class ProducerCore:
    """What Producer does (its docstrings say how), compiled; build a Producer."""

    def __init__(self, group: str, namesrv_addr: str | None, options: ProducerOptions) -> None:
        self.group = group
        self.options = options
        # the settings each send reads, as native attributes: ProducerOptions is an
        # interpreted class (its signature is public), and reading it costs a lookup each
        self._timeout_ms = options.send_msg_timeout
        self._retries = options.retry_times_when_send_failed
        self._max_size = options.max_message_size
        self._compress_over = options.compress_msg_body_over_howmuch
        self._compress_level = options.compress_level
        self._queue_nums = options.default_topic_queue_nums
        self._fault_enable = options.send_latency_fault_enable
        self._retry_not_ok = options.retry_another_broker_when_not_store_ok
        self._create_everywhere = options.create_topic_on_every_master
        self._namesrv = namesrv_list(namesrv_addr)
        self._security = Security.of(options)  # checked now: a bad pair fails the constructor
        self._instance: ClientInstance | None = None
        self._ids = UniqKeyGenerator()
        self.faults = LatencyFaults()
        self._pending = 0  # sends under way: shutdown lets them finish
        self._idle = asyncio.Event()
        self._idle.set()
        self._trace: SendHook | None = None  # set by a traced Producer (trace=True)

    async def _start(self) -> None:
        if self._instance is not None:
            return
        self._instance = ClientInstance.acquire(
            self._namesrv, self.options.instance_name, self.options.serialize_type,
            security=self._security,
        )  # fmt: skip
        self._instance.register_producer(self.group)

    async def _shutdown(self) -> None:
        if self._instance is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), self._timeout_ms / 1000)
        inst, self._instance = self._instance, None
        await inst.unregister_producer(self.group)
        await inst.release()

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the producer is not started: use `async with` or start()")
        return self._instance

    # ------------------------------------------------------------ sending

    async def _send(
        self, msg: Message, selector: Selector | None, arg: object,
        queue: MessageQueue | None, timeout_ms: int | None,
    ) -> SendResult:  # fmt: skip
        prepared = self._prepare(msg)
        budget = (timeout_ms or self._timeout_ms) / 1000
        deadline = asyncio.get_running_loop().time() + budget
        self._enter()
        try:
            if selector is not None or queue is not None:
                info = await self.instance.publish_info(msg.topic, budget)
                mq = queue if queue is not None else selector(info.queues, msg, arg)  # type: ignore[misc]
                try:
                    return await self._send_to(prepared, mq, info, deadline)
                except MQClientError as exc:  # a pinned queue's broker failed: where is it now?
                    if _route_suspect(exc):
                        self.instance.route_suspect(prepared.topic)
                    raise
            return await self._send_default(prepared, deadline)
        finally:
            self._leave()

    # a send under way: _enter, then try/finally _leave (not a contextmanager: every send pays
    # for its generator and calls)
    def _enter(self) -> None:
        self.instance  # noqa: B018 -- raises when not started, before anything is counted
        if not self._pending:
            self._idle.clear()
        self._pending += 1

    def _leave(self) -> None:
        self._pending -= 1
        if not self._pending:
            self._idle.set()

    async def _send_oneway(self, msg: Message) -> None:
        prepared = self._prepare(msg)
        budget = self._timeout_ms / 1000
        info = await self.instance.publish_info(msg.topic, budget)
        mq = info.select(None, self._faults(), self._down(info))
        addr = self._addr(info, mq)
        self._enter()
        try:
            await self.instance.remoting.invoke_oneway(addr, self._request(prepared, mq), budget)
        finally:
            self._leave()

    async def _send_batch(self, msgs: Sequence[Message]) -> SendResult:
        prepared = self._prepare_batch(msgs)
        deadline = asyncio.get_running_loop().time() + self._timeout_ms / 1000
        self._enter()
        try:
            return await self._send_default(prepared, deadline)
        finally:
            self._leave()

    # ------------------------------------------------------------ sendDefaultImpl

    async def _send_default(self, prepared: _Prepared, deadline: float) -> SendResult:
        loop, inst = asyncio.get_running_loop(), self.instance
        info = inst.cached_publish_info(prepared.topic)  # no coroutine when cached
        if info is None:
            info = await inst.publish_info(prepared.topic, max(0.001, deadline - loop.time()))
        if not info.queues:
            raise MQClientError(f"No route info of this topic: {prepared.topic}")
        tries, last, error, sent_to = 1 + self._retries, None, None, []
        faults = self._faults()
        for _ in range(tries):  # no `down` check while no broker is down (mostly)
            mq = info.select(last, faults, self._down(info) if inst.down else None)
            if loop.time() >= deadline:
                break
            sent_to.append(mq.broker_name)
            begin = loop.time()
            try:  # _send_to, without a coroutine of its own
                addr, request, remaining = self._kernel(prepared, mq, info, deadline)
                # the RemotingClient itself, translated here: api.Remote's coroutine, saved
                resp = await inst.remoting.client.invoke(addr, request, remaining)
                result = self._result(prepared, mq, resp, addr)
            except (MQClientError, RemotingError) as caught:
                exc = translate(caught, addr) if isinstance(caught, RemotingError) else caught
                self.faults.update(mq.broker_name, 0, isolation=True)
                if isinstance(exc, MQBrokerError) and not exc.retriable:
                    raise
                if _route_suspect(exc):  # ours: the group's master may have moved
                    inst.route_suspect(prepared.topic)
                last, error = mq.broker_name, exc
                continue
            self.faults.update(mq.broker_name, (loop.time() - begin) * 1000)
            if self._trace is not None:
                self._hook(prepared, result, resp, addr, loop.time() - begin)
            if info.via_default and self._create_everywhere:
                await inst.create_on_every_master(info, self._timeout_ms / 1000)
            if result.status is not api.SendStatus.SEND_OK and (self._retry_not_ok):
                last = mq.broker_name
                continue
            return result
        spent = int((loop.time() - deadline) * 1000 + self._timeout_ms)
        late = loop.time() >= deadline
        text = (
            f"{'sendDefaultImpl call timeout; ' if late else ''}Send [{len(sent_to)}] times, "
            f"still failed, cost [{spent}]ms, Topic: {prepared.topic}, BrokersSent: {sent_to}: "
            f"{error}"
        )
        # as the last try failed (a timeout when the budget ran out: Java's
        # RemotingTooMuchRequestException "sendDefaultImpl call timeout")
        raise like(error, text, timed_out=late)  # its __cause__ is error

    async def _send_to(
        self, prepared: _Prepared, mq: MessageQueue, info: PublishInfo, deadline: float
    ) -> SendResult:
        addr, request, remaining = self._kernel(prepared, mq, info, deadline)
        begin = asyncio.get_running_loop().time()
        resp = await self.instance.remoting.invoke(addr, request, remaining)
        result = self._result(prepared, mq, resp, addr)
        if self._trace is not None:
            self._hook(prepared, result, resp, addr, asyncio.get_running_loop().time() - begin)
        return result

    def _hook(
        self, p: _Prepared, result: SendResult, resp: RemotingCommand, addr: str, cost: float
    ) -> None:
        if self._trace is not None:
            self._trace.sent(p.topic, p.properties, len(p.body), result,
                             resp.ext_fields.get("TRACE_ON"), addr, cost)  # fmt: skip

    def _kernel(
        self, prepared: _Prepared, mq: MessageQueue, info: PublishInfo, deadline: float
    ) -> tuple[str, RemotingCommand, float]:
        """sendKernelImpl up to the call: (broker address, request, seconds left)."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise MQTimeoutError(f"sendKernelImpl call timeout: {self._timeout_ms} ms")
        addr = info.master_addr(mq.broker_name)  # _addr, inline
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr, self._request(prepared, mq), remaining

    def _result(
        self, prepared: _Prepared, mq: MessageQueue, resp: RemotingCommand, addr: str
    ) -> SendResult:
        status = api.send_status(resp, addr)  # api.parse_send's reading, without its SendReply
        ext = resp.ext_fields
        offset_msg_id, queue_id, queue_offset = api.send_ids(ext)
        if queue_id != mq.queue_id or type(mq) is not MessageQueue:
            mq = MessageQueue(mq.topic, mq.broker_name, queue_id)
        # positional: every send builds one, and keywords cost a frozen init more
        return SendResult(status, prepared.uniq_key, offset_msg_id, mq, queue_offset,
                          ext.get("MSG_REGION"), ext.get("transactionId"),
                          ext.get("recallHandle"))  # fmt: skip

    def _addr(self, info: PublishInfo, mq: MessageQueue) -> str:
        addr = info.master_addr(mq.broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    def _down(self, info: PublishInfo) -> Callable[[str], bool]:
        inst = self.instance
        return lambda name: inst.is_down(info.master_addr(name))

    def _faults(self) -> LatencyFaults | None:
        return self.faults if self._fault_enable else None

    def _request(self, p: _Prepared, mq: MessageQueue) -> RemotingCommand:
        return api.send_message(
            mq.topic, p.body, group=self.group, properties=p.properties, queue_id=mq.queue_id,
            sys_flag=p.sys_flag, flag=p.flag, batch=p.batch, reconsume_times=p.reconsume_times,
            max_reconsume_times=p.max_reconsume_times,
            default_topic_queue_nums=self._queue_nums, reply=p.reply,
        )  # fmt: skip

    # ------------------------------------------------------------ sendKernelImpl's preparation

    def _prepare(self, msg: Message) -> _Prepared:
        """Checked before any network call (Validators.checkMessage); UNIQ_KEY set once, so
        every try carries the same id; bodies over the threshold compressed (sysFlag bit 0)."""
        check_message(msg, self._max_size)
        body, sys_flag = msg.body, 0
        if len(body) > self._compress_over:
            packed = zlib.compress(body, self._compress_level)
            if len(packed) < len(body):
                body, sys_flag = packed, SysFlag.COMPRESSED
        if not msg.properties:  # no TRAN_MSG, no reconsume counts: the text at once
            uniq = self._ids.next()
            return _Prepared(msg.topic, body, msg.wire_text(uniq), sys_flag, msg.flag, uniq)
        props = msg.wire_properties()
        uniq = props.setdefault(Prop.UNIQ_KEY, self._ids.next())
        if props.get(Prop.TRAN_MSG) == "true":
            sys_flag |= SysFlag.TRANSACTION_PREPARED
        times = max_times = None
        if msg.topic.startswith(RETRY_PREFIX):  # sendKernelImpl: these travel in the header
            times = _int_or_none(props.pop(Prop.RECONSUME_TIME, None))
            max_times = _int_or_none(props.pop(Prop.MAX_RECONSUME_TIMES, None))
        reply = props.get(Prop.MSG_TYPE) == REPLY_MESSAGE_FLAG
        return _Prepared(msg.topic, body, encode_properties(props), sys_flag, msg.flag, uniq,
                         reconsume_times=times, max_reconsume_times=max_times,
                         reply=reply)  # fmt: skip

    def _prepare_batch(self, msgs: Sequence[Message]) -> _Prepared:
        if not msgs:
            raise MQClientError("send_batch: no messages")
        topic, items, ids, timers = msgs[0].topic, [], [], 0
        for msg in msgs:
            if msg.topic != topic:
                raise MQClientError("send_batch: every message must have the same topic")
            if msg.delay_level > 0 or topic.startswith(RETRY_PREFIX):
                raise MQClientError("send_batch: delay levels and retry topics are not supported")
            timers += msg.deliver_at is not None or msg.delay is not None
            check_message(msg, self._max_size)
            if msg.properties:
                props = msg.wire_properties()
                ids.append(props.setdefault(Prop.UNIQ_KEY, self._ids.next()))
                text = encode_properties(props)
            else:
                ids.append(uniq := self._ids.next())
                text = msg.wire_text(uniq)
            items.append(BatchItem(msg.body, msg.flag, text))
        if 0 < timers < len(msgs):
            # ours: our brokers keep a batch's timers when all its messages wait (one append
            # to one queue), and refuse a mix; 5.x's run handleScheduleMessage on single
            # messages only (a MessageExtBatch skips the hook): its timers come at once
            raise MQClientError(
                "send_batch: timer messages (deliver_at / delay) go in a batch of timer "
                "messages only; send the others apart"
            )
        body = encode_batch(items)
        if len(body) > self._max_size:
            raise MQClientError(
                f"the batch's size {len(body)} is over max value, MAX: {self._max_size}"
            )
        return _Prepared(topic, body, "", 0, 0, ",".join(ids), batch=True)


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        raise MQClientError(
            f"not a number: {text!r} (RECONSUME_TIME / MAX_RECONSUME_TIMES)"
        ) from None


def _route_suspect(exc: MQClientError) -> bool:
    """Whether a failed send says the route may be stale (issue 35 item 3): the broker
    unreachable or gone from the route, or a SERVICE_NOT_AVAILABLE answer (a slave now, or
    stopping); not a refusal of the message itself."""
    return not isinstance(exc, MQBrokerError) or exc.code == R.SERVICE_NOT_AVAILABLE
