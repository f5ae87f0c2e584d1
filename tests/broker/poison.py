"""Helpers for the poison-pill tests (issue 29, build item 3): an in-process name server and
broker on port 0, a delayed message written through the store API, route and offset probes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.server import Broker
from aiorocketmq.broker.store import MessageStore, PutStatus
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.namesrv.config import NamesrvConfig
from aiorocketmq.namesrv.server import Namesrv
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import MessageExt, Prop
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC
from tests.broker.wire import max_offset, route, send_v2
from tests.cluster import BROKER_DEFAULTS

# a group name no edge should let in: %RETRY% + 300 characters is no topic the store keeps
LONG_GROUP = "g" * 300


def store_config(root: Path) -> StoreConfig:
    """The store of a tests.cluster broker (its segment sizes) under ``root``."""
    return StoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=int(BROKER_DEFAULTS["mappedFileSizeCommitLog"]),
        mapped_file_size_consume_queue=int(BROKER_DEFAULTS["mappedFileSizeConsumeQueue"]),
    )


def delayed(
    real_topic: str, level: int = 1, uniq: str = "7F0000010000000000000000000E"
) -> MessageExt:
    """A message waiting in SCHEDULE_TOPIC_XXXX level ``level`` for ``real_topic`` queue 0,
    as a send-back or a DELAY send leaves it."""
    props = {Prop.REAL_TOPIC: real_topic, Prop.REAL_QID: "0", Prop.DELAY: str(level),
             Prop.UNIQ_KEY: uniq}  # fmt: skip
    born = int(time.time() * 1000)
    return MessageExt(topic=SCHEDULE_TOPIC, queue_id=level - 1, body=b"never", properties=props,
                      born_host="127.0.0.1:5555", born_timestamp=born)  # fmt: skip


async def write_delayed(root: Path, msg: MessageExt) -> None:
    """Store ``msg`` in the store at ``root`` through the store API, as a broker would have
    (no request edge in the way), and close the store again."""
    store = MessageStore(store_config(root), store_host="127.0.0.1:10911")
    await store.start()
    try:
        result = await store.put(msg)
        assert result.status is PutStatus.PUT_OK, result
    finally:
        await store.shutdown()


@contextlib.asynccontextmanager
async def in_process(root: Path) -> AsyncIterator[tuple[Namesrv, Broker]]:
    """A name server and broker-a, real servers on 127.0.0.1 port 0 in this process."""
    local = ServerConfig(listen_port=0, bind_address="127.0.0.1")
    ns_config = NamesrvConfig(kv_config_path=str(root / "kv.json"), metrics_port=-1)
    async with Namesrv(ns_config, local) as ns:
        config = BrokerConfig(broker_name="broker-a", namesrv_addr=f"127.0.0.1:{ns.port}",
                              broker_ip1="127.0.0.1", register_name_server_period=1000,
                              metrics_port=-1)  # fmt: skip
        async with Broker(config, store_config(root / "broker-a"), local) as broker:
            yield ns, broker


async def queue_counts(cli: RemotingClient, namesrv: str, topic: str) -> tuple[int, list[int]]:
    """GET_ROUTEINFO_BY_TOPIC: the answer's code and each broker's read queue count."""
    resp = await route(cli, namesrv, topic)
    if resp.code != 0:
        return resp.code, []
    return 0, [q.read_queue_nums for q in TopicRouteData.decode(resp.body).queue_datas]


async def send_back(cli: RemotingClient, addr: str, topic: str, group: str, level: int) -> None:
    """Send a message to ``topic`` queue 0, then CONSUMER_SEND_MSG_BACK it for ``group`` at
    delay level ``level``: a retry that goes through SCHEDULE_TOPIC_XXXX."""
    sent = await cli.invoke(addr, send_v2(topic, b"retry me", queue_id=0))
    assert sent.code == 0, sent.remark
    offset = parse_offset_msg_id(sent.ext_fields["msgId"])[1]
    ext = {"offset": str(offset), "group": group, "delayLevel": str(level), "unitMode": "false"}
    back = await cli.invoke(addr, RemotingCommand.request(C.CONSUMER_SEND_MSG_BACK, ext))
    assert back.code == 0, back.remark


async def retried(cli: RemotingClient, addr: str, group: str) -> int:
    """Messages delivered to ``%RETRY%<group>`` (one queue, as groups are made by default)."""
    return await max_offset(cli, addr, f"%RETRY%{group}", 0)


async def registered(broker: Broker, *, full: bool = False) -> None:
    """Until the registration the changes so far started is done (``full``: a whole-table
    round of its own, as the periodic timer makes)."""
    assert broker.registrar is not None, "started"
    if full:
        await broker.registrar.register_all()
    await broker.registrar.wait()
