"""BrokerConfig: RocketMQ BrokerConfig keys that apply to us, with RocketMQ's defaults.

One broker.conf feeds BrokerConfig, StoreConfig (broker.store) and ServerConfig (remoting).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Final

from aiorocketmq.remoting.config import Bounds

DEFAULT_LISTEN_PORT: Final = 10911


class BrokerRole(StrEnum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def _local_ip() -> str:
    """The address other hosts reach us at, as RemotingUtil.getLocalAddress picks it."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.254.254.254", 1))  # no packet is sent: this only picks a route
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    BOUNDS: ClassVar[Bounds] = {
        "broker_id": (0, None),
        "broker_permission": (0, 7),
        "default_topic_queue_nums": (1, None),
        "register_broker_timeout_mills": (1, None),
        "wait_time_mills_in_send_queue": (1, None),
        "send_message_max_in_flight": (1, None),
        "short_polling_time_mills": (1, None),
        "flush_consumer_offset_interval": (1, None),
        "flush_delay_offset_interval": (1, None),
        "client_channel_expired_time": (1, None),
        "client_channel_scan_interval": (1, None),
        "rebalance_lock_max_live_time": (1, None),
        "ha_listen_port": (0, 65535),
        "ha_send_heartbeat_interval": (1, None),
        "ha_housekeeping_interval": (1, None),
        "ha_transfer_batch_size": (1, 4 * 1024 * 1024),
        "ha_slave_fallbehind_max": (0, None),
        "slave_sync_interval": (1, None),
        "transaction_time_out": (0, None),
        "transaction_check_max": (0, None),
        "transaction_check_interval": (1, None),
        "metrics_port": (-1, 65535),
        "acl_file_watch_interval": (100, None),
        "filter_data_clean_time_span": (0, None),
        "controller_heart_beat_timeout_mills": (1000, None),
        "in_sync_replicas": (1, None),
        "min_in_sync_replicas": (1, None),
        "ha_max_time_slave_not_catchup": (1, None),
    }

    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=socket.gethostname)
    broker_id: int = 0
    broker_ip1: str = field(default_factory=_local_ip, metadata={"key": "brokerIP1"})
    broker_ip2: str = field(default="", metadata={"key": "brokerIP2"})  # HA; "" = brokerIP1
    namesrv_addr: str = ""  # "host:port;host:port"; -n and NAMESRV_ADDR also set it
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    broker_permission: int = 6
    # message trace (BrokerConfig of 4.9.8): regionId and traceOn go back in every send's
    # answer (MSG_REGION, TRACE_ON: a traced producer writes no Pub record when "false");
    # traceTopicEnable creates msgTraceTopicName at start (1 queue, perm 6, a system topic)
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    store_reply_message_enable: bool = True  # a request's reply is stored in its reply topic too
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    default_topic_queue_nums: int = 8
    reject_transaction_message: bool = False
    # ours (issue 34): half messages in one SEND_BATCH_MESSAGE and END_TRANSACTION_BATCH
    # (remoting/protocol/txbatch.py); false answers both as 4.9.8 does
    enable_batch_transaction: bool = True
    # ours (issue 34): a pull with ``bulkPull=true`` is capped by bytes, not by
    # maxTransferCountOnMessageInMemory (broker/processors/pull.py); false ignores the field,
    # as Apache's brokers do
    enable_bulk_pull: bool = True
    transaction_time_out: int = 6_000  # ms: a half younger than this is not checked yet
    transaction_check_max: int = 15  # checks before a half moves to TRANS_CHECK_MAX_TIME_TOPIC
    transaction_check_interval: int = 60_000  # ms between check rounds
    start_accept_send_request_time_stamp: int = 0
    register_name_server_period: int = 30_000  # ms; RocketMQ clamps 10-60 s, we allow 1-60 s
    register_broker_timeout_mills: int = 6_000
    wait_time_mills_in_send_queue: int = 200
    send_message_max_in_flight: int = 1024  # ours: concurrent sends before they queue
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    flush_consumer_offset_interval: int = 5000  # ms
    flush_delay_offset_interval: int = 10_000  # ms
    client_channel_expired_time: int = 120_000  # ours (Java's constant): silent clients dropped
    client_channel_scan_interval: int = 10_000  # ours (Java's constant): how often to look
    rebalance_lock_max_live_time: int = 60_000  # ms (rocketmq.broker.rebalance.lockMaxLiveTime)
    ha_listen_port: int = 10912  # ignored: forced to listenPort + 1, as BrokerStartup does
    ha_master_address: str = ""  # a slave's master HA "host:port"; "" = from registration
    ha_send_heartbeat_interval: int = 5_000  # ms: a report / an empty frame when idle
    ha_housekeeping_interval: int = 20_000  # ms: an HA connection silent this long closes
    ha_transfer_batch_size: int = 32 * 1024  # bytes per master -> slave frame
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024  # SYNC_MASTER: further behind = no slave
    slave_read_enable: bool = False  # the master may send consumers of cold data to a slave
    # SQL92 filtering (broker.filter): off by default, as 4.9.8 -- a SQL92 subscription is
    # then refused (pull and CHECK_CLIENT_CONFIG answer SYSTEM_ERROR)
    enable_property_filter: bool = False
    # evaluate a %RETRY% message with its group's filter of the RETRY_TOPIC property's topic
    # (ExpressionForRetryMessageFilter); off: retries always pass
    filter_support_retry: bool = False
    filter_data_clean_time_span: int = 24 * 3600 * 1000  # ms a dead filter is kept
    slave_sync_interval: int = 10_000  # ours (Java's constant): a slave copies metadata, ms
    # ours: /metrics in Prometheus text format on this port (on metricsHost); unset =
    # listenPort + 1000 (remoting.metrics_port), 0 = any free port, -1 = off; a port that
    # cannot be bound stops the broker from starting. 4.9.8 has none (5.x: a fixed 5557).
    metrics_port: int | None = None
    # ours: the address /metrics binds; "" = brokerIP1, the address clients are given (5.x's
    # metricsPromExporterHost does the same); 0.0.0.0 for every interface
    metrics_host: str = ""
    # ours: a file holding the bearer token /metrics requires (remoting.metrics_token); "" =
    # none required. A file, not the token, so the secret is in no config file or command line
    metrics_bearer_token_file: str = ""
    # keys UPDATE_BROKER_CONFIG refuses, ";"-separated (brokerConfigPath, rocketmqHome and
    # configBlackList always are: AdminBrokerProcessor.initConfigBlackList)
    config_black_list: str = "configBlackList;brokerConfigPath"
    # ACL 1.0 (4.9.8's aclEnable): every request must come from a white-listed address or be
    # signed by an account of the ACL files, with the permissions it needs (remoting.acl)
    acl_enable: bool = False
    # the default ACL file. 4.9.8: ${ROCKETMQ_HOME}/conf/plain_acl.yml, or the path
    # -Drocketmq.acl.plain.file names under ROCKETMQ_HOME; "" = that place (the current
    # directory standing in for an unset ROCKETMQ_HOME)
    acl_file: str = ""
    # the directory whose *.yml / *.yaml files (recursively) hold more accounts. 4.9.8:
    # ${ROCKETMQ_HOME}/conf/acl, fixed; "" = that place
    acl_dir: str = ""
    # ms between looks at the ACL files for changes (4.9.8: 5000, fixed)
    acl_file_watch_interval: int = 5_000
    # 5.x's AuthConfig key: JSON {"accessKey": "...", "secretKey": "..."}, the account this
    # broker signs its own requests with -- to the name servers, and as a slave to its master
    # (sync calls and the HA connection; r#3115). "" = unsigned
    inner_client_authentication_credentials: str = ""
    # controller mode (issue 35; broker/controller): the group's master, epoch and SyncStateSet
    # live in etcd, and the brokers elect a master among themselves. 5.x's keys (BrokerConfig,
    # and MessageStoreConfig for the last three); off by default, as in 5.x. The broker starts
    # fenced -- no put, no registration, no HA -- until made master or slave (broker.roles);
    # brokerRole is then the role it takes as a master (SLAVE reads as SYNC_MASTER, 5.x's)
    enable_controller_mode: bool = False
    # etcd's client endpoints, "host:port;host:port" (5.x: the controllers' addresses)
    controller_addr: str = ""
    # ours (5.x's brokers reach their controllers over remoting; etcd has its own): how the
    # broker reaches etcd (broker/controller/access.py). TLS, the server checked against
    # controllerTlsTrustCertPath (a PEM CA; unset: the system's), with a client certificate
    # for etcd's --client-cert-auth (PEM files, as tls.client.trustCertPath/certPath/keyPath)
    controller_tls_enable: bool = False
    controller_tls_trust_cert_path: str = ""
    controller_tls_cert_path: str = ""
    controller_tls_key_path: str = ""
    # etcd's user (etcdctl auth enable; a role granting readwrite on /aiorocketmq/controller/)
    # and a file holding its password: never the password itself in the config
    controller_username: str = ""
    controller_password_file: str = ""
    # ms: the TTL of the broker's etcd lease -- a master silent this long loses its place, and
    # stops acknowledging a quarter of it sooner (fencing). 5.x's key (the controller's
    # heartbeat timeout); 5.x's 10 s made 3 s here, for a failover within 5 s. etcd counts
    # whole seconds: rounded up, and at least etcd's own minimum (2 s with its defaults)
    controller_heart_beat_timeout_mills: int = 3_000
    # a replica outside the SyncStateSet may be elected when no member is alive (it may lack
    # acknowledged messages)
    enable_elect_unclean_master: bool = False
    # a message needing HA waits for every member of the SyncStateSet (inSyncReplicas moot)
    all_ack_in_sync_state_set: bool = False
    # replicas (the master counted) a message needing HA waits for
    in_sync_replicas: int = 1
    # fewer replicas in the SyncStateSet: such a message is refused (IN_SYNC_REPLICAS_NOT_ENOUGH)
    min_in_sync_replicas: int = 1
    # ms: a slave that has not been caught up with the master for this long leaves the
    # SyncStateSet, and one caught up within it joins (5.x MessageStoreConfig, 15 s;
    # AutoSwitchHAService.maybeShrinkSyncStateSet / maybeExpandInSyncStateSet)
    ha_max_time_slave_not_catchup: int = 15_000

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    @property
    def is_slave(self) -> bool:
        return self.broker_role is BrokerRole.SLAVE or self.broker_id != 0
