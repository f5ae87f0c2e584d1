"""The name server against hostile or huge registrations (the zlib-bomb and unencodable-string
issues): a real `python -m aiorocketmq.namesrv` on port 0 keeps its memory bounded and keeps
answering everyone else; names that are not valid UTF-8 never get in; and should one be in its
tables, the answers about every other entry still work. Plus the pure parts: RouteTable's stepped
registration and KVConfig's own checks."""

from __future__ import annotations

import asyncio
import json
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from aiorocketmq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from aiorocketmq.namesrv.processors import NamesrvProcessor
from aiorocketmq.namesrv.routes import RouteTable
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import text
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder
from aiorocketmq.remoting.protocol.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
)
from aiorocketmq.remoting.protocol.route import (
    ClusterInfo,
    TopicRouteData,
    decode_kv_table,
    decode_topic_list,
)
from aiorocketmq.remoting.protocol.steps import finish
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.harness import ServerProcess, serving
from tests.namesrv.test_process import namesrv_args
from tests.protocol.test_register import ascii_json, body_json, compressed, zlib_bomb

RSS_BOUND_MIB = 200  # over the name server's own size once started and serving one broker


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    with serving(namesrv_args(tmp_path)) as proc:
        yield proc


def wrapper(topics: list[str], counter: int = 1) -> TopicConfigWrapper:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in topics}
    return TopicConfigWrapper(topic_config_table=table, data_version=DataVersion(counter, 1))


def register_request(name: str, addr: str, body: bytes, *, compress: bool = False,
                     cluster: str = "DefaultCluster") -> RemotingCommand:  # fmt: skip
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": addr,
           "brokerId": "0", "compressed": str(compress).lower(),
           "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}  # fmt: skip
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body)


def plain_body(topics: list[str], counter: int = 1) -> bytes:
    return RegisterBrokerBody(topic_config_wrapper=wrapper(topics, counter)).encode()


def json_frame(code: int, ext: dict[str, str], body: bytes = b"") -> bytes:
    """A JSON-header request as raw bytes: what a peer can send that our client cannot (any
    ``\\ud800`` escape it likes)."""
    header = ascii_json({"code": code, "extFields": ext, "flag": 0, "language": "JAVA", "opaque": 1,
                         "serializeTypeCurrentRPC": "JSON", "version": 401})  # fmt: skip
    return struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body


class RawConnection:
    """One connection sending raw frames, one at a time. It stays open: a broker's closed
    connection would evict what it registered, hiding what it left behind."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.decoder = reader, writer, FrameDecoder()

    async def invoke(self, frame: bytes) -> RemotingCommand:
        self.writer.write(frame)
        async with asyncio.timeout(10):
            while True:
                data = await self.reader.read(65536)
                assert data, "the name server closed the connection"
                if commands := self.decoder.feed(data):
                    return commands[0]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class PeakRss:
    """Samples a process's RSS every 5 ms from a thread (the test's loop may be busy)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, rss_mib(pid), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_mib(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


async def lookups_meanwhile(addr: str, topic: str, started: asyncio.Event,
                            done: asyncio.Event) -> int:  # fmt: skip
    """GET_ROUTEINFO for ``topic`` back to back from another client until ``done``; each must
    be answered within 1 s (a functional bound: a stalled server misses it by seconds)."""
    count = 0
    async with RemotingClient() as client:
        while not done.is_set():
            resp = await client.invoke(addr, RemotingCommand.request(105, {"topic": topic}), 1.0)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            count += 1
            started.set()
    return count


async def test_zlib_bomb_is_refused_in_bounded_memory_while_others_are_served(
    namesrv: ServerProcess,
) -> None:
    """zlib bomb: a 1 MiB compressed REGISTER_BROKER body that inflates to 1 GiB gets
    SYSTEM_ERROR naming the limit (16 MiB, the frame size); the name server's RSS stays within
    RSS_BOUND_MIB of where it was, and another client's route lookups made meanwhile are each
    answered within 1 s."""
    port = namesrv.listening_port()
    addr = f"127.0.0.1:{port}"
    async with RemotingClient() as broker, RemotingClient() as attacker:
        live = await broker.invoke(addr, register_request("b", "127.0.0.1:1", plain_body(["Live"])))
        assert live.code == ResponseCode.SUCCESS
        peak = PeakRss(namesrv.proc.pid)
        base = peak.peak
        started, done = asyncio.Event(), asyncio.Event()
        lookups = asyncio.create_task(lookups_meanwhile(addr, "Live", started, done))
        await started.wait()
        bomb = register_request("evil", "127.0.0.1:2", zlib_bomb(1024), compress=True)
        assert len(bomb.body) < 1100 * 1024
        try:
            resp = await attacker.invoke(addr, bomb, 60)
        finally:
            top = peak.stop()
            done.set()
            (count,) = await asyncio.gather(lookups, return_exceptions=True)
    assert top - base < RSS_BOUND_MIB, f"RSS went from {base:.0f} to {top:.0f} MiB"
    if isinstance(count, BaseException):
        raise count  # a lookup was not answered within 1 s
    assert count >= 1
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "inflates past 16777216 bytes" in (resp.remark or "")


@pytest.mark.parametrize("compress", [True, False], ids=["compressed", "json"])
async def test_big_registration_works_while_others_are_served(
    namesrv: ServerProcess, compress: bool
) -> None:
    """zlib bomb issue, the valid side: a registration of 10,000 topics (compressed, as Java's
    compressedRegister sends it, or 1.7 MB of JSON) is applied in full while another client's
    route lookups are each answered within 1 s."""
    addr = f"127.0.0.1:{namesrv.listening_port()}"
    topics = [f"Big{i:05d}" for i in range(10_000)]
    if compress:
        configs = list(wrapper(topics).topic_config_table.values())
        body = compressed(DataVersion(1, 1), configs, [])
    else:
        body = plain_body(topics)
    async with RemotingClient() as broker:
        await broker.invoke(addr, register_request("small", "127.0.0.1:1", plain_body(["Live"])))
        started, done = asyncio.Event(), asyncio.Event()
        lookups = asyncio.create_task(lookups_meanwhile(addr, "Live", started, done))
        await started.wait()
        try:
            resp = await broker.invoke(addr, register_request("big", "127.0.0.1:2", body,
                                                              compress=compress), 30)  # fmt: skip
        finally:
            done.set()
            count = await lookups
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        listed = await broker.invoke(
            addr, RemotingCommand.request(224, {"cluster": "DefaultCluster"})
        )
        assert len(decode_topic_list(listed.body)) == 10_001
        route = await broker.invoke(addr, RemotingCommand.request(105, {"topic": "Big09999"}))
        assert [q.broker_name for q in TopicRouteData.decode(route.body).queue_datas] == ["big"]
    assert count >= 1


async def test_unencodable_names_are_refused_and_everything_else_keeps_working(
    namesrv: ServerProcess, tmp_path: Path
) -> None:
    """Unencodable strings issue: REGISTER_BROKER bodies, headers and KV puts carrying a
    ``"\\ud800"`` escape, sent as raw JSON bytes, each get SYSTEM_ERROR saying the text is not
    valid UTF-8; afterwards every lookup (routes, cluster info, topic lists, KV, another
    registration) answers as before and the KV file holds only valid text."""
    port = namesrv.listening_port()
    addr = f"127.0.0.1:{port}"
    raw = RawConnection(*await asyncio.open_connection("127.0.0.1", port))
    async with RemotingClient() as cli:
        ok = await cli.invoke(addr, register_request("good", "127.0.0.1:1", plain_body(["Good"])))
        assert ok.code == ResponseCode.SUCCESS
        put = {"namespace": ORDER_TOPIC_CONFIG, "key": "Good", "value": "good:4"}
        assert (await cli.invoke(addr, RemotingCommand.request(100, put))).code == 0
        ext = dict(register_request("evil", "127.0.0.1:2", b"").ext_fields, bodyCrc32="0")
        hostile = [
            json_frame(103, ext, ascii_json(body_json(["Fine", "Bad\ud800"]))),
            json_frame(103, ext, ascii_json(body_json(["Fine"], {"k": "\udfff"}))),
            json_frame(103, dict(ext, brokerName="evil\ud800"), ascii_json(body_json(["Fine"]))),
            json_frame(103, dict(ext, clusterName="\udc00"), ascii_json(body_json(["Fine"]))),
            json_frame(100, dict(put, key="Bad\ud800")),
            json_frame(100, dict(put, value="\udbff")),
            json_frame(100, dict(put, namespace="\ud800")),
            json_frame(322, {"brokerName": "good", "brokerAddr": "127.0.0.1:1",
                             "clusterName": "DefaultCluster", "brokerId": "0"},
                       b'{"counter":1,"timestamp":1,"x":"\\ud800"}'),
        ]  # fmt: skip
        answers = [await raw.invoke(frame) for frame in hostile]
        await check_everything_answers(cli, addr)
        raw.writer.close()
        for frame, resp in zip(hostile, answers, strict=True):
            assert resp.code == ResponseCode.SYSTEM_ERROR, (frame, resp.remark)
            assert "not valid UTF-8" in (resp.remark or ""), resp.remark
        again = await cli.invoke(
            addr, register_request("good", "127.0.0.1:1", plain_body(["Good"]))
        )
        assert json.loads(again.body) == {"table": {"Good": "good:4"}}
    saved = text.loads((tmp_path / "kv.json").read_bytes())
    assert saved == {"configTable": {ORDER_TOPIC_CONFIG: {"Good": "good:4"}}}
    assert not [e for e in namesrv.events if e.get("event") == "handler_failed"]


async def check_everything_answers(cli: RemotingClient, addr: str) -> None:
    """Each lookup a client makes: it succeeds and shows only what was accepted."""
    for code, ext in ((206, {}), (224, {"cluster": "DefaultCluster"})):
        topics = await cli.invoke(addr, RemotingCommand.request(code, ext))
        assert topics.code == ResponseCode.SUCCESS, topics.remark
        assert decode_topic_list(topics.body) == ["Good"]
    info = await cli.invoke(addr, RemotingCommand.request(106))
    assert info.code == ResponseCode.SUCCESS, info.remark
    assert ClusterInfo.decode(info.body).cluster_addr_table == {"DefaultCluster": ["good"]}
    route = await cli.invoke(addr, RemotingCommand.request(105, {"topic": "Good"}))
    assert route.code == ResponseCode.SUCCESS, route.remark
    kv = await cli.invoke(addr, RemotingCommand.request(219, {"namespace": ORDER_TOPIC_CONFIG}))
    assert decode_kv_table(kv.body) == {"Good": "good:4"}
    assert (await cli.invoke(addr, RemotingCommand.request(105, {"topic": "Fine"}))).code == 17


def request(code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, ext or {}, body)


async def test_a_bad_entry_in_the_tables_fails_no_answer_about_the_others(tmp_path: Path) -> None:
    """Unencodable strings issue, defence in depth: should a name that cannot be written get
    into the route table or KV table anyway (here put there directly), cluster info, topic
    lists, routes, KV lists and registrations still answer about every other entry; and the
    processor's own checks refuse such names in a REGISTER_BROKER header or a KV put even
    where no header check ran before it."""
    table = RouteTable(lambda: 0.0)
    kv = KVConfig(str(tmp_path / "kv.json"))
    proc = NamesrvProcessor(table, kv, order_message_enable=True)
    ch = cast(Channel, object())
    for name, topics in (("good", ["Good", "Shared"]), ("\ud800", ["Bad\udfff", "Shared"])):
        finish(table.register_steps(cluster="C", broker_addr=f"{name}:1", broker_name=name,
                                    broker_id=0, ha_server_addr="", topics=wrapper(topics),
                                    channel=ch))  # fmt: skip
    kv.table[ORDER_TOPIC_CONFIG] = {"Shared": "good:4", "\ud800": "x"}
    info = ClusterInfo.decode(proc.get_cluster_info(request(106), ch).body)
    assert list(info.broker_addr_table) == ["good"] and info.cluster_addr_table == {"C": ["good"]}
    assert decode_topic_list(proc.get_all_topics(request(206), ch).body) == ["Good", "Shared"]
    by_cluster = proc.get_topics_by_cluster(request(224, {"cluster": "C"}), ch)
    assert decode_topic_list(by_cluster.body) == ["Good", "Shared"]
    route = TopicRouteData.decode(proc.get_route_info(request(105, {"topic": "Shared"}), ch).body)
    assert [b.broker_name for b in route.broker_datas] == ["good"]
    assert route.order_topic_conf == "good:4"
    kv_list = proc.get_kv_list(request(219, {"namespace": ORDER_TOPIC_CONFIG}), ch)
    assert decode_kv_table(kv_list.body) == {"Shared": "good:4"}
    reg = register_request("other", "o:1", plain_body(["Other"]))
    assert decode_kv_table((await proc.register_broker(reg, ch)).body) == {"Shared": "good:4"}
    bad_header = register_request("o\ud800", "o:2", plain_body(["Other"]))
    refused = await proc.register_broker(bad_header, ch)
    assert refused.code == ResponseCode.SYSTEM_ERROR and "not valid UTF-8" in (refused.remark or "")
    bad_put = request(100, {"namespace": "ns", "key": "\udfff", "value": "v"})
    refused = await proc.put_kv_config(bad_put, ch)
    assert refused.code == ResponseCode.SYSTEM_ERROR and "not valid UTF-8" in (refused.remark or "")


async def test_kv_config_refuses_and_drops_unencodable_text(tmp_path: Path) -> None:
    """Unencodable strings issue: KVConfig.put refuses a namespace, key or value that is not
    valid UTF-8 (ValueError, nothing changed or written); a file an older version wrote with
    such an entry loads without it instead of failing the server."""
    path = tmp_path / "kv.json"
    kv = KVConfig(str(path))
    await kv.put("ns", "k", "v")
    for args in (("\ud800", "k", "v"), ("ns", "\ud800", "v"), ("ns", "k2", "\ud800")):
        with pytest.raises(ValueError, match="not valid UTF-8"):
            await kv.put(*args)
    assert kv.table == {"ns": {"k": "v"}} and kv.version == 1
    path.write_text(json.dumps({"configTable": {"ns": {"k": "v", "\ud800": "x"},
                                                "\udfff": {"a": "b"}}}))  # fmt: skip
    reloaded = KVConfig(str(path))
    reloaded.load()
    assert reloaded.table == {"ns": {"k": "v"}}


def run_steps(steps: Any) -> tuple[int, Any]:
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return count, done.value
        count += 1


def test_registration_applies_in_slices_and_stops_when_superseded_or_evicted() -> None:
    """zlib bomb issue, "never block the loop": a 10,000-topic registration is applied a
    slice at a time (routes readable in between); a newer registration of that broker, or its
    eviction, stops a rebuild under way without leaving stray queue data; re-registering
    unchanged topics under a new data version leaves routes (and route caches) alone."""
    table = RouteTable(lambda: 0.0)
    topics = [f"T{i:05d}" for i in range(10_000)]

    def steps(counter: int, names: list[str], channel: object = None) -> Any:
        return table.register_steps(cluster="C", broker_addr="a:1", broker_name="b", broker_id=0,
                                    ha_server_addr="", topics=wrapper(names, counter),
                                    channel=channel)  # fmt: skip

    count, _ = run_steps(steps(1, topics))
    assert count >= 10 and len(table.all_topics()) == 10_000
    version = table.version
    run_steps(steps(2, topics))  # same topics, new data version: nothing to rewrite
    assert table.version == version
    old = steps(3, [f"Old{i}" for i in range(5_000)])
    next(old)
    assert table.route_for("Old0") is not None and table.route_for("T00000") is not None
    run_steps(steps(4, ["New"]))  # a newer registration while the old one is half applied
    run_steps(old)
    assert table.route_for("Old4999") is None and table.route_for("New") is not None
    channel = object()
    evicted = steps(5, [f"Gone{i}" for i in range(5_000)], channel)
    next(evicted)
    table.drop_channel(channel)
    run_steps(evicted)
    assert table.all_topics() == [] and table.cluster_info().broker_addr_table == {}
