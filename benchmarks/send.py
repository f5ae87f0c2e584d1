"""Broker send path: SEND_MESSAGE_V2 and batches of 32 against a real `python -m
aiorocketmq.broker`.

Run ``python -m benchmarks.send [--seconds S] [--repeat N] [--quick]``.

One broker (no name server needed), 1 KiB messages to an 8-queue topic, msgpack headers, a
realistic V2 header (UNIQ_KEY, TAGS, KEYS in the properties, so the index is fed). Cases for
ASYNC_FLUSH and SYNC_FLUSH brokers: single sends at 1 and 64 in flight, batches of 32 at 64 in
flight; with ASYNC_FLUSH also the 64-in-flight shapes with JSON headers (what Java, C++ and
ali-ons send). Baseline in the same run: the remoting echo of benchmarks/remoting_rtt (its own
process, same request and body). Targets: single sends at 64 in flight >= 50 % of echo ops/s
(ASYNC_FLUSH); batch-32 >= 5x single-send messages/s; JSON >= 80 % of msgpack. Broker CPU
per message is reported from /proc (user + system seconds over the measurement, divided by
messages stored).

TLS (issue 32): an ASYNC_FLUSH broker in permissive mode (a self-signed RSA-2048 certificate
made in the run) takes send@64 over TLS and over plaintext on the same port, alternately;
target TLS >= 0.6x plaintext.

ACL shape (issue 32; ``--shapes acl`` runs it alone): two ASYNC_FLUSH brokers side by side,
one plain, one with ``aclEnable`` (an admin account in its ``plain_acl.yml``, no white
address, so every request is verified); send@64 unsigned to the plain one and signed
(HMAC-SHA1 over the sorted ext fields and the body, as AclClientRPCHook) to the ACL one,
alternating in each round, msgpack and JSON headers. Target: signed >= 0.9x unsigned. On two
or more cores the brokers run on one core and the client on another (``pinned``): the figure
is the broker's throughput, as where clients run on other hosts; both sides' CPU per message
is printed beside it, and their sum (what a client and broker sharing two cores pay).

Trace shape (issue 33; ``--shapes trace`` runs it alone): a name server and an ASYNC_FLUSH
broker with ``traceTopicEnable``; the SDK's Producer (JSON headers) sends at 1 and 64 in
flight with ``trace=False`` and ``trace=True`` (a Pub record per send, written in batches
by the internal producer to RMQ_SYS_TRACE_TOPIC on the same broker), alternating in each
round; the ratio traced / untraced, and the records dropped (a full trace queue).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import ssl
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path

import uvloop

from aiorocketmq.client import Message, Producer
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from aiorocketmq.remoting.protocol.signature import Credentials
from benchmarks.common import (
    Listening,
    Sample,
    drive,
    listening_process,
    median_sample,
    parse_args,
    quiet_logging,
)
from benchmarks.remoting_rtt import server_process
from benchmarks.tls_common import make_certificate, server_sets, trusting

TOPIC, QUEUES, BODY = "BenchSend", 8, bytes(range(256)) * 4
_uniq = itertools.count()


def properties() -> str:
    return encode_properties(
        {"UNIQ_KEY": f"7F0000010C2E1B6E4B2A{next(_uniq):012X}", "TAGS": "TagA", "KEYS": "k"}
    )


BATCH_BODY = encode_batch(
    [
        BatchItem(BODY, 0, encode_properties({"UNIQ_KEY": f"B{i:031d}", "TAGS": "TagA"}))
        for i in range(32)
    ]
)


@dataclass(frozen=True)
class Case:
    name: str
    depth: int
    per_op: int  # messages per request
    json: bool = False  # JSON headers instead of msgpack

    def request(self) -> RemotingCommand:
        if self.per_op == 1:
            return api.send_message(TOPIC, BODY, group="bench_pg", properties=properties())
        return api.send_message(TOPIC, BATCH_BODY, group="bench_pg", batch=True)


CASES = (Case("send@1", 1, 1), Case("send@64", 64, 1), Case("batch32@64", 64, 32))
JSON_CASES = (Case("send@64 json", 64, 1, True), Case("batch32@64 json", 64, 32, True))


def cases(flush: str) -> tuple[Case, ...]:
    return CASES + JSON_CASES if flush == "ASYNC_FLUSH" else CASES


async def measure(
    addr: str,
    case: Case,
    warm: float,
    seconds: float,
    tls: ssl.SSLContext | None = None,
    credentials: Credentials | None = None,
) -> Sample:
    config = ClientConfig(serialize_type=SerializeType.JSON if case.json else SerializeType.MSGPACK)
    async with RemotingClient(config, tls=tls, credentials=credentials) as client:

        def call() -> Awaitable[RemotingCommand]:
            return checked(client.invoke(addr, case.request(), 10))

        return await drive(call, case.depth, warm, seconds)


async def checked(pending: Awaitable[RemotingCommand]) -> RemotingCommand:
    resp = await pending
    if resp.code not in (0, 2):  # SYSTEM_BUSY is flow control at work, not a failure
        raise RuntimeError(f"send failed: {resp.code} {resp.remark}")
    return resp


async def create_topic(addr: str, credentials: Credentials | None = None) -> None:
    async with RemotingClient(credentials=credentials) as client:
        resp = await client.invoke(addr, api.create_topic(TOPIC, QUEUES))
        assert resp.code == 0, resp.remark


async def measure_echo(port: int, depth: int, warm: float, seconds: float) -> Sample:
    async with RemotingClient() as client:
        addr = f"127.0.0.1:{port}"

        def call() -> Awaitable[RemotingCommand]:
            request = api.send_message(TOPIC, BODY, group="bench_pg", properties=properties())
            return client.invoke(addr, request, 10)

        return await drive(call, depth, warm, seconds)


@contextlib.contextmanager
def bench_broker(flush: str, *more: str) -> Iterator[Listening]:
    """A broker of the given flush type on a fresh store, with ``more`` settings."""
    with tempfile.TemporaryDirectory() as tmp:
        sets = [
            f"storePathRootDir={tmp}",
            f"flushDiskType={flush}",
            "brokerIP1=127.0.0.1",
            "brokerName=bench",
            "autoCreateTopicEnable=true",
            *(m.replace("{tmp}", tmp) for m in more),
        ]
        argv = ["-m", "aiorocketmq.broker", "--listen-port", "0"] + [
            a for s in sets for a in ("--set", s)
        ]
        with listening_process(argv) as broker:
            yield broker


def broker_cases(flush: str, args: argparse.Namespace, warm: float) -> dict[str, list[Sample]]:
    """Every case against one broker of the given flush type; CPU per message as a Sample."""
    out: dict[str, list[Sample]] = {}
    with bench_broker(flush) as broker:
        addr = f"127.0.0.1:{broker.port}"
        uvloop.run(create_topic(addr))
        for _ in range(args.repeat):
            for case in cases(flush):
                cpu0 = broker.cpu_seconds()
                sample = uvloop.run(measure(addr, case, warm, args.seconds))
                cpu = broker.cpu_seconds() - cpu0
                msgs = sample.ops * case.per_op * (args.seconds + warm * 2)
                out.setdefault(f"{flush}:{case.name}", []).append(sample)
                out.setdefault(f"{flush}:{case.name}:cpu", []).append(
                    Sample(1e6 * cpu / max(msgs, 1), 0, 0)
                )
    return out


def tls_cases(args: argparse.Namespace, warm: float) -> dict[str, list[Sample]]:
    """send@64 over TLS and over plaintext against one permissive broker, alternately."""
    out: dict[str, list[Sample]] = {}
    case = Case("send@64", 64, 1)
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = make_certificate(Path(tmp))
        sets = [f"storePathRootDir={tmp}/store", "brokerIP1=127.0.0.1", "brokerName=bench",
                *server_sets(cert, key)]  # fmt: skip
        argv = ["-m", "aiorocketmq.broker", "--listen-port", "0"]
        argv += [a for s in sets for a in ("--set", s)]
        with listening_process(argv) as broker:
            addr = f"127.0.0.1:{broker.port}"
            uvloop.run(create_topic(addr))
            for _ in range(args.repeat):
                for name, tls in (("plain", None), ("tls", trusting(cert))):
                    cpu0 = broker.cpu_seconds()
                    sample = uvloop.run(measure(addr, case, warm, args.seconds, tls))
                    cpu = broker.cpu_seconds() - cpu0
                    msgs = sample.ops * (args.seconds + warm * 2)
                    out.setdefault(f"TLS:{name}:send@64", []).append(sample)
                    out.setdefault(f"TLS:{name}:send@64:cpu", []).append(
                        Sample(1e6 * cpu / max(msgs, 1), 0, 0)
                    )
    return out


# the ACL shape's account (admin: every code, every topic; verified, never white-listed)
ACL_ADMIN = Credentials("benchAdmin", "benchAdminSecret")
ACL_YAML = f"""\
accounts:
  - accessKey: {ACL_ADMIN.access_key}
    secretKey: {ACL_ADMIN.secret_key}
    whiteRemoteAddress:
    admin: true
"""
ACL_CASES = (Case("send@64", 64, 1), Case("send@64 json", 64, 1, True))


def acl_cases(args: argparse.Namespace, warm: float) -> dict[str, list[Sample]]:
    """Unsigned sends to a plain broker and signed ones to an ACL broker, alternating."""
    out: dict[str, list[Sample]] = {}
    with tempfile.TemporaryDirectory() as acl_dir:
        acl_file = Path(acl_dir) / "plain_acl.yml"
        acl_file.write_text(ACL_YAML)
        acl_sets = ("aclEnable=true", f"aclFile={acl_file}", f"aclDir={acl_dir}/acl")
        with (
            bench_broker("ASYNC_FLUSH") as plain,
            bench_broker("ASYNC_FLUSH", *acl_sets) as acl,
            pinned(plain.pid, acl.pid),
        ):
            uvloop.run(create_topic(f"127.0.0.1:{plain.port}"))
            uvloop.run(create_topic(f"127.0.0.1:{acl.port}", ACL_ADMIN))
            for _ in range(args.repeat):
                for case in ACL_CASES:
                    for label, broker, creds in (("unsigned", plain, None),
                                                 ("signed", acl, ACL_ADMIN)):  # fmt: skip
                        cpu0, own0 = broker.cpu_seconds(), time.process_time()
                        addr = f"127.0.0.1:{broker.port}"
                        sample = uvloop.run(
                            measure(addr, case, warm, args.seconds, credentials=creds)
                        )
                        cpu = broker.cpu_seconds() - cpu0
                        own = time.process_time() - own0
                        msgs = max(sample.ops * (args.seconds + warm * 2), 1)
                        out.setdefault(f"ACL:{label} {case.name}", []).append(sample)
                        out.setdefault(f"ACL:{label} {case.name}:cpu", []).append(
                            Sample(1e6 * cpu / msgs, 0, 0)
                        )
                        out.setdefault(f"ACL:{label} {case.name}:client", []).append(
                            Sample(1e6 * own / msgs, 0, 0)
                        )
    return out


@contextlib.contextmanager
def pinned(*brokers: int) -> Iterator[None]:
    """The brokers on one core and this process (the client) on another, where the machine
    has two: the broker's throughput is then what is measured, as where its clients run on
    other hosts, and not how two busy processes share the cores (both CPU costs are
    reported beside it)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        yield
        return
    for pid in brokers:
        os.sched_setaffinity(pid, {cpus[-1]})
    os.sched_setaffinity(0, {cpus[0]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, set(cpus))


def report_acl(med: dict[str, Sample]) -> dict[str, float]:
    pin = "client and broker pinned apart" if len(os.sched_getaffinity(0)) >= 2 else "one core"
    print(f"\n{'ACL shape (ASYNC_FLUSH, ' + pin + ')':<46}{'req/s':>10}{'p50 us':>10}"
          f"{'p99 us':>10}{'broker us/msg':>15}{'client us/msg':>15}")  # fmt: skip
    ratios = {}
    for case in ACL_CASES:
        for label in ("unsigned", "signed"):
            name = f"ACL:{label} {case.name}"
            s, cpu, own = med[name], med[f"{name}:cpu"].ops, med[f"{name}:client"].ops
            print(f"{label + ' ' + case.name:<46}{s.ops:>10,.0f}{s.p50_us:>10.1f}"
                  f"{s.p99_us:>10.1f}{cpu:>15.1f}{own:>15.1f}")  # fmt: skip
        key = f"signed/unsigned_{case.name.replace(' ', '_')}"
        ratios[key] = med[f"ACL:signed {case.name}"].ops / med[f"ACL:unsigned {case.name}"].ops
        print(f"signed / unsigned {case.name}: {ratios[key]:.2f} (target >= 0.90)")
        both = {
            label: med[f"ACL:{label} {case.name}:cpu"].ops
            + med[f"ACL:{label} {case.name}:client"].ops
            for label in ("unsigned", "signed")
        }
        print(f"  CPU per message, broker + client: {both['unsigned']:.1f} -> "
              f"{both['signed']:.1f} us ({both['unsigned'] / both['signed']:.2f}x)")  # fmt: skip
    return ratios


TRACE_DEPTHS = (1, 64)


async def measure_sdk(namesrv: str, depth: int, trace: bool, warm: float, s: float) -> Sample:
    """The SDK Producer's send at ``depth`` in flight; traced or not. A traced run also
    reports the records its dispatcher dropped (as a Sample's ops)."""
    async with Producer("bench_trace_pg", namesrv_addr=namesrv, trace=trace) as producer:
        msg = Message(TOPIC, BODY, tags="TagA", keys="k")
        sample = await drive(lambda: producer.send(msg), depth, warm, s)
        dispatcher = producer.trace_dispatcher
        if dispatcher is not None:
            _dropped.append(dispatcher.dropped)
        return sample


_dropped: list[int] = []


def trace_cases(args: argparse.Namespace, warm: float) -> dict[str, list[Sample]]:
    """SDK send@1 / send@64, untraced and traced, alternating, against one broker."""
    out: dict[str, list[Sample]] = {}
    with listening_process(["-m", "aiorocketmq.namesrv", "--listen-port", "0"]) as ns:
        namesrv = f"127.0.0.1:{ns.port}"
        with bench_broker("ASYNC_FLUSH", f"namesrvAddr={namesrv}", "traceTopicEnable=true") as b:
            uvloop.run(create_topic(f"127.0.0.1:{b.port}"))
            for _ in range(args.repeat):
                for depth in TRACE_DEPTHS:
                    for label, trace in (("off", False), ("on", True)):
                        sample = uvloop.run(measure_sdk(namesrv, depth, trace, warm, args.seconds))
                        out.setdefault(f"TRACE:{label}:send@{depth}", []).append(sample)
    return out


def report_trace(med: dict[str, Sample]) -> dict[str, float]:
    print(f"\n{'trace shape (SDK, JSON)':<30}{'msgs/s':>10}{'p50 us':>10}{'p99 us':>10}")
    ratios = {}
    for depth in TRACE_DEPTHS:
        for label in ("off", "on"):
            s = med[f"TRACE:{label}:send@{depth}"]
            print(f"{'trace ' + label + f' send@{depth}':<30}{s.ops:>10,.0f}{s.p50_us:>10.1f}"
                  f"{s.p99_us:>10.1f}")  # fmt: skip
        key = f"trace_on/off_send@{depth}"
        ratios[key] = med[f"TRACE:on:send@{depth}"].ops / med[f"TRACE:off:send@{depth}"].ops
        print(f"trace on / off send@{depth}: {ratios[key]:.2f}")
    print(f"trace records dropped (a full queue), most in one run: {max(_dropped, default=0)}")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--shapes", choices=("all", "acl", "trace"), default="all",
                        help="acl: only the ACL shape (signed against unsigned); trace: only "
                             "the trace shape (the SDK traced against untraced)")  # fmt: skip
    args, warm = parse_args(__doc__ or "", parser)
    quiet_logging()
    if args.shapes == "trace":
        med = {k: median_sample(v) for k, v in trace_cases(args, warm).items()}
        ratios = report_trace(med)
        print(json.dumps({"bench": "send", "shapes": "trace", "cases": _cases_json(med),
                          "ratios": {k: round(v, 3) for k, v in ratios.items()}}))  # fmt: skip
        return 0
    if args.shapes == "acl":
        med = {k: median_sample(v) for k, v in acl_cases(args, warm).items()}
        ratios = report_acl(med)
        print(json.dumps({"bench": "send", "shapes": "acl", "cases": _cases_json(med),
                          "ratios": {k: round(v, 3) for k, v in ratios.items()}}))  # fmt: skip
        return 0
    samples: dict[str, list[Sample]] = {}
    with server_process() as ports:
        for _ in range(args.repeat):
            for depth in (1, 64):
                echo = uvloop.run(measure_echo(ports["ours"], depth, warm, args.seconds))
                samples.setdefault(f"echo@{depth}", []).append(echo)
    for flush in ("ASYNC_FLUSH", "SYNC_FLUSH"):
        samples.update(broker_cases(flush, args, warm))
    samples.update(tls_cases(args, warm))
    samples.update(acl_cases(args, warm))
    samples.update(trace_cases(args, warm))
    report({k: median_sample(v) for k, v in samples.items()})
    return 0


def _cases_json(med: dict[str, Sample]) -> dict[str, dict[str, float]]:
    return {
        k: {"ops": round(v.ops, 1), "p50_us": v.p50_us, "p99_us": v.p99_us} for k, v in med.items()
    }


def report(med: dict[str, Sample]) -> None:
    print(
        f"\n{'case':<30}{'req/s':>10}{'msgs/s':>10}{'p50 us':>10}{'p99 us':>10}{'cpu us/msg':>12}"
    )
    for depth in (1, 64):
        s = med[f"echo@{depth}"]
        print(
            f"{'echo@' + str(depth):<30}{s.ops:>10,.0f}{'':>10}{s.p50_us:>10.1f}{s.p99_us:>10.1f}"
        )
    for flush in ("ASYNC_FLUSH", "SYNC_FLUSH"):
        for case in cases(flush):
            s, cpu = med[f"{flush}:{case.name}"], med[f"{flush}:{case.name}:cpu"].ops
            msgs = s.ops * case.per_op
            print(
                f"{flush + ' ' + case.name:<30}{s.ops:>10,.0f}{msgs:>10,.0f}{s.p50_us:>10.1f}"
                f"{s.p99_us:>10.1f}{cpu:>12.1f}"
            )
    ratios = {
        "async_send@64/echo@64": med["ASYNC_FLUSH:send@64"].ops / med["echo@64"].ops,
        "async_batch32_msgs/send_msgs@64": 32
        * med["ASYNC_FLUSH:batch32@64"].ops
        / med["ASYNC_FLUSH:send@64"].ops,
        "sync_batch32_msgs/send_msgs@64": 32
        * med["SYNC_FLUSH:batch32@64"].ops
        / med["SYNC_FLUSH:send@64"].ops,
        "json/msgpack_send@64": med["ASYNC_FLUSH:send@64 json"].ops
        / med["ASYNC_FLUSH:send@64"].ops,
        "json/msgpack_batch32@64": med["ASYNC_FLUSH:batch32@64 json"].ops
        / med["ASYNC_FLUSH:batch32@64"].ops,
        "tls/plain_send@64": med["TLS:tls:send@64"].ops / med["TLS:plain:send@64"].ops,
    }
    print(
        f"\nsend@64 / echo@64 (ASYNC_FLUSH): {ratios['async_send@64/echo@64']:.2f} (target >= 0.50)"
    )
    a, b = ratios["async_batch32_msgs/send_msgs@64"], ratios["sync_batch32_msgs/send_msgs@64"]
    print(f"batch-32 / single-send messages/s @64: ASYNC {a:.1f}x, SYNC {b:.1f}x (target >= 5x)")
    j1, j2 = ratios["json/msgpack_send@64"], ratios["json/msgpack_batch32@64"]
    print(f"JSON / msgpack headers (ASYNC_FLUSH): send@64 {j1:.2f}, batch32@64 {j2:.2f} (>= 0.80)")
    for name in ("plain", "tls"):
        s, cpu = med[f"TLS:{name}:send@64"], med[f"TLS:{name}:send@64:cpu"].ops
        print(f"{'send@64 ' + name + ' (permissive)':<30}{s.ops:>10,.0f}{s.ops:>10,.0f}"
              f"{s.p50_us:>10.1f}{s.p99_us:>10.1f}{cpu:>12.1f}")  # fmt: skip
    print(f"TLS / plaintext send@64: {ratios['tls/plain_send@64']:.2f} (target >= 0.60)")
    ratios.update(report_acl(med))
    ratios.update(report_trace(med))
    line = {
        "bench": "send",
        "cases": _cases_json(med),
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
    }
    print(json.dumps(line))


if __name__ == "__main__":
    sys.exit(main())
