"""ClientProcessor: what consumers and producers ask of a broker besides send and pull --
HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38), offsets (14, 15),
CONSUMER_SEND_MSG_BACK (36), LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (41, 42), CHECK_CLIENT_CONFIG
(46)."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.delay import apply_delay
from aiorocketmq.broker.filter.compiled import Compiled, FilterError, is_tag_type
from aiorocketmq.broker.locks import RebalanceLocks
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.processors.putcodes import PUT_RESULT
from aiorocketmq.broker.processors.send import DLQ_PERM
from aiorocketmq.broker.registry import ClientInfo, ClientRegistry
from aiorocketmq.broker.store import PutStatus
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.bounds import (
    group_refusal,
    heartbeat_refusal,
    lock_body_refusal,
    queue_id_refusal,
    retry_topics_refusal,
)
from aiorocketmq.remoting.protocol.codes import LanguageCode, MQVersion
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.faq import SUGGEST_TODO
from aiorocketmq.remoting.protocol.headers.consumer import (
    ConsumerGroupHeader,
    QueueOffsetRequestHeader,
    SendMsgBackRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.heartbeat import (
    CheckClientBody,
    HeartbeatData,
    LockBatchBody,
    encode_mq_set,
)
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_record
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.topic import Perm, TopicSysFlag, dlq_topic, retry_topic
from aiorocketmq.remoting.throttle import Throttle

log = structlog.get_logger(__name__)


async def _nothing() -> None:
    return None


def _always() -> bool:
    return True


def ok(
    req: RemotingCommand, ext: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return response_to(req, R.SUCCESS, ext_fields=ext, body=body)


class ClientProcessor:
    def __init__(
        self,
        ctx: BrokerContext,
        registry: ClientRegistry,
        offsets: ConsumerOffsets,
        locks: RebalanceLocks,
        notify: Callable[[str], None],
        compiled: Compiled,
        offsets_replicated: Callable[[], Awaitable[PutStatus | None]] = _nothing,
        offsets_current: Callable[[], bool] = _always,
    ) -> None:
        """``offsets_replicated``: until the commits made so far reached the slaves as a put
        does (broker.meta_stream). ``offsets_current``: whether this broker's consumer offsets
        hold every commit its group acknowledged (controller mode: broker.failover)."""
        self.ctx = ctx
        self.offsets_replicated = offsets_replicated
        self.offsets_current = offsets_current
        self.registry = registry
        self.offsets = offsets
        self.locks = locks
        self._notify = notify
        self.compiled = compiled
        self._no_retry_topic = Throttle()

    # ------------------------------------------------------------ membership

    async def heartbeat(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:
            data = HeartbeatData.decode(req.body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad HeartbeatData: {exc}")
        # compat: 4.9.8 takes any group name (Java clients check theirs before they send)
        refusal = heartbeat_refusal(data)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, f"bad HeartbeatData: {refusal}")
        language = _language(req.language)
        info = ClientInfo(data.client_id, ch.peer, language, req.version, time.monotonic())
        retry_topics = []
        changed = []
        # registered before anything is awaited: a connection that closes meanwhile takes
        # its registrations with it (they would outlive it by 120 s if made afterwards)
        for consumer in data.consumers:
            group = self.ctx.groups.find(consumer.group_name)
            if group is not None and self._retriable(consumer.group_name, ch):
                # the group's retry topic exists from its first heartbeat
                retry_topics.append((retry_topic(consumer.group_name), group.retry_queue_nums))
            if self.registry.register_consumer(consumer, ch, info):
                log.info("consumer_group_changed", group=consumer.group_name, client=data.client_id)
                if group is None or group.notify_consumer_ids_changed_enable:
                    changed.append(consumer.group_name)
        for producer in data.producers:
            self.registry.register_producer(producer, ch, info)
        for topic, queues in retry_topics:  # routed before we answer (first rebalance)
            await self.ctx.topics.create_plain(topic, queues, Perm.READ | Perm.WRITE)
        # compat: ClientManageProcessor.heartBeat -- createTopicInSendMessageBackMethod has
        # registered the retry topic with the name servers before registerConsumer tells the
        # group: the rebalance a notice starts finds %RETRY%<group> routed, so a first
        # RECONSUME_LATER is pulled at once, not after the next 20 s rebalance
        for group_name in changed:
            self._notify(group_name)
        return ok(req)

    def _retriable(self, group: str, ch: Channel) -> bool:
        """Whether ``group`` can have its retry topic. A longer group (Java clients allow 255
        characters) is registered without one -- consumption works, send-back is refused
        -- rather than refused: 4.9.8 takes its heartbeat, and refusing it would stop the
        group consuming at all. Said once a minute, with the count left out."""
        refusal = retry_topics_refusal("groupName", group)
        if refusal is None:
            return True
        left_out = self._no_retry_topic.allow(None)
        if left_out is not None:
            log.warning("retry_topic_not_created", group=group, peer=ch.peer, reason=refusal,
                        left_out=left_out)  # fmt: skip
        return False

    def unregister_client(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = UnregisterClientRequestHeader.from_ext(req.ext_fields)
        for group in self.registry.unregister(ch, hdr.consumer_group, hdr.producer_group):
            log.info("consumer_unregistered", group=group, client=hdr.client_id)
            self._notify(group)
        return ok(req)

    def consumer_list(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        group = ConsumerGroupHeader.from_ext(req.ext_fields).consumer_group
        refusal = group_refusal("consumerGroup", group)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        info = self.registry.consumers.get(group)
        if info is None or not info.clients:
            return response_to(req, R.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return ok(req, body=dumps({"consumerIdList": info.client_ids()}))

    # ------------------------------------------------------------ offsets

    def query_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand | None:
        """protocol.md 5.3: a stored offset; else 0 while nothing aged out of the queue (its
        min offset 0 and message 0 still in memory); else QUERY_NOT_FOUND. In controller
        mode, a replica whose offsets may lack acknowledged commits says so instead
        (``_not_current``)."""
        hdr = QueueOffsetRequestHeader.from_ext(req.ext_fields)
        refusal = group_refusal("consumerGroup", hdr.consumer_group)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        if not self.offsets_current():
            return self._not_current(req, hdr)
        offset = self.offsets.query(hdr.consumer_group, hdr.topic, hdr.queue_id)
        if offset < 0 and hdr.set_zero_if_not_found is not False:
            store = self.ctx.store
            if store.min_offset(hdr.topic, hdr.queue_id) <= 0 and not store.in_disk(
                hdr.topic, hdr.queue_id, 0
            ):
                offset = 0
        if offset < 0:
            return response_to(
                req,
                R.QUERY_NOT_FOUND,
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
            )
        return ok(req, {"offset": str(offset)})

    def _not_current(
        self, req: RemotingCommand, hdr: QueueOffsetRequestHeader
    ) -> RemotingCommand | None:
        """QUERY_CONSUMER_OFFSET on a replica outside its group's SyncStateSet, or a master
        that cannot prove its lease alive (issue 35): its copy may lack commits the group
        acknowledged, and a consumer that took it would read again what it consumed. The
        answer must make the client ask again later, not start from consumeFromWhere:
        SERVICE_NOT_AVAILABLE for our SDK and 5.x clients (RemoteBrokerOffsetStore.readOffset
        reads only QUERY_NOT_FOUND as "no offset"; our SDK also looks up the master again).
        compat: 4.9.8's readOffset reads *any* error answer as "no offset" (-1:
        CONSUME_FROM_FIRST_OFFSET would restart the queue from 0) and only a failed request
        as "unreadable" (-2: the queue is retried at the next rebalance) -- so a 4.9.8 client
        (or any other before 5.0) gets no answer and times out."""
        log.info("offset_query_not_current", group=hdr.consumer_group, topic=hdr.topic,
                 queue=hdr.queue_id, client=_language(req.language),
                 version=req.version)  # fmt: skip
        if req.language == LanguageCode.PYTHON or req.version >= MQVersion.V5_0_0:
            remark = "not in the SyncStateSet: this replica's offsets may be behind the master's"
            return response_to(req, R.SERVICE_NOT_AVAILABLE, remark)
        return None

    async def update_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = UpdateConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        # compat: 4.9.8 stores an offset for any group and queue id; consumerOffset.json
        # keeps only what a queue of a valid group can have
        refusal = group_refusal("consumerGroup", hdr.consumer_group) or queue_id_refusal(
            "queueId", hdr.queue_id
        )
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        cfg = self.ctx.config
        if cfg.enable_controller_mode and cfg.is_slave:
            # compat: 4.9.8's ConsumerManageProcessor stores a commit on a slave too (its next
            # SlaveSynchronize overwrites it). In controller mode a slave's table is its
            # master's copy, the one an election may make current: a commit kept here is on
            # no master and would be read back from here, then vanish (issue 35). A two-way
            # one is refused as a slave's put is, so the SDK looks up the new master at once
            # (a client with a stale route); a oneway one is dropped (no answer goes back):
            # the consumer's next persist round (5 s) writes its table to the master again.
            log.debug("offset_commit_on_slave", group=hdr.consumer_group, topic=hdr.topic,
                      queue=hdr.queue_id, offset=hdr.commit_offset)  # fmt: skip
            remark = "a slave in controller mode: commit the offset to the master"
            return response_to(req, R.SERVICE_NOT_AVAILABLE, remark)
        self.offsets.commit(hdr.consumer_group, hdr.topic, hdr.queue_id, hdr.commit_offset)
        if not req.is_oneway:  # ours: answered once the commit's record is stored as a put
            status = await self.offsets_replicated()  # is (SYNC_MASTER: a slave has it; r#9804)
            if status is PutStatus.SERVICE_NOT_AVAILABLE:  # fenced or demoted meanwhile: the
                # replicas may not hold it, so it is not acknowledged (issue 35)
                remark = "not the master now: the offset may not be on its replicas"
                return response_to(req, R.SERVICE_NOT_AVAILABLE, remark)
            if status is not None and cfg.enable_controller_mode:
                # its record is on the master, not on every replica the rule waits for (a
                # slave too slow, or none): one of those may be elected without it, so it is
                # not acknowledged -- answered as a send's put would be (11, 12); 4.9.8 and
                # static roles answer SUCCESS (the master has it, nothing more is promised)
                code = PUT_RESULT[status][0]
                remark = f"stored on the master, not on its SyncStateSet yet ({status.name})"
                return response_to(req, code, remark)
        return ok(req)

    # ------------------------------------------------------------ orderly locks

    def lock_batch(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:
            body = LockBatchBody.decode(req.body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad LockBatchRequestBody: {exc}")
        refusal = lock_body_refusal(body)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, f"bad LockBatchRequestBody: {refusal}")
        held = self.locks.try_lock(body.consumer_group, body.mq_set, body.client_id)
        return ok(req, body=encode_mq_set("lockOKMQSet", held))

    def unlock_batch(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:
            body = LockBatchBody.decode(req.body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad UnlockBatchRequestBody: {exc}")
        refusal = lock_body_refusal(body)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, f"bad UnlockBatchRequestBody: {refusal}")
        self.locks.unlock(body.consumer_group, body.mq_set, body.client_id)
        return ok(req)

    # ------------------------------------------------------------ filters

    def check_client_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """ClientManageProcessor.checkClientConfig: can this broker filter by the consumer's
        subscription -- a tag one always; SQL92 with enablePropertyFilter, if it compiles
        (SUBSCRIPTION_PARSE_FAILED with the parser's message if not)."""
        try:
            body = CheckClientBody.decode(req.body) if req.body else None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad CheckClientRequestBody: {exc}")
        sub = body.subscription if body is not None else None
        if sub is None or is_tag_type(sub.expression_type):
            return ok(req)
        if not self.ctx.config.enable_property_filter:
            remark = (
                f"The broker does not support consumer to filter message by {sub.expression_type}"
            )
            return response_to(req, R.SYSTEM_ERROR, remark)
        try:
            self.compiled.get(sub.expression_type, sub.sub_string)
        except FilterError as exc:
            log.info("client_filter_unparsable", group=body.group if body else None,
                     client=body.client_id if body else None, error=str(exc))  # fmt: skip
            return response_to(req, R.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return ok(req)

    # ------------------------------------------------------------ send back

    async def send_back(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """protocol.md 5.5: a message the consumer failed goes to %RETRY%<group> (delay level
        3 + reconsumeTimes) or, past maxReconsumeTimes, to %DLQ%<group>."""
        hdr = SendMsgBackRequestHeader.from_ext(req.ext_fields)
        # compat: 4.9.8 accepts any group here and then stores a message no delivery can
        # put anywhere (its %RETRY% topic too long for a record: N2); refused before the
        # group is looked up (which creates it)
        refusal = group_refusal("group", hdr.group) or retry_topics_refusal("group", hdr.group)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        group = self.ctx.groups.find(hdr.group)
        if group is None:
            remark = f"subscription group not exist, {hdr.group} {SUGGEST_TODO}"
            return response_to(req, R.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
        if not Perm.writeable(self.ctx.config.broker_permission):
            return response_to(
                req,
                R.NO_PERMISSION,
                f"the broker[{self.ctx.config.broker_ip1}] sending message is forbidden",
            )
        if group.retry_queue_nums <= 0:
            return ok(req)
        sys_flag = TopicSysFlag.build(False, True) if hdr.unit_mode else 0
        retry = await self.ctx.topics.create_plain(
            retry_topic(hdr.group), group.retry_queue_nums, Perm.READ | Perm.WRITE, sys_flag
        )
        if not Perm.writeable(retry.perm):
            remark = f"the topic[{retry.topic_name}] sending message is forbidden"
            return response_to(req, R.NO_PERMISSION, remark)
        record = self.ctx.store.read(hdr.offset)
        if record is None:
            return response_to(req, R.SYSTEM_ERROR, f"look message by offset failed, {hdr.offset}")
        original = decode_record(record)
        limit = group.retry_max_times
        if req.version >= MQVersion.V3_4_9 and hdr.max_reconsume_times is not None:
            limit = hdr.max_reconsume_times
        msg = _retry_copy(original, self.ctx.store.store_host)
        if original.reconsume_times >= limit or hdr.delay_level < 0:
            target = await self.ctx.topics.create_plain(dlq_topic(hdr.group), 1, DLQ_PERM)
            msg.topic, msg.queue_id = target.topic_name, 0
            msg.properties[Prop.DELAY] = "0"  # setDelayTimeLevel(0): stored, never scheduled
            log.info("send_back_to_dlq", group=hdr.group, reconsume_times=original.reconsume_times)
        else:
            msg.topic = retry.topic_name
            msg.queue_id = random.randrange(max(1, retry.write_queue_nums))
            level = hdr.delay_level or 3 + original.reconsume_times
            msg.properties[Prop.DELAY] = str(level)
            apply_delay(msg, len(self.ctx.store.delays))
        result = await self.ctx.store.put(msg, wait_flush=False)
        if result.status is not PutStatus.PUT_OK:
            return response_to(req, R.SYSTEM_ERROR, result.status.name)
        return ok(req)


def _language(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


def _retry_copy(original: MessageExt, store_host: str) -> MessageExt:
    """A new message from a failed one: body, flag, properties, born info kept; one more
    reconsume; RETRY_TOPIC and ORIGIN_MESSAGE_ID set on first retry."""
    props = dict(original.properties)
    props.setdefault(Prop.RETRY_TOPIC, original.topic)
    props.setdefault(Prop.ORIGIN_MESSAGE_ID, original.msg_id)
    props[Prop.WAIT] = "false"  # setWaitStoreMsgOK(false), stored with the copy
    return MessageExt(
        topic=original.topic,
        body=original.body,
        flag=original.flag,
        properties=props,
        sys_flag=original.sys_flag,
        born_timestamp=original.born_timestamp,
        born_host=original.born_host,
        store_host=store_host,
        reconsume_times=original.reconsume_times + 1,
    )
