"""NamesrvAPI: a broker's calls to every name server -- register, unregister (BrokerOuterAPI).

Brokers reach name servers through remoting.client, never through the SDK (no cycle).
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass

import structlog

from aiorocketmq.broker.registrable import LeftOut
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.namesrv import (
    BrokerIdentityHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
)
from aiorocketmq.remoting.protocol.register import RegisterBrokerBody, TopicConfigWrapper

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    cluster: str
    name: str
    broker_id: int
    addr: str  # what clients dial
    ha_addr: str


class NamesrvAPI:
    def __init__(self, client: RemotingClient, addrs: list[str], timeout: float) -> None:
        self._client = client
        self.addrs = addrs
        self._timeout = timeout
        self.master: RegisterBrokerResponseHeader | None = None  # learned by a slave
        self.left_out = LeftOut()  # topics no name server would route: never sent

    async def register_all(self, me: BrokerIdentity, topics: TopicConfigWrapper) -> int:
        """REGISTER_BROKER to every name server at once; returns how many accepted it."""
        topics = self.left_out.registrable(topics)
        body = RegisterBrokerBody(topic_config_wrapper=topics).encode()
        ext = RegisterBrokerRequestHeader(
            broker_name=me.name,
            broker_addr=me.addr,
            cluster_name=me.cluster,
            ha_server_addr=me.ha_addr,
            broker_id=me.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        ).to_ext()
        results = await asyncio.gather(
            *(self._register_one(addr, ext, body) for addr in self.addrs)
        )
        return sum(results)

    async def _register_one(self, addr: str, ext: dict[str, str], body: bytes) -> bool:
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body)
        try:
            resp = await self._client.invoke(addr, request, self._timeout)
        except RemotingError as exc:
            log.warning("register_broker_failed", namesrv=addr, error=str(exc))
            return False
        if resp.code != ResponseCode.SUCCESS:
            log.warning("register_broker_refused", namesrv=addr, code=resp.code, remark=resp.remark)
            return False
        self.master = RegisterBrokerResponseHeader.from_ext(resp.ext_fields)
        return True

    async def close(self) -> None:
        await self._client.close()

    async def unregister_all(self, me: BrokerIdentity) -> None:
        """UNREGISTER_BROKER everywhere, so clients reroute now rather than after 120 s."""
        ext = BrokerIdentityHeader(
            broker_name=me.name,
            broker_addr=me.addr,
            cluster_name=me.cluster,
            broker_id=me.broker_id,
        ).to_ext()

        async def one(addr: str) -> None:
            try:
                request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(ext))
                await self._client.invoke(addr, request, self._timeout)
            except RemotingError as exc:
                log.warning("unregister_broker_failed", namesrv=addr, error=str(exc))

        await asyncio.gather(*(one(addr) for addr in self.addrs))
