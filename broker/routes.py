"""The broker's one request table: every code it answers, readable in one place."""

from __future__ import annotations

from dataclasses import dataclass

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.processors.acl import AclProcessor
from aiorocketmq.broker.processors.admin import AdminProcessor
from aiorocketmq.broker.processors.callclient import CallClientProcessor
from aiorocketmq.broker.processors.client import ClientProcessor
from aiorocketmq.broker.processors.controller import ControllerProcessor
from aiorocketmq.broker.processors.endtx import EndTransactionProcessor
from aiorocketmq.broker.processors.groups import GroupAdminProcessor
from aiorocketmq.broker.processors.pull import PullProcessor
from aiorocketmq.broker.processors.query import QueryProcessor
from aiorocketmq.broker.processors.reply import ReplyProcessor
from aiorocketmq.broker.processors.runtime import RuntimeProcessor
from aiorocketmq.broker.processors.send import SendProcessor
from aiorocketmq.broker.processors.timer import TimerProcessor
from aiorocketmq.broker.slave_sync import SyncProcessor
from aiorocketmq.remoting.dispatch import Bulkhead, Route, Routes
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.txbatch import END_TRANSACTION_BATCH

SEND_BUSY = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
    "period in queue: {waited_ms}ms, size of queue: {queued}"
)


@dataclass(frozen=True, slots=True)
class Processors:
    send: SendProcessor
    reply: ReplyProcessor
    pull: PullProcessor
    client: ClientProcessor
    admin: AdminProcessor
    groups: GroupAdminProcessor
    query: QueryProcessor
    runtime: RuntimeProcessor
    callclient: CallClientProcessor
    endtx: EndTransactionProcessor
    sync: SyncProcessor
    acl: AclProcessor
    controller: ControllerProcessor
    timer: TimerProcessor


def routes(p: Processors) -> Routes:
    return {
        C.SEND_MESSAGE: Route(p.send.send, group="send", batch=p.send.send_many),
        C.SEND_MESSAGE_V2: Route(p.send.send, group="send", batch=p.send.send_many),
        C.SEND_BATCH_MESSAGE: Route(p.send.send_batch, group="send"),
        # its own group, as Java's replyMessageExecutor: a push waits on the requester
        C.SEND_REPLY_MESSAGE: Route(p.reply.reply, group="reply"),
        C.SEND_REPLY_MESSAGE_V2: Route(p.reply.reply, group="reply"),
        C.CONSUMER_SEND_MSG_BACK: Route(p.client.send_back, group="send"),
        C.END_TRANSACTION: Route(p.endtx.end),
        C.RESUME_CHECK_HALF_MESSAGE: Route(p.endtx.resume_check),
        END_TRANSACTION_BATCH: Route(p.endtx.end_batch),  # ours: remoting/protocol/txbatch.py
        C.GET_ALL_CONSUMER_OFFSET: Route(p.sync.all_consumer_offsets),
        C.GET_ALL_DELAY_OFFSET: Route(p.sync.all_delay_offsets),
        C.RECALL_MESSAGE: Route(p.timer.recall, group="send"),
        C.GET_TIMER_CHECK_POINT: Route(p.timer.checkpoint),
        C.GET_TIMER_METRICS: Route(p.timer.metrics),
        C.PULL_MESSAGE: Route(p.pull.pull),
        C.HEART_BEAT: Route(p.client.heartbeat),
        C.UNREGISTER_CLIENT: Route(p.client.unregister_client),
        C.GET_CONSUMER_LIST_BY_GROUP: Route(p.client.consumer_list),
        C.QUERY_CONSUMER_OFFSET: Route(p.client.query_offset),
        C.UPDATE_CONSUMER_OFFSET: Route(p.client.update_offset),
        C.LOCK_BATCH_MQ: Route(p.client.lock_batch),
        C.UNLOCK_BATCH_MQ: Route(p.client.unlock_batch),
        C.CHECK_CLIENT_CONFIG: Route(p.client.check_client_config),
        C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: Route(p.groups.update_group),
        C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: Route(p.groups.all_groups),
        C.DELETE_SUBSCRIPTIONGROUP: Route(p.groups.delete_group),
        C.GET_CONSUMER_CONNECTION_LIST: Route(p.groups.consumer_connections),
        C.GET_PRODUCER_CONNECTION_LIST: Route(p.groups.producer_connections),
        C.GET_CONSUME_STATS: Route(p.groups.consume_stats),
        C.INVOKE_BROKER_TO_RESET_OFFSET: Route(p.groups.reset_offset),
        C.UPDATE_AND_CREATE_TOPIC: Route(p.admin.update_and_create_topic),
        C.GET_ALL_TOPIC_CONFIG: Route(p.admin.get_all_topic_config),
        C.DELETE_TOPIC_IN_BROKER: Route(p.admin.delete_topic),
        C.UPDATE_BROKER_CONFIG: Route(p.admin.update_broker_config),
        C.GET_BROKER_CONFIG: Route(p.admin.get_broker_config),
        C.GET_BROKER_RUNTIME_INFO: Route(p.runtime.get_runtime_info),
        C.VIEW_BROKER_STATS_DATA: Route(p.runtime.view_stats),
        C.QUERY_TOPIC_CONSUME_BY_WHO: Route(p.runtime.consume_by_who),
        C.GET_ALL_PRODUCER_INFO: Route(p.runtime.all_producer_info),
        C.GET_CONSUMER_RUNNING_INFO: Route(p.callclient.consumer_running_info),
        C.CONSUME_MESSAGE_DIRECTLY: Route(p.callclient.consume_message_directly),
        C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: Route(p.callclient.consumer_status),
        C.GET_MAX_OFFSET: Route(p.query.max_offset),
        C.GET_MIN_OFFSET: Route(p.query.min_offset),
        C.GET_EARLIEST_MSG_STORETIME: Route(p.query.earliest_store_time),
        C.SEARCH_OFFSET_BY_TIMESTAMP: Route(p.query.search_offset),
        C.VIEW_MESSAGE_BY_ID: Route(p.query.view_message),
        C.QUERY_MESSAGE: Route(p.query.query_message),
        C.GET_TOPIC_STATS_INFO: Route(p.query.topic_stats),
        C.UPDATE_AND_CREATE_ACL_CONFIG: Route(p.acl.update),
        C.DELETE_ACL_CONFIG: Route(p.acl.delete),
        C.GET_BROKER_CLUSTER_ACL_INFO: Route(p.acl.version_info),
        C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: Route(p.acl.update_global_white),
        C.GET_BROKER_EPOCH_CACHE: Route(p.controller.epoch_cache),
        C.NOTIFY_BROKER_ROLE_CHANGED: Route(p.controller.role_changed),
    }


def bulkheads(config: BrokerConfig) -> dict[str, Bulkhead]:
    """Sends that waited past waitTimeMillsInSendQueue for a slot are answered SYSTEM_BUSY."""
    return {
        "send": Bulkhead(
            limit=config.send_message_max_in_flight,
            max_wait_ms=config.wait_time_mills_in_send_queue,
            busy_remark=SEND_BUSY,
        )
    }
