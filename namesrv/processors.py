"""NamesrvProcessor: one handler per name server request code (DefaultRequestProcessor).

Lookups only touch the in-memory RouteTable, so they are plain functions, answered inline;
the KV writes persist to disk and so are coroutines (the fsync runs off the loop).

REGISTER_BROKER is a coroutine too: a body may be 16 MiB of JSON, or a zlib bomb. A body over
``INLINE_BODY_MAX``, or compressed, is checked and inflated in a worker thread (zlib releases
the GIL) under a limit of the frame size, one such body at a time (``_big_body``), so memory
stays bounded. Parsing and applying it run on the loop in slices of ``SLICE_SECONDS`` with
other requests answered in between: json holds the GIL, so a thread would stall the loop as
much (see remoting.protocol.register).

A name that cannot be written as UTF-8 never enters the tables (bodies are checked as they
are parsed, names here); should one get in anyway, the aggregate answers leave it out and
log an error instead of failing for every client.

One topic of a registration that cannot be routed (remoting.protocol.register.unregistrable:
2**40 queues, a 2,000-character name, a config that is not one) is skipped, counted
(``topics_skipped``, on /metrics) and named in a warning at most once a minute per broker;
every other topic of that broker is registered. 4.9.8 would refuse the whole body (its JSON
parser throws), and the broker's every topic would lose its route.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import zlib
from collections.abc import Callable
from typing import Final, TypeVar

import structlog

from aiorocketmq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from aiorocketmq.namesrv.routes import RouteTable
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.dispatch import Route, Routes, not_supported
from aiorocketmq.remoting.protocol import text
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.faq import SUGGEST_TODO
from aiorocketmq.remoting.protocol.frame import DEFAULT_MAX_FRAME
from aiorocketmq.remoting.protocol.headers import namesrv as h
from aiorocketmq.remoting.protocol.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
    inflate,
)
from aiorocketmq.remoting.protocol.route import dumps, encodable, encode_kv_table, encode_topic_list
from aiorocketmq.remoting.protocol.steps import Steps
from aiorocketmq.remoting.protocol.topic import TopicConfig
from aiorocketmq.remoting.tasks import run_steps
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = structlog.get_logger(__name__)

Response = RemotingCommand
T = TypeVar("T")
INLINE_BODY_MAX: Final = 64 * 1024  # bodies up to this size parse in about a millisecond
SLICE_SECONDS: Final = 0.002  # longest run of registration work between other requests
DATA_VERSION_MAX: Final = 4096
SKIPPED_WARN_SECONDS: Final = 60.0  # per broker address: one line a minute at most
SKIPPED_NAMED: Final = 10  # topics a warning names (their count is in it too)
NAME_SHOWN: Final = 200  # characters of a skipped topic's name a warning shows


class CrcMismatch(ValueError):
    """bodyCrc32 disagrees with the body (RegisterBrokerBody's checksum)."""


def check_and_inflate(body: bytes, crc: int, compressed: bool, limit: int) -> bytes:
    """The body's CRC check and, if compressed, its inflation, refused past ``limit`` bytes:
    both in zlib, which releases the GIL, so this may run in a thread."""
    if crc and (zlib.crc32(body) & 0x7FFFFFFF) != crc:
        raise CrcMismatch("crc32 not match")
    return inflate(body, limit) if compressed else body


def release(table: dict[str, TopicConfig]) -> Steps[None]:
    """Empty ``table`` a slice at a time: dropping 100,000 topic configs at once, when the
    request ends, would stall the loop for tens of milliseconds."""
    while table:
        for _ in range(min(len(table), 2000)):
            table.popitem()
        yield


def ok(req: RemotingCommand, ext: dict[str, str] | None = None, body: bytes = b"") -> Response:
    return response_to(req, ResponseCode.SUCCESS, ext_fields=ext, body=body)


# codes 4.9.8's name server serves and we do not (fidelity.md 1.1): they still get an answer
JAVA_ONLY_CODES: Final = frozenset({
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, RequestCode.GET_UNIT_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG,
})  # fmt: skip


def unknown_code(req: RemotingCommand) -> RemotingCommand | None:
    """A code 4.9.8's name server does not know gets no answer at all: its
    DefaultRequestProcessor.processRequest returns null (the broker answers 3). One it knows
    and we do not serve gets REQUEST_CODE_NOT_SUPPORTED rather than a wait for the timeout."""
    if req.code in JAVA_ONLY_CODES:
        return not_supported(req)
    log.debug("request_code_unknown", code=req.code)
    return None


def isolating(what: str, encode: Callable[[], bytes], fallback: Callable[[], bytes]) -> bytes:
    """``encode()``, or, if some entry holds unencodable text, ``fallback()`` without it."""
    try:
        return encode()
    except UnicodeEncodeError as exc:
        log.error("unencodable_entries_left_out", what=what, error=str(exc))
        return fallback()


class NamesrvProcessor:
    """Answers name server requests from its RouteTable and KVConfig."""

    def __init__(
        self,
        table: RouteTable,
        kv: KVConfig,
        *,
        order_message_enable: bool,
        max_body: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.table = table
        self.kv = kv
        self._order_message_enable = order_message_enable
        self._max_body = max_body  # what a compressed body may inflate to: the frame limit
        self._big_body = asyncio.Semaphore(1)
        self._route_cache: dict[str, bytes] = {}
        self._cache_key = (-1, -1)
        self.topics_skipped = 0  # topics left out of registrations, each time (/metrics)
        self._skip_warnings = WarnLimiter(SKIPPED_WARN_SECONDS)

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

    async def register_broker(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        if not encodable(hdr.broker_name, hdr.broker_addr, hdr.cluster_name, hdr.ha_server_addr):
            return response_to(req, ResponseCode.SYSTEM_ERROR,
                               "a broker, cluster or address name is not valid UTF-8")  # fmt: skip
        big = hdr.compressed or len(req.body) > INLINE_BODY_MAX
        async with self._big_body if big else contextlib.nullcontext():
            try:
                parsed = await self._parse(req.body, hdr, big)
            except ValueError as exc:
                remark = (
                    str(exc) if isinstance(exc, CrcMismatch) else f"bad RegisterBrokerBody: {exc}"
                )
                log.warning("register_body_refused", broker=hdr.broker_name,
                            addr=hdr.broker_addr, error=remark)  # fmt: skip
                return response_to(req, ResponseCode.SYSTEM_ERROR, remark)
            topics = parsed.topic_config_wrapper
            if parsed.skipped:
                self._skipped(hdr, parsed.skipped)
            first = hdr.broker_addr not in self.table.live
            result = await run_steps(self.table.register_steps(
                cluster=hdr.cluster_name, broker_addr=hdr.broker_addr,
                broker_name=hdr.broker_name, broker_id=hdr.broker_id,
                ha_server_addr=hdr.ha_server_addr, topics=topics, channel=ch,
                timeout_ms=hdr.heartbeat_timeout_millis,
            ), SLICE_SECONDS)  # fmt: skip
            count = len(topics.topic_config_table)
            await run_steps(release(topics.topic_config_table), SLICE_SECONDS)
        if first:
            log.info("broker_registered", cluster=hdr.cluster_name, broker=hdr.broker_name,
                     broker_id=hdr.broker_id, addr=hdr.broker_addr,
                     topics=count)  # fmt: skip
        ext = h.RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext()
        order = self.kv.namespace(ORDER_TOPIC_CONFIG)
        return ok(req, ext, self._kv_body(order) if order else b"")

    async def _parse(
        self, body: bytes, hdr: h.RegisterBrokerRequestHeader, big: bool
    ) -> RegisterBrokerBody:
        """The body, its unroutable topics skipped; ValueError if it is refused."""
        if not body:
            return RegisterBrokerBody(topic_config_wrapper=TopicConfigWrapper())
        if big:
            args = (body, hdr.body_crc32, hdr.compressed, self._max_body)
            body = await asyncio.to_thread(check_and_inflate, *args)
        else:
            check_and_inflate(body, hdr.body_crc32, False, self._max_body)
        steps = RegisterBrokerBody.parse_steps(body, compressed=hdr.compressed)
        return await run_steps(steps, SLICE_SECONDS)

    def _skipped(self, hdr: h.RegisterBrokerRequestHeader, skipped: dict[str, str]) -> None:
        """Count the topics a registration left out; name some, once a minute per broker."""
        self.topics_skipped += len(skipped)
        held = self._skip_warnings.hit(hdr.broker_addr)
        if held is None:
            return
        named = itertools.islice(skipped.items(), SKIPPED_NAMED)
        log.warning("register_topics_skipped", broker=hdr.broker_name, addr=hdr.broker_addr,
                    count=len(skipped), topics={n[:NAME_SHOWN]: why for n, why in named},
                    suppressed=held)  # fmt: skip

    def unregister_broker(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.BrokerIdentityHeader.from_ext(req.ext_fields)
        self.table.unregister(cluster=hdr.cluster_name, broker_addr=hdr.broker_addr,
                              broker_name=hdr.broker_name, broker_id=hdr.broker_id)  # fmt: skip
        log.info("broker_unregistered", broker=hdr.broker_name, addr=hdr.broker_addr)
        return ok(req)

    def query_data_version(self, req: RemotingCommand, ch: Channel) -> Response:
        hdr = h.BrokerIdentityHeader.from_ext(req.ext_fields)
        try:
            if len(req.body) > DATA_VERSION_MAX:  # it is ~50 bytes: do not parse megabytes inline
                raise ValueError(f"{len(req.body)} bytes is no DataVersion")
            version = DataVersion.from_json(
                text.loads(req.body, "DataVersion") if req.body else None
            )
        except (ValueError, RecursionError) as exc:
            return response_to(req, ResponseCode.SYSTEM_ERROR, f"bad DataVersion: {exc}")
        changed = self.table.data_version_changed(hdr.broker_addr, version)
        if not changed:  # DefaultRequestProcessor.queryBrokerTopicConfig: only when unchanged
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
                f"No topic route info in name server for the topic: {topic}{SUGGEST_TODO}",
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
            encoded = isolating("route", route.encode, lambda: route.encodable_part().encode())
            body = self._route_cache[topic] = encoded
        return body

    def get_cluster_info(self, req: RemotingCommand, ch: Channel) -> Response:
        info = self.table.cluster_info()
        return ok(req, body=isolating("cluster_info", info.encode,
                                      lambda: info.encodable_part().encode()))  # fmt: skip

    def get_all_topics(self, req: RemotingCommand, ch: Channel) -> Response:
        return ok(req, body=_topic_list(self.table.all_topics()))

    def get_topics_by_cluster(self, req: RemotingCommand, ch: Channel) -> Response:
        cluster = h.ClusterHeader.from_ext(req.ext_fields).cluster
        return ok(req, body=_topic_list(self.table.topics_by_cluster(cluster)))

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
        try:
            await self.kv.put(hdr.namespace, hdr.key, hdr.value)
        except ValueError as exc:
            return response_to(req, ResponseCode.SYSTEM_ERROR, str(exc))
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
        return ok(req, body=self._kv_body(table))

    @staticmethod
    def _kv_body(table: dict[str, str]) -> bytes:
        return isolating("kv_table", lambda: encode_kv_table(table), lambda: encode_kv_table(
            {k: v for k, v in table.items() if encodable(k, v)}))  # fmt: skip


def _topic_list(topics: list[str]) -> bytes:
    return isolating("topic_list", lambda: encode_topic_list(topics),
                     lambda: encode_topic_list([t for t in topics if encodable(t)]))  # fmt: skip
