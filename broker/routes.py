"""The broker's one request table: every code it answers, readable in one place."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.processors.admin import AdminProcessor
from broker.processors.query import QueryProcessor
from broker.processors.send import SendProcessor
from remoting.dispatch import Bulkhead, Route, Routes
from remoting.protocol.codes import RequestCode as C

SEND_BUSY = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
    "period in queue: {waited_ms}ms, size of queue: {queued}"
)


def routes(send: SendProcessor, admin: AdminProcessor, query: QueryProcessor) -> Routes:
    return {
        C.SEND_MESSAGE: Route(send.send, group="send"),
        C.SEND_MESSAGE_V2: Route(send.send, group="send"),
        C.SEND_BATCH_MESSAGE: Route(send.send_batch, group="send"),
        C.UPDATE_AND_CREATE_TOPIC: Route(admin.update_and_create_topic),
        C.GET_ALL_TOPIC_CONFIG: Route(admin.get_all_topic_config),
        C.DELETE_TOPIC_IN_BROKER: Route(admin.delete_topic),
        C.UPDATE_BROKER_CONFIG: Route(admin.update_broker_config),
        C.GET_BROKER_CONFIG: Route(admin.get_broker_config),
        C.GET_BROKER_RUNTIME_INFO: Route(admin.get_runtime_info),
        C.VIEW_BROKER_STATS_DATA: Route(admin.view_stats),
        C.GET_MAX_OFFSET: Route(query.max_offset),
        C.GET_MIN_OFFSET: Route(query.min_offset),
        C.GET_EARLIEST_MSG_STORETIME: Route(query.earliest_store_time),
        C.SEARCH_OFFSET_BY_TIMESTAMP: Route(query.search_offset),
        C.VIEW_MESSAGE_BY_ID: Route(query.view_message),
        C.QUERY_MESSAGE: Route(query.query_message),
        C.GET_TOPIC_STATS_INFO: Route(query.topic_stats),
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
