"""Name server request and response headers (protocol.md 5.7)."""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire


@header
class RegisterBrokerRequestHeader(Header):
    broker_name: str = field(metadata=wire("brokerName"))
    broker_addr: str = field(metadata=wire("brokerAddr"))
    cluster_name: str = field(metadata=wire("clusterName"))
    ha_server_addr: str = field(metadata=wire("haServerAddr"))
    broker_id: int = field(metadata=wire("brokerId"))
    compressed: bool = field(default=False, metadata=wire("compressed"))
    body_crc32: Int32 = field(default=0, metadata=wire("bodyCrc32"))
    heartbeat_timeout_millis: int | None = field(
        default=None, metadata=wire("heartbeatTimeoutMillis")
    )


@header
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = field(default=None, metadata=wire("haServerAddr"))
    master_addr: str | None = field(default=None, metadata=wire("masterAddr"))


@header
class BrokerIdentityHeader(Header):
    """UNREGISTER_BROKER (104) and QUERY_DATA_VERSION (322) requests."""

    broker_name: str = field(metadata=wire("brokerName"))
    broker_addr: str = field(metadata=wire("brokerAddr"))
    cluster_name: str = field(metadata=wire("clusterName"))
    broker_id: int = field(metadata=wire("brokerId"))


@header
class QueryDataVersionResponseHeader(Header):
    changed: bool = field(metadata=wire("changed"))


@header
class GetRouteInfoRequestHeader(Header):
    topic: str = field(metadata=wire("topic"))
    accept_standard_json_only: bool | None = field(
        default=None, metadata=wire("acceptStandardJsonOnly")
    )


@header
class TopicHeader(Header):
    """DELETE_TOPIC_IN_NAMESRV (216); 5.x may add clusterName."""

    topic: str = field(metadata=wire("topic"))
    cluster_name: str | None = field(default=None, metadata=wire("clusterName"))


@header
class ClusterHeader(Header):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str = field(metadata=wire("cluster"))


@header
class BrokerNameHeader(Header):
    """WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327)."""

    broker_name: str = field(metadata=wire("brokerName"))


@header
class WipeWritePermResponseHeader(Header):
    wipe_topic_count: Int32 = field(metadata=wire("wipeTopicCount"))


@header
class AddWritePermResponseHeader(Header):
    add_topic_count: Int32 = field(metadata=wire("addTopicCount"))


@header
class KVConfigHeader(Header):
    """PUT_KV_CONFIG (100, with value), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102)."""

    namespace: str = field(metadata=wire("namespace"))
    key: str = field(metadata=wire("key"))
    value: str | None = field(default=None, metadata=wire("value"))


@header
class NamespaceHeader(Header):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str = field(metadata=wire("namespace"))


@header
class GetKVConfigResponseHeader(Header):
    value: str | None = field(default=None, metadata=wire("value"))
