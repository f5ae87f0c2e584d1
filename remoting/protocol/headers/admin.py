"""Broker admin and query headers (protocol.md 5.3, 5.8)."""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire


@header
class CreateTopicRequestHeader(Header):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    topic: str = field(metadata=wire("topic"))
    default_topic: str = field(default="TBW102", metadata=wire("defaultTopic"))
    read_queue_nums: Int32 = field(metadata=wire("readQueueNums"))
    write_queue_nums: Int32 = field(metadata=wire("writeQueueNums"))
    perm: Int32 = field(metadata=wire("perm"))
    topic_filter_type: str = field(default="SINGLE_TAG", metadata=wire("topicFilterType"))
    topic_sys_flag: Int32 | None = field(default=None, metadata=wire("topicSysFlag"))
    order: bool = field(default=False, metadata=wire("order"))


@header
class TopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER (215), GET_TOPIC_STATS_INFO (202)."""

    topic: str = field(metadata=wire("topic"))


@header
class QueueRequestHeader(Header):
    """GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32)."""

    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))


@header
class SearchOffsetRequestHeader(Header):
    """SEARCH_OFFSET_BY_TIMESTAMP (29); 5.x boundaryType LOWER (default) or UPPER."""

    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    timestamp: int = field(metadata=wire("timestamp"))
    boundary_type: str | None = field(default=None, metadata=wire("boundaryType"))


@header
class OffsetResponseHeader(Header):
    """The answer to an offset query: the offset."""

    offset: int = field(metadata=wire("offset"))


@header
class TimestampResponseHeader(Header):
    """The answer to a store-time query: the timestamp."""

    timestamp: int = field(metadata=wire("timestamp"))


@header
class ViewMessageRequestHeader(Header):
    """VIEW_MESSAGE_BY_ID (33): the commitlog offset decoded from an offsetMsgId."""

    offset: int = field(metadata=wire("offset"))


@header
class QueryMessageRequestHeader(Header):
    """QUERY_MESSAGE (12)."""

    topic: str = field(metadata=wire("topic"))
    key: str = field(metadata=wire("key"))
    max_num: Int32 = field(metadata=wire("maxNum"))
    begin_timestamp: int = field(metadata=wire("beginTimestamp"))
    end_timestamp: int = field(metadata=wire("endTimestamp"))


@header
class QueryMessageResponseHeader(Header):
    """QUERY_MESSAGE's answer: the index's last update and physical offset."""

    index_last_update_timestamp: int = field(metadata=wire("indexLastUpdateTimestamp"))
    index_last_update_phyoffset: int = field(metadata=wire("indexLastUpdatePhyoffset"))


@header
class StatsRequestHeader(Header):
    """VIEW_BROKER_STATS_DATA (315): statsName TOPIC_PUT_NUMS / TOPIC_PUT_SIZE (key: topic),
    GROUP_GET_NUMS / GROUP_GET_SIZE (key: ``topic@group``), statsKey."""

    stats_name: str = field(metadata=wire("statsName"))
    stats_key: str = field(metadata=wire("statsKey"))
