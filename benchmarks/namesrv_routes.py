"""Name server route lookups: GET_ROUTEINFO_BY_TOPIC against a real `python -m aiorocketmq.namesrv`.

Run ``python -m benchmarks.namesrv_routes [--seconds S] [--repeat N] [--quick]``.

A table of 1,000 topics x 4 brokers (every broker hosts every topic) is registered over the
wire, then 64 coroutines on one RemotingClient (msgpack headers) look up random topics. The
baseline, measured in the same run, is our RemotingClient -> RemotingServer echo in its own
process, sent the same request header and echoing a body as large as a route body, so the
ratio is what the lookup and its JSON cost on top of the remoting layer (target >= 70 %).
Route table memory for 10,000 topics x 10 brokers is measured in-process with tracemalloc.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Awaitable

import uvloop

from aiorocketmq.namesrv.routes import RouteTable
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
)
from aiorocketmq.remoting.protocol.steps import finish
from aiorocketmq.remoting.protocol.topic import TopicConfig
from benchmarks.common import (
    Sample,
    drive,
    listening_process,
    median_sample,
    parse_args,
    quiet_logging,
)
from benchmarks.remoting_rtt import server_process

TOPICS, BROKERS, DEPTH = 1000, 4, 64
ECHO_CODE = int(RequestCode.SEND_MESSAGE_V2)  # the echo route of remoting_rtt's server


def wrapper(topics: list[str]) -> TopicConfigWrapper:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=8, write_queue_nums=8) for t in topics}
    return TopicConfigWrapper(topic_config_table=table, data_version=DataVersion(1, 1))


def register_request(broker: int, topics: list[str]) -> RemotingCommand:
    body = RegisterBrokerBody(topic_config_wrapper=wrapper(topics)).encode()
    addr = f"127.0.0.1:{10911 + 10 * broker}"
    ext = {"brokerName": f"broker-{broker}", "brokerAddr": addr, "clusterName": "BenchCluster",
           "haServerAddr": addr, "brokerId": "0", "compressed": "false",
           "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}  # fmt: skip
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body)


async def measure_routes(port: int, warm: float, seconds: float) -> tuple[Sample, int]:
    topics = [f"BenchTopic_{i:04d}" for i in range(TOPICS)]
    addr = f"127.0.0.1:{port}"
    async with RemotingClient() as brokers, RemotingClient() as client:
        for b in range(BROKERS):  # the broker connections stay open: closing them evicts
            resp = await brokers.invoke(addr, register_request(b, topics), 30)
            assert resp.code == 0, resp.remark
        sample_route = await client.invoke(addr, RemotingCommand.request(105, {"topic": topics[0]}))
        assert sample_route.code == 0 and len(json.loads(sample_route.body)["brokerDatas"]) == 4

        def call() -> Awaitable[RemotingCommand]:
            topic = random.choice(topics)
            return client.invoke(addr, RemotingCommand.request(105, {"topic": topic}), 10)

        return await drive(call, DEPTH, warm, seconds), len(sample_route.body)


async def measure_echo(port: int, body_len: int, warm: float, seconds: float) -> Sample:
    addr = f"127.0.0.1:{port}"
    body = b"x" * body_len  # the echo answers with a body as large as a route's
    async with RemotingClient() as client:

        def call() -> Awaitable[RemotingCommand]:
            ext = {"topic": f"BenchTopic_{random.randrange(TOPICS):04d}"}
            return client.invoke(addr, RemotingCommand.request(ECHO_CODE, ext, body), 10)

        return await drive(call, DEPTH, warm, seconds)


def table_memory(topics: int = 10_000, brokers: int = 10) -> float:
    """MiB held by a RouteTable of ``topics`` x ``brokers`` (tracemalloc, in-process)."""
    names = [f"MemTopic_{i:05d}" for i in range(topics)]
    configs = wrapper(names)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    table = RouteTable(time.monotonic)
    for b in range(brokers):
        finish(table.register_steps(cluster="C", broker_addr=f"10.0.0.{b}:10911",
                                    broker_name=f"b{b}", broker_id=0, ha_server_addr="",
                                    topics=configs, channel=b))  # fmt: skip
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert len(table.topic_queues) == topics
    return sum(s.size_diff for s in after.compare_to(before, "filename")) / 2**20


def main() -> int:
    args, warm = parse_args(__doc__ or "")
    quiet_logging()
    routes: list[Sample] = []
    echoes: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp:
        kv = f"kvConfigPath={tmp}/kv.json"
        argv = ["-m", "aiorocketmq.namesrv", "--listen-port", "0", "--set", kv]
        with listening_process(argv) as ns, server_process() as echo_ports:
            for _ in range(args.repeat):  # interleaved, so drift hits both alike
                route, body_len = uvloop.run(measure_routes(ns.port, warm, args.seconds))
                routes.append(route)
                echoes.append(uvloop.run(measure_echo(echo_ports["ours"], body_len, warm,
                                                      args.seconds)))  # fmt: skip
    report(median_sample(routes), median_sample(echoes), body_len, table_memory())
    return 0


def report(route: Sample, echo: Sample, body_len: int, mib: float) -> None:
    ratio = route.ops / echo.ops
    print(f"\n{'case':<34}{'ops/s':>10}{'p50 us':>10}{'p99 us':>10}")
    for name, s in ((f"GET_ROUTEINFO_BY_TOPIC @{DEPTH}", route), (f"echo baseline @{DEPTH}", echo)):
        print(f"{name:<34}{s.ops:>10,.0f}{s.p50_us:>10.1f}{s.p99_us:>10.1f}")
    print(f"\nroutes / echo: {ratio:.2f} (target >= 0.70); route body {body_len} bytes")
    print(f"route table memory, 10,000 topics x 10 brokers: {mib:.1f} MiB")
    print(json.dumps({"bench": "namesrv_routes", "topics": TOPICS, "brokers": BROKERS,
                      "route_ops": round(route.ops), "echo_ops": round(echo.ops),
                      "ratio": round(ratio, 3), "route_body_bytes": body_len,
                      "table_mib_10k_x_10": round(mib, 1)}))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
