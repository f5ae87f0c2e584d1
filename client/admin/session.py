"""One mqadmin run's connections: the name servers (tried in order, as Java's client does) and
the brokers, over one SDK ``api.Remote`` with JSON headers (what Apache's servers expect from a
Java client), each call bounded by ``timeout``. Every request is signed with the run's
credentials and sent over TLS when asked (``access``); the SDK clients a command starts take
the same (``keywords``)."""

from __future__ import annotations

from collections.abc import Iterable

from aiorocketmq.client import MQClientError, SecuritySettings, api
from aiorocketmq.client.admin.access import Access
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.route import MASTER_ID, BrokerData, ClusterInfo, TopicRouteData


class AdminError(Exception):
    """A command failed; the message is the whole cause, printed on one line. ``refused``: a
    server answered with an error code (else it could not be reached or did not answer)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def refusal(resp: RemotingCommand, where: str) -> AdminError:
    remark = (resp.remark or "").replace("\n", " ").strip()
    name = _code_name(resp.code)
    text = f"{where} answered {resp.code} {name}: {remark or '(no remark)'}"
    return AdminError(text, refused=True)


def _code_name(code: int) -> str:
    try:
        return R(code).name
    except ValueError:
        return "UNKNOWN_CODE"


class Session:
    def __init__(
        self, namesrv: Iterable[str], timeout: float = 5.0, access: Access | None = None
    ) -> None:
        self.namesrv_addrs = [a.strip() for a in namesrv if a.strip()]
        self.timeout = timeout
        self.access = access or Access()
        self.keywords: SecuritySettings = self.access.keywords()  # for the SDK clients of a command
        self.client = api.Remote.open(
            ClientConfig(serialize_type=SerializeType.JSON, reconnect_backoff_initial_millis=0),
            **self.keywords,
        )

    async def close(self) -> None:
        await self.client.close()

    async def call(self, addr: str, req: RemotingCommand) -> RemotingCommand:
        """``req`` to ``addr``; a connect failure or timeout is an AdminError naming it."""
        try:
            return await self.client.invoke(addr, req, self.timeout)
        except MQClientError as exc:  # "<addr>: <the remoting failure>"
            raise AdminError(str(exc)) from None

    async def ok(self, addr: str, req: RemotingCommand, *codes: int) -> RemotingCommand:
        """``call``, and the response must have one of ``codes`` (default SUCCESS)."""
        resp = await self.call(addr, req)
        if resp.code not in (codes or (R.SUCCESS,)):
            raise refusal(resp, addr)
        return resp

    async def namesrv(self, req: RemotingCommand, *codes: int) -> RemotingCommand:
        """``req`` to the first name server that answers (each gets a fresh copy)."""
        if not self.namesrv_addrs:
            raise AdminError("no name server: give -n host:port[;host:port] or set NAMESRV_ADDR")
        last: AdminError | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self.ok(addr, _copy(req), *codes)
            except AdminError as exc:
                if exc.refused:
                    raise
                last = exc
        assert last is not None
        raise last

    async def each_namesrv(self, req: RemotingCommand) -> dict[str, RemotingCommand | str]:
        """``req`` to every name server: its response, or why it failed."""
        out: dict[str, RemotingCommand | str] = {}
        for addr in self.namesrv_addrs:
            try:
                out[addr] = await self.call(addr, _copy(req))
            except AdminError as exc:
                out[addr] = str(exc)
        return out

    async def cluster_info(self) -> ClusterInfo:
        resp = await self.namesrv(api.request(C.GET_BROKER_CLUSTER_INFO))
        return ClusterInfo.decode(resp.body)

    async def route(self, topic: str) -> TopicRouteData:
        resp = await self.namesrv(api.get_route(topic))
        return TopicRouteData.decode(resp.body)

    async def masters(self, cluster: str) -> list[BrokerData]:
        """The broker groups of ``cluster`` with a master, sorted by name
        (CommandUtil.fetchMasterAddrByClusterName)."""
        info = await self.cluster_info()
        if cluster not in info.cluster_addr_table:
            raise AdminError(f"cluster {cluster} not found in the name server's cluster table")
        names = sorted(info.cluster_addr_table[cluster])
        groups = [info.broker_addr_table[n] for n in names if n in info.broker_addr_table]
        return [g for g in groups if MASTER_ID in g.broker_addrs]


def _copy(req: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.request(req.code, dict(req.ext_fields), req.body)
