"""NamesrvProcessor: one handler per name server request code (DefaultRequestProcessor).

Lookups and registration only touch the in-memory RouteTable, so they are plain functions,
answered inline; the KV writes persist to disk and so are coroutines (the fsync runs off the
loop).
"""

from __future__ import annotations

import json
import zlib

import structlog

from namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from namesrv.routes import RouteTable
from remoting.channel import Channel
from remoting.dispatch import Route, Routes
from remoting.protocol.codes import RequestCode, ResponseCode
from remoting.protocol.command import RemotingCommand, response_to
from remoting.protocol.headers import namesrv as h
from remoting.protocol.register import DataVersion, RegisterBrokerBody, TopicConfigWrapper
from remoting.protocol.route import dumps, encode_kv_table, encode_topic_list

log = structlog.get_logger(__name__)

Response = RemotingCommand


def ok(req: RemotingCommand, ext: dict[str, str] | None = None, body: bytes = b"") -> Response:
    return response_to(req, ResponseCode.SUCCESS, ext_fields=ext, body=body)


class NamesrvProcessor:
    """Answers name server requests from its RouteTable and KVConfig."""

    def __init__(self, table: RouteTable, kv: KVConfig, *, order_message_enable: bool) -> None:
        self.table = table
        self.kv = kv
        self._order_message_enable = order_message_enable
        self._route_cache: dict[str, bytes] = {}
        self._cache_key = (-1, -1)

    def routes(self) -> Routes:
        c = RequestCode
        return {
            c.PUT_KV_CONFIG: Route(self.put_kv_config),
            c.GET_KV_CONFIG: Route(self.get_kv_config),
            c.DELETE_KV_CONFIG: Route(self.delete_kv_config),
            c.REGISTER_BROKER: Route(self.register_broker),
            c.UNREGISTER_BROKER: Route(self.unregister_broker),
            c.GET_ROUTEINFO_BY_TOPIC: Route(self.get_route_info),
            c.GET_BROKER_CLUSTER_INFO: Route(self.get_cluster_info),
            c.WIPE_WRITE_PERM_OF_BROKER: Route(self.wipe_write_perm),
            c.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: Route(self.get_all_topics),
            c.DELETE_TOPIC_IN_NAMESRV: Route(self.delete_topic),
            c.GET_KVLIST_BY_NAMESPACE: Route(self.get_kv_list),
            c.GET_TOPICS_BY_CLUSTER: Route(self.get_topics_by_cluster),
            c.QUERY_DATA_VERSION: Route(self.query_data_version),
            c.ADD_WRITE_PERM_OF_BROKER: Route(self.add_write_perm),
        }

    # ------------------------------------------------------------ brokers

    def register_broker(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        if hdr.body_crc32 and (zlib.crc32(req.body) & 0x7FFFFFFF) != hdr.body_crc32:
            log.warning("register_crc_mismatch", broker=hdr.broker_name, addr=hdr.broker_addr)
            return response_to(req, ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if req.body:
            try:
                body = RegisterBrokerBody.decode(req.body, compressed=hdr.compressed)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                return response_to(req, ResponseCode.SYSTEM_ERROR, f"bad RegisterBrokerBody: {exc}")
            topics = body.topic_config_wrapper
        else:
            topics = TopicConfigWrapper()
        first = hdr.broker_addr not in self.table.live
        result = self.table.register(
            cluster=hdr.cluster_name, broker_addr=hdr.broker_addr, broker_name=hdr.broker_name,
            broker_id=hdr.broker_id, ha_server_addr=hdr.ha_server_addr, topics=topics,
            channel=ch, timeout_ms=hdr.heartbeat_timeout_millis,
        )  # fmt: skip
        if first:
            log.info("broker_registered", cluster=hdr.cluster_name, broker=hdr.broker_name,
                     broker_id=hdr.broker_id, addr=hdr.broker_addr,
                     topics=len(topics.topic_config_table))  # fmt: skip
        ext = h.RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext()
        order = self.kv.namespace(ORDER_TOPIC_CONFIG)
        return ok(req, ext, encode_kv_table(order) if order else b"")

    def unregister_broker(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.BrokerIdentityHeader.from_ext(req.ext_fields)
        self.table.unregister(cluster=hdr.cluster_name, broker_addr=hdr.broker_addr,
                              broker_name=hdr.broker_name, broker_id=hdr.broker_id)  # fmt: skip
        log.info("broker_unregistered", broker=hdr.broker_name, addr=hdr.broker_addr)
        return ok(req)

    def query_data_version(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.BrokerIdentityHeader.from_ext(req.ext_fields)
        try:
            version = DataVersion.from_json(json.loads(req.body) if req.body else None)
        except (ValueError, TypeError, AttributeError) as exc:
            return response_to(req, ResponseCode.SYSTEM_ERROR, f"bad DataVersion: {exc}")
        changed = self.table.data_version_changed(hdr.broker_addr, version)
        self.table.touch(hdr.broker_addr)
        live = self.table.live.get(hdr.broker_addr)
        body = dumps(live.data_version.to_json()) if live is not None else b""
        return ok(req, h.QueryDataVersionResponseHeader(changed=changed).to_ext(), body)

    def wipe_write_perm(self, req: RemotingCommand, ch: Channel) -> Response:
        name = h.BrokerNameHeader.from_ext(req.ext_fields).broker_name
        count = self.table.wipe_write_perm(name)
        log.info("broker_write_perm_wiped", broker=name, topics=count)
        return ok(req, h.WipeWritePermResponseHeader(wipe_topic_count=count).to_ext())

    def add_write_perm(self, req: RemotingCommand, ch: Channel) -> Response:
        name = h.BrokerNameHeader.from_ext(req.ext_fields).broker_name
        count = self.table.add_write_perm(name)
        log.info("broker_write_perm_added", broker=name, topics=count)
        return ok(req, h.AddWritePermResponseHeader(add_topic_count=count).to_ext())

    # ------------------------------------------------------------ routes and topics

    def get_route_info(self, req: RemotingCommand, ch: Channel) -> Response:
        topic = h.GetRouteInfoRequestHeader.from_ext(req.ext_fields).topic
        body = self._route_json(topic)
        if body is None:
            return response_to(
                req, ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {topic}",
            )  # fmt: skip
        return ok(req, body=body)

    def _route_json(self, topic: str) -> bytes | None:
        """The encoded route, cached until the table or the KV config changes."""
        key = (self.table.version, self.kv.version)
        if key != self._cache_key:
            self._route_cache.clear()
            self._cache_key = key
        body = self._route_cache.get(topic)
        if body is None:
            route = self.table.route_for(topic)
            if route is None:
                return None
            if self._order_message_enable:
                route.order_topic_conf = self.kv.get(ORDER_TOPIC_CONFIG, topic)
            body = self._route_cache[topic] = route.encode()
        return body

    def get_cluster_info(self, req: RemotingCommand, ch: Channel) -> Response:
        return ok(req, body=self.table.cluster_info().encode())

    def get_all_topics(self, req: RemotingCommand, ch: Channel) -> Response:
        return ok(req, body=encode_topic_list(self.table.all_topics()))

    def get_topics_by_cluster(self, req: RemotingCommand, ch: Channel) -> Response:
        cluster = h.ClusterHeader.from_ext(req.ext_fields).cluster
        return ok(req, body=encode_topic_list(self.table.topics_by_cluster(cluster)))

    def delete_topic(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.TopicHeader.from_ext(req.ext_fields)
        self.table.delete_topic(hdr.topic, hdr.cluster_name)
        log.info("topic_deleted", topic=hdr.topic, cluster=hdr.cluster_name)
        return ok(req)

    # ------------------------------------------------------------ KV config

    async def put_kv_config(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.KVConfigHeader.from_ext(req.ext_fields)
        if hdr.value is None:
            return response_to(req, ResponseCode.SYSTEM_ERROR, "the custom field <value> is null")
        await self.kv.put(hdr.namespace, hdr.key, hdr.value)
        return ok(req)

    def get_kv_config(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.KVConfigHeader.from_ext(req.ext_fields)
        value = self.kv.get(hdr.namespace, hdr.key)
        if value is None:
            remark = f"No config item, Namespace: {hdr.namespace} Key: {hdr.key}"
            return response_to(req, ResponseCode.QUERY_NOT_FOUND, remark)
        return ok(req, h.GetKVConfigResponseHeader(value=value).to_ext())

    async def delete_kv_config(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.KVConfigHeader.from_ext(req.ext_fields)
        await self.kv.delete(hdr.namespace, hdr.key)
        return ok(req)

    def get_kv_list(self, req: RemotingCommand, ch: Channel) -> Response:
        namespace = h.NamespaceHeader.from_ext(req.ext_fields).namespace
        table = self.kv.namespace(namespace)
        if table is None:
            return response_to(req, ResponseCode.QUERY_NOT_FOUND,
                               f"No config item, Namespace: {namespace}")  # fmt: skip
        return ok(req, body=encode_kv_table(table))
