"""Broker: wiring, start and stop order, name server registration (BrokerController).

Entering: bind, load topics and groups, recover the store, serve, register with every name
server, log ``listening``. Leaving (design.md 9): stop accepting, unregister, drain requests,
stop loops, flush and checkpoint the store, close connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import structlog

from aiorocketmq.broker import java_keys
from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.consumers import Consumers
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.controller.metrics import controller_metrics
from aiorocketmq.broker.failover import Failover
from aiorocketmq.broker.groups import SubscriptionGroups
from aiorocketmq.broker.listen import HA_OFFSET, bind_listeners, vip_routes
from aiorocketmq.broker.meta_follow import MetaFollower
from aiorocketmq.broker.meta_records import META_QUEUE, META_TOPIC
from aiorocketmq.broker.meta_stream import MetaStream
from aiorocketmq.broker.metrics import BrokerCollector
from aiorocketmq.broker.namesrv_api import BrokerIdentity, NamesrvAPI
from aiorocketmq.broker.processors.acl import AclProcessor
from aiorocketmq.broker.processors.admin import AdminProcessor
from aiorocketmq.broker.processors.callclient import CallClientProcessor
from aiorocketmq.broker.processors.client import ClientProcessor
from aiorocketmq.broker.processors.controller import ControllerProcessor
from aiorocketmq.broker.processors.endtx import EndTransactionProcessor
from aiorocketmq.broker.processors.groups import GroupAdminProcessor
from aiorocketmq.broker.processors.pull import PullProcessor
from aiorocketmq.broker.processors.query import QueryProcessor
from aiorocketmq.broker.processors.reply import ReplyProcessor
from aiorocketmq.broker.processors.runtime import RuntimeProcessor
from aiorocketmq.broker.processors.send import SendProcessor
from aiorocketmq.broker.processors.timer import TimerProcessor
from aiorocketmq.broker.registration import Registrar
from aiorocketmq.broker.replication import Replication, check_role
from aiorocketmq.broker.roles import Roles
from aiorocketmq.broker.routes import Processors, bulkheads, routes
from aiorocketmq.broker.slave_sync import SlaveSync, SyncProcessor
from aiorocketmq.broker.stats import SAMPLE_SECONDS, BrokerStats
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.broker.topics import TopicTable, system_topics
from aiorocketmq.broker.transactions import Transactions
from aiorocketmq.broker.txcheck import TransactionCheck
from aiorocketmq.remoting.acl.config import inner_credentials, location
from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.acl.metrics import AclCollector
from aiorocketmq.remoting.acl.validator import BROKER
from aiorocketmq.remoting.acl.watch import AclFiles
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.counters import RequestStats
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.metrics import Metrics
from aiorocketmq.remoting.metrics_port import bind_metrics, metrics_port
from aiorocketmq.remoting.metrics_token import BearerToken
from aiorocketmq.remoting.process import prepare_server_process
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.server import RemotingServer
from aiorocketmq.remoting.tasks import every
from aiorocketmq.remoting.tls_config import TlsConfig
from aiorocketmq.remoting.tls_context import client_context_from, server_context, server_tls

log = structlog.get_logger(__name__)


class Broker(Service):
    """``async with Broker(cfg, store_cfg, server_cfg)`` serves until the block ends;
    ``config_file`` is the file it was configured from (``-c``), which UPDATE_BROKER_CONFIG
    writes (BrokerPathConfigHelper.brokerConfigPath). ``tls`` (the ``tls.*`` keys): TLS on its
    ports, on its connections to name servers and its master, and on the HA port."""

    def __init__(
        self,
        config: BrokerConfig,
        store_config: StoreConfig,
        server: ServerConfig,
        *,
        config_file: str | None = None,
        tls: TlsConfig | None = None,
    ):
        self.config = config
        # TLS contexts first: a certificate that does not load stops the start before anything
        tls = tls or TlsConfig()
        # outbound (broker -> name server, slave -> master): tls.enable, as BrokerOuterAPI
        self.outbound_tls = client_context_from(tls) if tls.client_enable else None
        self.reported = java_keys.facts(tls.client_enable)  # GET_BROKER_CONFIG's useTLS, ...
        self.port_tls = server_tls(tls)  # the VIP port too: 4.9.8's fastRemotingServer shares it
        self.ha_tls = (
            (self.port_tls.context or server_context(tls), client_context_from(tls))
            if tls.ha_enable
            else None
        )
        # compat: without -c Java writes ~/store/config/broker.properties whatever
        # storePathRootDir is; we keep it with the broker's other files
        self.config_file = (
            Path(config_file) if config_file else config_path(store_config) / "broker.properties"
        )
        self.store_config = store_config
        self.server_config = server
        # the account this broker signs its own requests with (name servers, its master)
        self.inner = inner_credentials(config.inner_client_authentication_credentials)
        self.namesrv = NamesrvAPI(
            RemotingClient(tls=self.outbound_tls, credentials=self.inner),
            config.namesrv_addrs,
            config.register_broker_timeout_mills / 1000,
        )
        self.acl: AclGuard | None = None  # aclEnable: the check of every request
        self.servers: list[RemotingServer] = []  # the main port, then the VIP port
        self._loops: list[asyncio.Task[None]] = []
        self._role_loops: list[asyncio.Task[None]] = []  # master-only or slave-only loops
        self._closing = False
        self.registrar: Registrar | None = None
        self.metrics: Metrics | None = None
        self.failover: Failover | None = None  # controller mode with controllerAddr

    async def start(self) -> None:
        cfg, server_cfg = self.config, self.server_config
        prepare_server_process()  # before the store: its file limits depend on it
        controller = cfg.enable_controller_mode
        self.broker_id = check_role(cfg.broker_role, cfg.broker_id, controller=controller)
        self.acl = acl = self._load_acl()  # a bad ACL file stops the start before any bind
        listeners = bind_listeners(server_cfg.bind_address, server_cfg.listen_port)
        sock, vip_sock = listeners.main, listeners.vip
        self.port = sock.getsockname()[1]
        metrics_sock, token = None, None
        try:  # the metrics port before the store opens: a taken one stops the start here
            metrics_at = metrics_port(cfg.metrics_port, server_cfg.listen_port)
            if metrics_at >= 0:
                if cfg.metrics_bearer_token_file:  # so does a token file that cannot be read
                    token = BearerToken(cfg.metrics_bearer_token_file)
                metrics_sock = bind_metrics(cfg.metrics_host or cfg.broker_ip1, metrics_at)
            self.ctx = await self._open(f"{cfg.broker_ip1}:{self.port}")
        except BaseException:
            listeners.close()
            if metrics_sock is not None:
                metrics_sock.close()
            raise
        ctx = self.ctx
        self.replication = Replication(
            ctx, self.namesrv, self.ha_tls, credentials=self.inner, acl=acl
        )
        await self.replication.start(listeners.ha)
        self.roles = Roles(self, controller=controller)
        self.consumers = Consumers(ctx, self._files())
        self.consumers.load()
        # a slave applies its master's metadata records; consumerOffset.json says which of
        # them it holds, and the later ones (and a master's own) are applied now
        self.meta_follower = MetaFollower(ctx, self.consumers.offsets)
        offsets = self.consumers.offsets
        offsets.records = lambda: ctx.store.max_offset(META_TOPIC, META_QUEUE)
        self.meta_follower.replay_offsets(offsets.loaded_records)
        self.timer = TimerService(ctx.store, lambda: self.ctx.store_config)
        self.timer.load()  # the wheel rebuilt, before any request can add to it
        self.transactions = Transactions(ctx, self.consumers.offsets)
        ops = self.transactions.rebuild()
        self.tx_check = TransactionCheck(self.transactions, self.consumers.registry)
        # metadata with the HA stream: a master writes its changes, a slave applies them
        master = self.replication.master
        # a controller-mode master streams from its first write: its replicas exist by design,
        # and one elected before they reconnect must not leave its first commits off the stream
        controller_mode = cfg.enable_controller_mode
        self.meta = MetaStream(
            ctx, self.consumers.offsets, lambda: master.ever_connected or controller_mode
        )
        ctx.topics.replicate = self.meta.topics_changed
        ctx.groups.replicate = self.meta.groups_changed
        self.slave_sync = SlaveSync(
            ctx, self.consumers.offsets, self.consumers.schedule, self._master_addr,
            self.meta_follower, tls=self.outbound_tls, credentials=self.inner,
        )  # fmt: skip
        self.slave_sync.timer = self.timer
        if ops:
            log.info("transaction_ops_read", ops=ops, low=self.transactions.ops.low)
        table, limits = routes(self._processors()), bulkheads(cfg)  # shared by both ports
        stats = RequestStats() if metrics_sock is not None else None  # both ports count in it
        self.servers = [
            RemotingServer(
                tbl,
                server_cfg,
                bulkheads=limits,
                announce=False,
                sock=s,
                stats=stats,
                tls=self.port_tls,
                guard=acl,
            )
            for tbl, s in ((table, sock), (vip_routes(table), vip_sock))
            if s is not None
        ]
        for server in self.servers:
            server.add_close_listener(self.consumers.channel_closed)
            await server.start()
        if stats is not None:
            collectors = [BrokerCollector(self), *([AclCollector(acl)] if acl else [])]
            self.metrics = Metrics(cfg.metrics_host or cfg.broker_ip1, metrics_at, stats,
                                   self._listeners, collectors,
                                   sock=metrics_sock, token=token)  # fmt: skip
            await self.metrics.start()
        self.registrar = registrar = Registrar(
            self.namesrv, ctx.topics, lambda: self.identity, lambda: ctx.config.broker_permission
        )
        ctx.topics.listeners.append(registrar.changed)
        ctx.topic_registered = ctx.topics.registered = registrar.wait
        ctx.on_config_change.append(self._config_changed)
        if not self.namesrv.addrs:
            log.warning("no_namesrv", hint="set namesrvAddr, -n or NAMESRV_ADDR")
        if self.roles.registrable:  # a fenced broker registers once it has a role
            await registrar.register_all()
        self._start_loops()
        if controller and cfg.controller_addr:  # elected in etcd (else told over the wire)
            self.failover = Failover(cfg, ctx.addr, self.roles, self.replication)
            if self.metrics is not None:  # elections, epoch, role, SyncStateSet, fenced
                self.metrics.registry.register(controller_metrics(self.failover.controller))
            await self.failover.start()
        log.info(
            "listening",
            host=self.servers[0].host,
            port=self.port,
            vip_port=self.port - 2 if vip_sock is not None else None,
            broker=cfg.broker_name,
            addr=ctx.addr,
        )

    def _load_acl(self) -> AclGuard | None:
        """aclEnable: the ACL files read (ConfigError if unusable) and their guard."""
        cfg = self.config
        if not cfg.acl_enable:
            return None
        files = AclFiles(location(cfg.acl_file, cfg.acl_dir),
                         poll_seconds=cfg.acl_file_watch_interval / 1000)  # fmt: skip
        files.load_now()
        log.info("acl_enabled", files=list(files.rules.files), accounts=len(files.rules.accounts))
        return AclGuard(files, BROKER)

    async def _open(self, addr: str) -> BrokerContext:
        cfg = self.config
        config_dir = config_path(self.store_config)
        builtin = system_topics(
            cfg.broker_cluster_name,
            cfg.broker_name,
            auto_create=cfg.auto_create_topic_enable,
            default_queue_nums=cfg.default_topic_queue_nums,
            cluster_topic=cfg.cluster_topic_enable,
            broker_topic=cfg.broker_topic_enable,
            trace_topic=cfg.msg_trace_topic_name if cfg.trace_topic_enable else None,
        )
        topics = TopicTable(
            ConfigFile(config_dir / "topics.json"),
            builtin,
            auto_create=cfg.auto_create_topic_enable,
        )
        topics.load()
        groups = SubscriptionGroups(
            ConfigFile(config_dir / "subscriptionGroup.json"),
            auto_create=cfg.auto_create_subscription_group,
        )
        groups.load()
        store = MessageStore(self.store_config, store_host=addr)
        await store.start()
        return BrokerContext(
            config=cfg,
            store_config=self.store_config,
            server_config=self.server_config,
            store=store,
            topics=topics,
            groups=groups,
            stats=BrokerStats(),
            addr=addr,
            config_file=self.config_file,
            reported=self.reported,
        )

    def _files(self) -> dict[str, ConfigFile]:
        directory = config_path(self.store_config)
        return {
            name: ConfigFile(directory / name)
            for name in ("consumerOffset.json", "delayOffset.json", "consumerFilter.json")
        }

    def _processors(self) -> Processors:
        ctx, c, cfg = self.ctx, self.consumers, self.config
        pull = PullProcessor(
            ctx,
            c.registry,
            c.offsets,
            c.hold,
            c.filters,
            long_polling=cfg.long_polling_enable,
            short_polling_ms=cfg.short_polling_time_mills,
        )
        c.hold.wake = pull.wake
        send = SendProcessor(ctx, self.transactions)
        return Processors(
            send=send,
            reply=ReplyProcessor(ctx, send, c.registry),
            pull=pull,
            client=ClientProcessor(ctx, c.registry, c.offsets, c.locks, c.notify_ids_changed,
                                   c.filters.compiled, self.meta.offsets_replicated,
                                   self._offsets_current),
            admin=AdminProcessor(ctx),
            groups=GroupAdminProcessor(ctx, c.registry, c.offsets, c.send_oneway),
            query=QueryProcessor(ctx),
            runtime=RuntimeProcessor(ctx, c.registry, c.offsets, c.schedule, self.timer),
            callclient=CallClientProcessor(ctx, c.registry),
            endtx=EndTransactionProcessor(self.transactions),
            sync=SyncProcessor(c.offsets, c.schedule, ctx.store),
            controller=ControllerProcessor(ctx, self.roles),
            timer=TimerProcessor(ctx, self.timer),
            acl=AclProcessor(self.acl.files if self.acl is not None else None,
                             lambda: (cfg.broker_cluster_name, cfg.broker_name, ctx.addr)),
        )  # fmt: skip

    def _listeners(self) -> dict[str, RemotingServer]:
        return dict(zip(("main", "vip"), self.servers, strict=False))

    def _offsets_current(self) -> bool:
        """Whether QUERY_CONSUMER_OFFSET is answered from this broker's table: always, but
        in controller mode with controllerAddr (broker.failover.Failover.offsets_current;
        not before its controller runs)."""
        if self.failover is not None:
            return self.failover.offsets_current()
        cfg = self.config
        return not (cfg.enable_controller_mode and cfg.controller_addr)

    def _master_addr(self) -> str | None:
        if self.roles.master_addr is not None:  # the one the controller named
            return self.roles.master_addr
        master = self.namesrv.master
        return master.master_addr if master is not None else None

    @property
    def identity(self) -> BrokerIdentity:
        cfg = self.ctx.config
        return BrokerIdentity(
            cfg.broker_cluster_name,
            cfg.broker_name,
            self.broker_id,
            self.ctx.addr,
            f"{cfg.broker_ip2 or cfg.broker_ip1}:{self.port + HA_OFFSET}",  # BrokerStartup
        )

    def _start_loops(self) -> None:
        loop = asyncio.get_running_loop()
        period = max(1.0, min(60.0, self.config.register_name_server_period / 1000))
        jobs = [
            (period, "register_broker_all", self._register_periodically),
            (SAMPLE_SECONDS, "stats_sample", self._sample_stats),
            (self.config.flush_consumer_offset_interval / 1000, "retry_config_files",
             self._retry_config_files),
            *self.consumers.jobs(self.config),
            (self.store_config.timer_flush_interval_ms / 1000, "timer_flush", self.timer.flush),
        ]  # fmt: skip
        for interval, name, job in jobs:
            self._loops.append(loop.create_task(every(interval, job, name=name), name=name))
        if self.acl is not None:  # AclFileWatchService
            self._loops.append(loop.create_task(self.acl.files.run(), name="acl_watch"))
        if not self.replication.controller:
            self._role_loops = self._role_tasks(not self.replication.is_slave)

    def _role_tasks(self, master: bool) -> list[asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        if master:  # BrokerController.startProcessorByHa
            return [loop.create_task(self.consumers.schedule.run(), name="schedule"),
                    loop.create_task(self.timer.run(), name="timer_wheel"),
                    loop.create_task(self.tx_check.run(), name="transaction_check")]  # fmt: skip
        # handleSlaveSynchronize: after 3 s, then every 10 s
        sync_s = self.config.slave_sync_interval / 1000
        sync = every(sync_s, self.slave_sync.sync_all, name="slave_synchronize",
                     initial_delay=min(3.0, sync_s))  # fmt: skip
        return [loop.create_task(sync, name="slave_synchronize")]

    async def master_services(self, on: bool | None) -> None:
        """A role change (BrokerController.changeSpecialServiceStatus): the master's loops
        (delays, transaction checks) when ``on``, the slave's metadata sync when False,
        none when None."""
        tasks, self._role_loops = self._role_loops, []
        if self._closing:  # a role change drained at shutdown: the loops are gone already
            on = None
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if on is not None:
            self._role_loops = self._role_tasks(on)

    async def register_now(self) -> None:
        await self._registrar().register_all()

    async def _register_periodically(self) -> None:
        if self.roles.registrable:
            await self._registrar().register_all()

    async def _sample_stats(self) -> None:
        self.ctx.stats.sample()

    async def _retry_config_files(self) -> None:
        """topics.json and subscriptionGroup.json fold their journals in (and are written
        again after a failed write: a full disk)."""
        await self.ctx.topics.file.maintain()
        await self.ctx.groups.file.maintain()

    def _registrar(self) -> Registrar:
        assert self.registrar is not None, "started"
        return self.registrar

    def _config_changed(self, keys: frozenset[str]) -> None:
        """AdminBrokerProcessor.updateBrokerConfig: a brokerPermission update bumps the topic
        data version (the name servers then take the new perms) and registers at once."""
        if "brokerPermission" in keys:
            topics = self.ctx.topics
            topics.data_version = topics.data_version.next(now_ms())
            self._registrar().changed(None)

    async def close(self) -> None:
        self._closing = True
        if self.failover is not None:  # the lease revoked first: a successor at once
            await self.failover.close()
        for server in self.servers:
            server.stop_accepting()
        if self.metrics is not None:
            await self.metrics.close()
        if self.registrar is not None:  # no registration after (or racing) the unregistration
            await self.registrar.close()
        await self.namesrv.unregister_all(self.identity)
        for task in [*self._loops, *self._role_loops]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.consumers.answer_parked()  # consumers move on at once
        await asyncio.gather(*(server.close(drain_timeout=5.0) for server in self.servers))
        await self.meta.close()  # offsets committed during the drain go to the slaves too
        await self.meta_follower.close()
        # only now, with every request drained: offsets committed during the drain count
        self.consumers.persist_now()
        await self.ctx.groups.flush()
        await self.ctx.topics.file.close()  # the journals folded into the files
        await self.ctx.groups.file.close()
        await self.replication.close()
        await self.slave_sync.close()
        self.timer.close()
        await self.ctx.store.shutdown()
        await self.namesrv.close()
        log.info("broker_stopped", broker=self.config.broker_name)


def config_path(store_config: StoreConfig) -> Path:
    """``<storePathRootDir>/config``: the broker's JSON state files."""
    return Path(store_config.store_path_root_dir).expanduser() / "config"
