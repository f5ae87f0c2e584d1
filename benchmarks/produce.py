"""SDK producer vs a lean remoting-level sender, 1 KiB messages, one broker.

Run ``python -m benchmarks.produce [--seconds S] [--repeat N] [--quick]``.

A name server and one ASYNC_FLUSH broker run as processes; this process is the client.
Shapes: sequential ``send`` (1 in flight), 256 concurrent sends, ``send_batch`` of 32 (at
8 in flight). Baseline in the same run and the same process: a lean sender that builds the
same SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE with ``aiorocketmq.client.core.api`` and awaits
``RemotingClient.invoke`` (no routes, no retries, no ids). Target: SDK >= 80 % of the lean
sender at every shape. The SDK runs once per header serialization (JSON, ROCKETMQ, MSGPACK:
issue 14 measures them in the send path); the lean sender uses the same type as the SDK row
it is compared with.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable

import uvloop

from aiorocketmq.client import Message, Producer
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.message import encode_properties
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator
from benchmarks.common import Sample, drive, listening_process, parse_args, quiet_logging

TOPIC, BODY, BATCH = "BenchProduce", bytes(range(256)) * 4, 32
SHAPES = (("send@1", 1, 1), ("send@256", 256, 1), ("batch32@8", 8, BATCH))
TYPES = (SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK)


async def sdk(
    namesrv: str, stype: SerializeType, depth: int, per: int, warm: float, s: float
) -> Sample:
    async with Producer("bench_sdk", namesrv_addr=namesrv, serialize_type=stype) as producer:
        msg = Message(TOPIC, BODY, tags="TagA", keys="k")
        batch = [Message(TOPIC, BODY, tags="TagA") for _ in range(per)]
        call: Callable[[], Awaitable[object]] = (
            (lambda: producer.send(msg)) if per == 1 else (lambda: producer.send_batch(batch))
        )
        return await drive(call, depth, warm, s)


async def lean(
    broker: str, stype: SerializeType, depth: int, per: int, warm: float, s: float
) -> Sample:
    ids = UniqKeyGenerator()
    async with RemotingClient(ClientConfig(serialize_type=stype)) as cli:

        def call() -> Awaitable[object]:
            if per == 1:
                props = encode_properties({"TAGS": "TagA", "KEYS": "k", "UNIQ_KEY": ids.next()})
                return cli.invoke(
                    broker, api.send_message(TOPIC, BODY, group="g", properties=props)
                )
            items = [BatchItem(BODY, 0, encode_properties({"TAGS": "TagA", "UNIQ_KEY": ids.next()}))
                     for _ in range(per)]  # fmt: skip
            return cli.invoke(
                broker, api.send_message(TOPIC, encode_batch(items), group="g", batch=True)
            )

        return await drive(call, depth, warm, s)


async def create_topic(broker: str) -> None:
    async with RemotingClient() as cli:
        assert (await cli.invoke(broker, api.create_topic(TOPIC, 8))).code == 0


def main() -> int:
    args, warm = parse_args(__doc__ or "", argparse.ArgumentParser())
    quiet_logging()
    rows: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns,
    ):
        namesrv = f"127.0.0.1:{ns.port}"
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1"]
        argv = ["-m", "aiorocketmq.broker", "-n", namesrv, "--listen-port", "0"]
        argv += [arg for kv in sets for arg in ("--set", kv)]
        with listening_process(argv) as broker_proc:
            broker = f"127.0.0.1:{broker_proc.port}"
            uvloop.run(create_topic(broker))
            for _ in range(args.repeat):
                for stype in TYPES:
                    for name, depth, per in SHAPES:
                        for who, fn, addr in (("lean", lean, broker), ("sdk", sdk, namesrv)):
                            sample = uvloop.run(fn(addr, stype, depth, per, warm, args.seconds))
                            rows.setdefault(f"{who}:{stype.name}:{name}", []).append(
                                sample.ops * per
                            )
    report({k: statistics.median(v) for k, v in rows.items()})
    return 0


def report(med: dict[str, float]) -> None:
    print(f"\n{'header':<10}{'shape':<12}{'lean msgs/s':>14}{'sdk msgs/s':>14}{'sdk/lean':>10}")
    for stype in TYPES:
        for name, _depth, _per in SHAPES:
            key = f"{stype.name}:{name}"
            lean_ops, sdk_ops = med[f"lean:{key}"], med[f"sdk:{key}"]
            ratio = sdk_ops / lean_ops
            print(f"{stype.name:<10}{name:<12}{lean_ops:>14,.0f}{sdk_ops:>14,.0f}{ratio:>10.2f}")
    print("target: sdk/lean >= 0.80 at every shape")
    print(json.dumps({"bench": "produce", "msgs_per_s": {k: round(v) for k, v in med.items()}}))


if __name__ == "__main__":
    sys.exit(main())
