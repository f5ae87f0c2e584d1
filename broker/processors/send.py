"""SendProcessor: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Seed 000 / protocol.md 5.1, in that order: start the response (MSG_REGION, TRACE_ON); the
broker accepting sends yet; msgCheck (an unwritable broker refuses order topics, topic name,
topics clients may not send to, lookup with auto-create, queue id range); random queue;
retry/DLQ routing; the stored message (WAIT dropped, CLUSTER added); transactional prepare;
append; status -> code.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable
from typing import Final

import structlog

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.delay import apply_delay
from aiorocketmq.broker.half_record import HALF_RECORD, BadHalfRecord, check_items
from aiorocketmq.broker.processors.putcodes import PUT_RESULT, STORED
from aiorocketmq.broker.store import PutResult, PutStatus
from aiorocketmq.broker.timer_rules import (
    TimerRefused,
    apply_timer,
    handle_time,
    has_timer,
    limits_of,
)
from aiorocketmq.broker.topics import describe
from aiorocketmq.broker.transactions import Transactions
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.dispatch import Deferred
from aiorocketmq.remoting.errors import MessageDecodeError, RemotingCommandError
from aiorocketmq.remoting.protocol.batch import DelayInBatch, build_batch, decode_batch
from aiorocketmq.remoting.protocol.codes import MQVersion, RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.faq import SUGGEST_TODO
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    Prop,
    SysFlag,
    decode_properties,
    now_ms,
    sent_message,
)
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator
from aiorocketmq.remoting.protocol.timer import (
    RECALL_HANDLE_FIELD,
    TIMER_TOPIC,
    RecallHandle,
    TimerProp,
)
from aiorocketmq.remoting.protocol.topic import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    TRANS_HALF_TOPIC,
    Perm,
    TopicConfig,
    TopicSysFlag,
    check_topic_name,
    dlq_topic,
)
from aiorocketmq.remoting.protocol.txbatch import (
    HALF_BATCH_FIELD,
    HALF_BATCH_MODES,
    HALF_RECORD_MODE,
    MAX_HALVES,
)

log = structlog.get_logger(__name__)

# %DLQ% topics are readable and writable (6), as SendMessageProcessor creates them since 4.9.4
# (handleRetryAndDLQ, asyncConsumerSendMsgBack); only 4.9.3 and older made them write-only.
DLQ_PERM: Final = Perm.READ | Perm.WRITE
_SENDABLE_CACHE: Final = 65_536
HALF_BATCH_ILLEGAL: Final = "every message of a half batch needs TRAN_MSG=true and PGROUP"
# ours: a batch is one append to one queue, so its messages all wait in the wheel or none
TIMER_MIXED_BATCH: Final = "a batch's messages must all be timer messages due later, or none"


class Refused(Exception):
    """A send refused before storing: carries the response code and remark."""

    def __init__(self, code: ResponseCode, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class SendProcessor:
    def __init__(self, ctx: BrokerContext, transactions: Transactions) -> None:
        self.ctx = ctx
        self.transactions = transactions
        self.store = ctx.store
        self.topics = ctx.topics
        self.groups = ctx.groups
        self._sendable: set[str] = set()  # topic names that passed the name checks
        self._uniq = UniqKeyGenerator()  # for a timer message sent without UNIQ_KEY

    @property
    def config(self) -> BrokerConfig:
        return self.ctx.config

    def _base_ext(self) -> dict[str, str]:
        return {
            "MSG_REGION": self.config.region_id,
            "TRACE_ON": "true" if self.config.trace_on else "false",
        }

    async def send(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """SEND_MESSAGE / SEND_MESSAGE_V2: one message."""
        hdr = SendMessageHeader.from_ext(req.ext_fields, v2=req.code != RequestCode.SEND_MESSAGE)
        try:
            config = self._msg_check(hdr, ch) or await self._created(hdr, ch)
            queue_id = hdr.queue_id if hdr.queue_id >= 0 else _random_queue(config)
            msg, wait = self._build(hdr, req.body, queue_id, ch)
            if hdr.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                await self._retry_or_dlq(req, hdr, msg)
            if config.topic_filter_type == "MULTI_TAG":
                msg.sys_flag |= SysFlag.MULTI_TAGS
            props = msg.properties
            if Prop.TRAN_MSG in props and self._prepare_transaction(msg):
                await self.transactions.half_topic()
            else:
                if self._timer(msg):
                    await self.wheel_topic()
                if Prop.DELAY in props:
                    apply_delay(msg, len(self.store.delays))
        except Refused as exc:
            return response_to(req, exc.code, exc.remark, self._base_ext())
        result = await self.store.put(msg, wait_flush=wait)
        if msg.topic == TRANS_HALF_TOPIC and result.status in STORED:
            self.transactions.remember([msg])
        return self._answer(req, result, msg.topic, queue_id, msg)

    def send_many(
        self, reqs: list[RemotingCommand], ch: Channel
    ) -> list[RemotingCommand] | Deferred:
        """SEND_MESSAGE(_V2) requests that one read delivered, in order: the answers to the
        leading ones it can handle at once, their messages stored in one append
        (MessageStore.put_many); half messages too, once the half topic exists. It stops
        before a request that needs more -- a topic to create, a retry send, a bad header --
        and the dispatcher hands that one to ``send``. Each request is checked and answered
        as ``send`` would; where the
        store's puts wait (SYNC_FLUSH, SYNC_MASTER) the answers are Deferred until one wait
        covers them all (MessageStore.settle_many)."""
        answers: list[RemotingCommand | None] = []
        msgs: list[MessageExt] = []
        waits: list[bool] = []  # per message: whether its sender waits for the flush/slave
        taken: list[tuple[int, int]] = []  # per message: its answer's index, its queue id
        for req in reqs:
            try:
                hdr = SendMessageHeader.from_ext(
                    req.ext_fields, v2=req.code != RequestCode.SEND_MESSAGE
                )
                config = self._msg_check(hdr, ch)
            except Refused as exc:
                answers.append(response_to(req, exc.code, exc.remark, self._base_ext()))
                continue
            except RemotingCommandError:
                break
            if config is None or hdr.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                break
            queue_id = hdr.queue_id if hdr.queue_id >= 0 else _random_queue(config)
            msg, wait = self._build(hdr, req.body, queue_id, ch)
            props = msg.properties
            half = props.get(Prop.TRAN_MSG, "").lower() == "true"
            if half and self.topics.get(TRANS_HALF_TOPIC) is None:
                break  # ``send`` creates the half topic
            if self.topics.get(TIMER_TOPIC) is None and has_timer(props):
                break  # ``send`` creates the wheel's topic
            if config.topic_filter_type == "MULTI_TAG":
                msg.sys_flag |= SysFlag.MULTI_TAGS
            try:
                if half:  # parked with the others: a transactional producer's halves batch too
                    self._prepare_transaction(msg)
                else:
                    self._timer(msg)
                    if Prop.DELAY in props:
                        apply_delay(msg, len(self.store.delays))
            except Refused as exc:
                answers.append(response_to(req, exc.code, exc.remark, self._base_ext()))
                continue
            taken.append((len(answers), queue_id))
            msgs.append(msg)
            waits.append(wait)
            answers.append(None)
        results = self.store.put_many(msgs, waits) if msgs else []
        parked = zip(msgs, results, strict=True)
        self.transactions.remember(
            m for m, r in parked if m.topic == TRANS_HALF_TOPIC and r.status in STORED
        )
        if self.store.waits and any(waits):
            settled = self.store.settle_many(results, waits)
            return Deferred(len(answers), self._answered(reqs, answers, taken, msgs, settled))
        return self._fill(reqs, answers, taken, msgs, results)

    async def _answered(
        self,
        reqs: list[RemotingCommand],
        answers: list[RemotingCommand | None],
        taken: list[tuple[int, int]],
        msgs: list[MessageExt],
        settled: Awaitable[list[PutResult]],
    ) -> list[RemotingCommand]:
        return self._fill(reqs, answers, taken, msgs, await settled)

    def _fill(
        self,
        reqs: list[RemotingCommand],
        answers: list[RemotingCommand | None],
        taken: list[tuple[int, int]],
        msgs: list[MessageExt],
        results: list[PutResult],
    ) -> list[RemotingCommand]:
        """``answers`` with the stored messages' answers in their places."""
        for (at, queue_id), msg, result in zip(taken, msgs, results, strict=True):
            answers[at] = self._answer(reqs[at], result, msg.topic, queue_id, msg)
        done = [a for a in answers if a is not None]
        assert len(done) == len(answers), "every stored message is answered"
        return done

    async def send_batch(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """SEND_BATCH_MESSAGE: every message to one queue, in one append. A batch whose
        sysFlag is transactional is refused, as CommitLog.putMessages does, unless it asks for
        ours: half messages, parked in one append (``halfBatch``, remoting/protocol/txbatch.py)."""
        hdr = SendMessageHeader.from_ext(req.ext_fields, v2=True)
        try:
            config = self._msg_check(hdr, ch) or await self._created(hdr, ch)
            if hdr.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise Refused(
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"batch request does not support retry group {hdr.topic}",
                )
            halves = self._half_batch(req, hdr)
            queue_id = hdr.queue_id if hdr.queue_id >= 0 else _random_queue(config)
            if halves == HALF_RECORD_MODE:
                record, wait = self._half_record(hdr, req.body, queue_id, ch)
                await self.transactions.half_topic()
                return await self._park(req, record, wait, hdr.topic, queue_id)
            msgs, wait = self._build_batch(hdr, req.body, queue_id, ch, config)
            if not halves and any(has_timer(m.properties) for m in msgs):
                await self._timer_batch(msgs)
            if halves:
                if len(msgs) > MAX_HALVES:
                    raise Refused(ResponseCode.MESSAGE_ILLEGAL,
                                  f"at most {MAX_HALVES} half messages in one batch")  # fmt: skip
                for msg in msgs:
                    if Prop.PGROUP not in msg.properties or not self._prepare_transaction(msg):
                        raise Refused(ResponseCode.MESSAGE_ILLEGAL, HALF_BATCH_ILLEGAL)
                await self.transactions.half_topic()
        except Refused as exc:
            return response_to(req, exc.code, exc.remark, self._base_ext())
        result = await self.store.put_batch(msgs, wait_flush=wait)
        if halves and result.status in STORED:
            self.transactions.remember(msgs)
        return self._answer(req, result, hdr.topic, queue_id)

    def _half_batch(self, req: RemotingCommand, hdr: SendMessageHeader) -> str:
        """How the batch's half messages are parked (ours): "" for a batch of no half,
        "true" each on its own, "record" all in one; raises Refused for a transactional
        batch 4.9.8 refuses (CommitLog.putMessages: MESSAGE_ILLEGAL)."""
        if hdr.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_NOT_TYPE:
            return ""
        asked = req.ext_fields.get(HALF_BATCH_FIELD, "")
        prepared = hdr.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_PREPARED
        if asked in HALF_BATCH_MODES and prepared and self.config.enable_batch_transaction:
            return asked
        code, remark = PUT_RESULT[PutStatus.MESSAGE_ILLEGAL]
        raise Refused(code, (remark or "").format(body=self.ctx.store_config.max_message_size))

    def _half_record(
        self, hdr: SendMessageHeader, body: bytes, queue_id: int, ch: Channel
    ) -> tuple[MessageExt, bool]:
        """The one half that parks the batch (broker/half_record.py): the request's
        properties (TRAN_MSG and PGROUP among them), the body as received."""
        try:
            items = check_items(body, MAX_HALVES)
        except BadHalfRecord as exc:
            raise Refused(ResponseCode.MESSAGE_ILLEGAL, str(exc)) from None
        record, wait = self._build(hdr, body, queue_id, ch)
        if Prop.PGROUP not in record.properties or not self._prepare_transaction(record):
            raise Refused(ResponseCode.MESSAGE_ILLEGAL, HALF_BATCH_ILLEGAL)
        record.properties[HALF_RECORD] = str(len(items))
        if Prop.UNIQ_KEY not in record.properties:  # the record's transaction id
            record.properties[Prop.UNIQ_KEY] = self._uniq.next()
        return record, wait

    async def _park(
        self, req: RemotingCommand, record: MessageExt, wait: bool, topic: str, queue_id: int
    ) -> RemotingCommand:
        result = await self.store.put(record, wait_flush=wait)
        if result.status in STORED:
            self.transactions.remember([record])
        return self._answer(req, result, topic, queue_id)

    # ------------------------------------------------------------ msgCheck

    def _msg_check(self, hdr: SendMessageHeader, ch: Channel) -> TopicConfig | None:
        """The checks of AbstractSendMessageProcessor.msgCheck, in its order; the topic's
        config, or None when it does not exist yet (``_created`` makes it)."""
        cfg = self.ctx.config
        accept_from = cfg.start_accept_send_request_time_stamp
        if accept_from and now_ms() < accept_from:
            until = _human_time(accept_from)
            raise Refused(ResponseCode.SYSTEM_ERROR, f"broker unable to service, until {until}")
        # without the write bit only an order topic is refused; other sends are stored
        # (registration advertises the broker's permission, so producers stop routing here:
        # broker.registration.advertised)
        topic = hdr.topic
        known = self.topics.get(topic)
        if known is not None and known.order and not Perm.writeable(cfg.broker_permission):
            raise Refused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{cfg.broker_ip1}] sending message is forbidden",
            )
        if topic not in self._sendable:  # a name's checks never change: each is made once
            bad_name = check_topic_name(topic)
            if bad_name is not None:
                raise Refused(ResponseCode.SYSTEM_ERROR, bad_name)
            if topic in NOT_ALLOWED_SEND_TOPICS:
                raise Refused(
                    ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
                )
            if len(self._sendable) >= _SENDABLE_CACHE:  # bounded whatever clients send
                self._sendable.clear()
            self._sendable.add(topic)
        if known is not None:
            self._queue_check(hdr, known, ch)
        return known

    async def _created(self, hdr: SendMessageHeader, ch: Channel) -> TopicConfig:
        config = self.topics.get(hdr.topic) or await self._create(hdr, ch)
        self._queue_check(hdr, config, ch)
        return config

    @staticmethod
    def _queue_check(hdr: SendMessageHeader, config: TopicConfig, ch: Channel) -> None:
        queue_id = hdr.queue_id
        if queue_id < 0 and config.write_queue_nums <= 0:  # nowhere to put it
            raise Refused(
                ResponseCode.SYSTEM_ERROR,
                f"topic[{hdr.topic}] has no queue to write to, {describe(config)}",
            )
        if queue_id >= config.read_queue_nums and queue_id >= config.write_queue_nums:
            remark = (
                f"request queueId[{queue_id}] is illegal, {describe(config)} Producer: {ch.peer}"
            )
            log.warning("send_queue_id_illegal", topic=hdr.topic, queue_id=queue_id, peer=ch.peer)
            raise Refused(ResponseCode.SYSTEM_ERROR, remark)

    async def _create(self, hdr: SendMessageHeader, ch: Channel) -> TopicConfig:
        log.warning("send_topic_not_exist", topic=hdr.topic, peer=ch.peer)
        retry = hdr.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        sys_flag = TopicSysFlag.build(not retry, retry) if hdr.unit_mode else 0
        # AbstractSendMessageProcessor.msgCheck: the template (TBW102) first, for retry topics too
        config = await self.topics.create_in_send(
            hdr.topic, hdr.default_topic, hdr.default_topic_queue_nums, sys_flag
        )
        # both create methods register with the name servers before returning, as Java's do
        if config is None and retry:  # no template: createTopicInSendMessageBackMethod, 1 queue
            config = await self.topics.create_plain(hdr.topic, 1, Perm.READ | Perm.WRITE, sys_flag)
        if config is None:
            if hdr.default_topic_queue_nums <= 0:
                raise Refused(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{hdr.topic}] not exist, and defaultTopicQueueNums "
                    f"{hdr.default_topic_queue_nums} cannot create it{SUGGEST_TODO}",
                )
            raise Refused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{hdr.topic}] not exist, apply first please!{SUGGEST_TODO}",
            )
        return config

    # ------------------------------------------------------------ the stored message

    def _properties(self, text: str | None) -> tuple[dict[str, str], bool]:
        props = decode_properties(text)
        # compat: WAIT is not stored (9 bytes a message); it only decides whether to wait
        wait = props.pop(Prop.WAIT, "true").lower() == "true"
        props[Prop.CLUSTER] = self.config.broker_cluster_name
        return props, wait

    def _build(
        self, hdr: SendMessageHeader, body: bytes, queue_id: int, ch: Channel
    ) -> tuple[MessageExt, bool]:
        props, wait = self._properties(hdr.properties)
        msg = sent_message(hdr.topic, body, hdr.flag, props, queue_id, hdr.sys_flag,
                           hdr.born_timestamp, ch.peer, hdr.reconsume_times or 0)  # fmt: skip
        return msg, wait

    def _build_batch(
        self, hdr: SendMessageHeader, body: bytes, queue_id: int, ch: Channel, config: TopicConfig
    ) -> tuple[list[MessageExt], bool]:
        try:
            items = decode_batch(body)
        except MessageDecodeError as exc:
            raise Refused(ResponseCode.MESSAGE_ILLEGAL, f"malformed batch body: {exc}") from exc
        if not items:
            raise Refused(ResponseCode.MESSAGE_ILLEGAL, "the batch body holds no message")
        common, wait = self._properties(hdr.properties)
        sys_flag = hdr.sys_flag | (
            SysFlag.MULTI_TAGS if config.topic_filter_type == "MULTI_TAG" else 0
        )
        try:
            msgs = build_batch(items, hdr.topic, common, queue_id, sys_flag,
                               hdr.born_timestamp, ch.peer)  # fmt: skip
        except DelayInBatch as exc:
            raise Refused(
                ResponseCode.MESSAGE_ILLEGAL, "a batch may not carry delayed messages"
            ) from exc
        return msgs, wait

    async def _retry_or_dlq(
        self, req: RemotingCommand, hdr: SendMessageHeader, msg: MessageExt
    ) -> None:
        """handleRetryAndDLQ: a %RETRY% send past its maximum reconsume count goes to %DLQ%."""
        if not hdr.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return
        group = hdr.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        sub = self.groups.find(group)
        if sub is None:
            raise Refused(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {SUGGEST_TODO}",
            )
        limit = sub.retry_max_times
        if req.version >= MQVersion.V3_4_9 and hdr.max_reconsume_times is not None:
            limit = hdr.max_reconsume_times
        if (hdr.reconsume_times or 0) >= limit:
            dlq = await self.topics.create_plain(dlq_topic(group), 1, DLQ_PERM)
            msg.topic, msg.queue_id = dlq.topic_name, random.randrange(dlq.write_queue_nums or 1)
            # the client's DELAY stays (asyncSendMessage's origProps overwrite the DLQ's level 0)
            log.info("send_to_dlq", group=group, reconsume_times=hdr.reconsume_times)

    def _prepare_transaction(self, msg: MessageExt) -> bool:
        """A prepared (half) message is parked, invisible, in the half topic (protocol.md 12.4);
        returns whether it was one."""
        if msg.properties.get(Prop.TRAN_MSG, "").lower() != "true":
            return False
        if self.config.reject_transaction_message:
            remark = (
                f"the broker[{self.config.broker_ip1}] sending transaction message is forbidden"
            )
            raise Refused(ResponseCode.NO_PERMISSION, remark)
        msg.properties[Prop.REAL_TOPIC] = msg.topic
        msg.properties[Prop.REAL_QID] = str(msg.queue_id)
        # the name is the broker's: only a parked batch has it (``_half_record`` sets it)
        msg.properties.pop(HALF_RECORD, None)
        msg.sys_flag &= ~SysFlag.TRANSACTION_MASK
        msg.topic, msg.queue_id = TRANS_HALF_TOPIC, 0
        return True

    def _timer(self, msg: MessageExt) -> bool:
        """A timer message waits in rmq_sys_wheel_timer (broker.timer_rules); whether it
        does."""
        try:
            waits = apply_timer(msg, limits_of(self.ctx.store_config), now_ms())
        except TimerRefused as exc:
            raise Refused(exc.code, exc.remark) from None
        if waits and Prop.UNIQ_KEY not in msg.properties:  # ours: the key a recall names
            msg.properties[Prop.UNIQ_KEY] = self._uniq.next()
        return waits

    async def _timer_batch(self, msgs: list[MessageExt]) -> None:
        """Timer messages in a batch (ours: 5.3.3 stores a batch's TIMER_* as they are and
        delivers at once): each gets its own slot; all must wait in the wheel, or none."""
        waits = [self._timer(m) for m in msgs]
        if any(waits) and not all(waits):
            raise Refused(ResponseCode.MESSAGE_ILLEGAL, TIMER_MIXED_BATCH)
        if waits[0]:
            await self.wheel_topic()

    async def wheel_topic(self) -> None:
        """compat: TopicConfigManager (5.x) -- rmq_sys_wheel_timer, 1 queue, RW; created
        here on first use, so mqadmin lists it once a timer message waits."""
        if self.topics.get(TIMER_TOPIC) is None:
            await self.topics.create_plain(TIMER_TOPIC, 1, Perm.READ | Perm.WRITE,
                                           wait_registered=False)  # fmt: skip

    # ------------------------------------------------------------ the answer

    def _answer(
        self,
        req: RemotingCommand,
        result: PutResult,
        topic: str,
        queue_id: int,
        msg: MessageExt | None = None,
    ) -> RemotingCommand:
        gate = self.store.ack_gate  # controller mode (broker.failover): a put that did not
        if gate is not None and result.status in STORED and not gate():  # wait is asked too
            result = result._replace(status=PutStatus.SERVICE_NOT_AVAILABLE)
        code, remark = PUT_RESULT[result.status]
        ext = self._base_ext()
        if result.status not in STORED:
            if result.status is PutStatus.SERVICE_NOT_AVAILABLE:
                remark = (remark or "").format(disk=self.store.disk_usage_text())
                # the store logs each change of its state once; a line per send would flood
                log.debug("send_not_stored", topic=topic, status=result.status.name)
            else:
                remark = (remark or "").format(body=self.ctx.store_config.max_message_size)
                log.warning("send_not_stored", topic=topic, status=result.status.name)
            return response_to(req, code, remark, ext)
        self.ctx.stats.on_put(topic, len(result.msg_ids), result.wrote_bytes)
        # SendMessageResponseHeader's extFields (msgId, queueId, queueOffset), as its to_ext
        ext["msgId"] = ",".join(result.msg_ids)
        ext["queueId"] = str(queue_id)
        ext["queueOffset"] = str(result.queue_offset)
        if msg is not None and msg.topic == TIMER_TOPIC and len(result.msg_ids) == 1:
            real = msg.properties.get(Prop.REAL_TOPIC, "")
            slot = msg.properties.get(TimerProp.OUT_MS, "")
            uniq = msg.properties.get(Prop.UNIQ_KEY, "")
            # compat: SendMessageProcessor (5.3.2+) -- the handle RECALL_MESSAGE takes (none
            # for a retry topic), its time TIMER_OUT_MS + 1
            if slot.isdigit() and not real.startswith(RETRY_GROUP_TOPIC_PREFIX):
                stamp = str(handle_time(int(slot)))
                handle = RecallHandle(real, self.config.broker_name, stamp, uniq)
                ext[RECALL_HANDLE_FIELD] = handle.encode()
        return response_to(req, code, None, ext)


def _human_time(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: local time, "yyyy-MM-dd HH:mm:ss,SSS"."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f",{ms % 1000:03d}"


def _random_queue(config: TopicConfig) -> int:
    return int(random.random() * config.write_queue_nums)  # > 0: checked in _queue_check
