"""Helpers of benchmarks/transactions.py: a broker process whose JSON log is kept (its
``transaction_check`` events), the lean transactional producer's requests, and a latency
probe running in a child process (so decoding 10,000 check requests here never delays it)."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

import uvloop

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    EndTransactionRequestHeader,
)
from aiorocketmq.remoting.protocol.message import SysFlag, encode_properties
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from benchmarks.common import ROOT, Listening, broker_argv, quiet_logging, stop_process

BODY = bytes(range(256)) * 4
GROUP = "bench_tx_pg"
JSON_CLIENT = ClientConfig(serialize_type=SerializeType.JSON)  # what a Java client sends


class BrokerLog:
    """A ``python -m aiorocketmq.broker`` child; its JSON log events are kept for ``wait_for``."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.port = int(self.wait_for("listening", 30)["port"])
        self.addr = f"127.0.0.1:{self.port}"
        self.listening = Listening(self.port, proc.pid)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    with self._cond:
                        self.events.append(event)
                        self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, name: str, timeout: float) -> dict[str, Any]:
        """The first log event called ``name``; raises if the broker exits or time is up."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [e for e in self.events if e.get("event") == name]
                if found:
                    return found[0]
                if self.proc.poll() is not None:
                    raise RuntimeError(f"broker exited {self.proc.returncode} before {name!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {name!r} event from the broker within {timeout} s")
                self._cond.wait(min(left, 0.2))

    def count(self, name: str) -> int:
        with self._cond:
            return sum(1 for e in self.events if e.get("event") == name)


@contextlib.contextmanager
def logged_broker(sets: Sequence[str]) -> Iterator[BrokerLog]:
    """An ASYNC_FLUSH broker in a fresh directory, on port 0; stopped by its PID."""
    with tempfile.TemporaryDirectory() as tmp:
        sets = [f"storePathRootDir={tmp}", "brokerIP1=127.0.0.1", "brokerName=bench",
                "flushDiskType=ASYNC_FLUSH", *sets]  # fmt: skip
        argv = broker_argv(sets)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, env=env) as proc:
            try:
                yield BrokerLog(proc)
            finally:
                stop_process(proc)


# ------------------------------------------------------------ the lean producer's requests


def send_request(
    topic: str, queue_id: int, uniq: str, *, half: bool, born: int | None = None
) -> RemotingCommand:
    """SEND_MESSAGE_V2 as DefaultMQProducerImpl.sendKernelImpl builds it; a half message
    (TransactionMQProducer) adds TRAN_MSG and PGROUP and the prepared sysFlag."""
    props = {"UNIQ_KEY": uniq, "TAGS": "TagA", "KEYS": "k"}
    if half:
        props |= {"TRAN_MSG": "true", "PGROUP": GROUP}
    return api.send_message(
        topic, BODY, group=GROUP, properties=encode_properties(props), queue_id=queue_id,
        sys_flag=SysFlag.TRANSACTION_PREPARED if half else 0, born_timestamp=born,
    )  # fmt: skip


def commit_request(sent: RemotingCommand, uniq: str) -> RemotingCommand:
    """DefaultMQProducerImpl.endTransaction: END_TRANSACTION 8 (commit), oneway, the offsets
    taken from the half's send answer."""
    hdr = EndTransactionRequestHeader(
        producer_group=GROUP,
        tran_state_table_offset=int(sent.ext_fields["queueOffset"]),
        commit_log_offset=parse_offset_msg_id(sent.ext_fields["msgId"])[1],
        commit_or_rollback=TRANSACTION_COMMIT_TYPE,
        msg_id=uniq,
        transaction_id=uniq,
    )
    return RemotingCommand.request(C.END_TRANSACTION, hdr.to_ext(), oneway=True)


async def topic_total(cli: RemotingClient, addr: str, topic: str, queues: int) -> int:
    """Messages in the topic: the sum of GET_MAX_OFFSET over its queues."""
    total = 0
    for queue_id in range(queues):
        resp = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, topic, queue_id))
        total += api.parse_offset(resp, addr)
    return total


# ------------------------------------------------------------ the latency probe


@dataclass(frozen=True)
class Probe:
    """GET_MAX_OFFSET back to back (1 in flight) from a child process, until stopped."""

    process: multiprocessing.process.BaseProcess
    stop_flag: Event
    results: Connection

    @classmethod
    def start(cls, addr: str, topic: str) -> Probe:
        """Returns once the child's connection is up and it is probing."""
        ctx = multiprocessing.get_context("spawn")
        stop, (ours, theirs) = ctx.Event(), ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_probe_main, args=(addr, topic, stop, theirs), daemon=True)
        proc.start()
        theirs.close()
        if not ours.poll(30) or ours.recv() != "ready":
            proc.kill()
            raise RuntimeError("the probe process did not start")
        return cls(proc, stop, ours)

    def stop(self) -> list[tuple[float, int]]:
        """(wall clock when sent, answer time in ns) of every probe."""
        self.stop_flag.set()
        try:
            if not self.results.poll(30):
                raise RuntimeError("the probe process did not report")
            samples: list[tuple[float, int]] = self.results.recv()
            return samples
        finally:
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()


def _probe_main(addr: str, topic: str, stop: Event, out: Connection) -> None:
    quiet_logging()
    out.send(uvloop.run(_probe(addr, topic, stop, out)))


async def _probe(addr: str, topic: str, stop: Event, out: Connection) -> list[tuple[float, int]]:
    samples: list[tuple[float, int]] = []
    async with RemotingClient(JSON_CLIENT) as cli:
        await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, topic, 0))
        out.send("ready")
        limit = time.monotonic() + 300  # bounded even if the parent never stops it
        while not stop.is_set() and time.monotonic() < limit:
            req = api.queue_request(C.GET_MAX_OFFSET, topic, 0)
            wall, t0 = time.time(), time.perf_counter_ns()
            resp = await cli.invoke(addr, req, 10)
            samples.append((wall, time.perf_counter_ns() - t0))
            if resp.code != 0:
                raise RuntimeError(f"probe failed: {resp.code} {resp.remark}")
    return samples
