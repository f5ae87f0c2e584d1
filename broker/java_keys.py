"""The keys of 4.9.8's GET_BROKER_CONFIG (26) this broker has no setting for, with the values it
reports for them.

4.9.8 answers every field of BrokerConfig, NettyServerConfig, NettyClientConfig and
MessageStoreConfig (``Configuration.getAllConfigsFormatString``; 178 keys, the fixture
tests/broker/apache_broker_config_keys.txt). Ours has 59 of them as settings, plus its own.
The rest are shown too, so a tool or an operator that reads a key of 4.9.8 finds it:

- ``INFORMATIONAL``: 4.9.8's default, as a 4.9.8 broker on this machine would show it (the
  thread-pool sizes follow the CPU count as Java's ``availableProcessors`` does). They describe
  machinery we do not have (thread pools and their queues, Netty's buffers and selectors,
  DLedger, the transient store pool, the commercial counters, LMQ) or a behaviour we have
  without a switch; UPDATE_BROKER_CONFIG ignores them as keys of no setting (D3c).
- ``NOT_CONFIGURABLE``: what we do, where it differs from 4.9.8's default
  (``autoDeleteUnusedStats``: a deleted topic's or group's stats go with it, D13c).
- ``facts``: keys whose value we know from elsewhere (``useTLS``: ``tls.enable``;
  ``rocketmqHome``: ROCKETMQ_HOME, or the directory standing in for it).

A key that becomes a setting of ours shows its real value: settings win over this table
(BrokerSettings.text), so an entry left here is harmless; remove it when the setting lands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final


def cpus() -> int:
    """Java's Runtime.availableProcessors: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _pools(n: int) -> dict[str, str]:
    """BrokerConfig's and NettyClientConfig's sizes that follow the CPU count."""
    send = min(n, 4)
    return {
        "sendMessageThreadPoolNums": str(send),
        "putMessageFutureThreadPoolNums": str(min(n, 4)),
        "pullMessageThreadPoolNums": str(16 + n * 2),
        "processReplyMessageThreadPoolNums": str(16 + n * 2),
        "queryMessageThreadPoolNums": str(8 + n),
        "heartbeatThreadPoolNums": str(min(32, n)),
        "endTransactionThreadPoolNums": str(max(8 + n * 2, send * 4)),
        "clientCallbackExecutorThreads": str(n),
    }


# compat: 4.9.8's defaults (rocketmq-all-4.9.8 BrokerConfig, NettyServerConfig,
# NettyClientConfig with NettySystemConfig's, MessageStoreConfig), for keys we have no setting of
_FIXED: Final = {
    # BrokerConfig
    "adminBrokerThreadPoolNums": "16",
    "brokerFastFailureEnable": "true",
    "clientManageThreadPoolNums": "32",
    "clientManagerThreadPoolQueueCapacity": "1000000",
    "commercialBaseCount": "1",
    "commercialBigCount": "1",
    "commercialEnable": "true",
    "commercialTimerCount": "1",
    "commercialTransCount": "1",
    "compressedRegister": "false",
    "consumerFallbehindThreshold": "17179869184",
    "consumerManageThreadPoolNums": "32",
    "consumerManagerThreadPoolQueueCapacity": "1000000",
    "disableConsumeIfConsumerReadSlowly": "false",
    "enableCalcFilterBitMap": "false",
    "enableDetailStat": "true",
    "endTransactionPoolQueueCapacity": "100000",
    "expectConsumerNumUseFilter": "32",
    "fetchNamesrvAddrByAddressServer": "false",
    "filterDataCleanTimeSpan": "86400000",
    "filterServerNums": "0",
    "flushConsumerOffsetHistoryInterval": "60000",
    "forceRegister": "true",
    "heartbeatThreadPoolQueueCapacity": "50000",
    "highSpeedMode": "false",
    "isolateLogEnable": "false",
    "maxErrorRateOfBloomFilter": "20",
    "notifyConsumerIdsChangedEnable": "true",
    "offsetCheckInSlave": "false",
    "pullThreadPoolQueueCapacity": "100000",
    "putThreadPoolQueueCapacity": "10000",
    "queryThreadPoolQueueCapacity": "20000",
    "replyThreadPoolQueueCapacity": "10000",
    "sendThreadPoolQueueCapacity": "10000",
    "slaveTimeout": "3000",
    "waitTimeMillsInHeartbeatQueue": "31000",
    "waitTimeMillsInPullQueue": "5000",
    "waitTimeMillsInTransactionQueue": "3000",
    # NettyServerConfig
    "serverAsyncSemaphoreValue": "64",
    "serverCallbackExecutorThreads": "0",
    "serverOnewaySemaphoreValue": "256",
    "serverPooledByteBufAllocatorEnable": "true",
    "serverSelectorThreads": "3",
    "serverSocketBacklog": "1024",
    "serverSocketRcvBufSize": "0",
    "serverSocketSndBufSize": "0",
    "serverWorkerThreads": "8",
    "useEpollNativeSelector": "false",
    "writeBufferHighWaterMark": "0",
    "writeBufferLowWaterMark": "0",
    # NettyClientConfig (the broker's client to name servers and its master)
    "channelNotActiveInterval": "60000",
    "clientAsyncSemaphoreValue": "65535",
    "clientChannelMaxIdleTimeSeconds": "120",
    "clientCloseSocketIfTimeout": "true",
    "clientOnewaySemaphoreValue": "65535",
    "clientPooledByteBufAllocatorEnable": "false",
    "clientSocketRcvBufSize": "0",
    "clientSocketSndBufSize": "0",
    "clientWorkerThreads": "4",
    "connectTimeoutMillis": "3000",
    # MessageStoreConfig
    "bitMapLengthConsumeQueueExt": "112",
    "checkCRCOnRecover": "true",
    "cleanFileForciblyEnable": "true",
    "commitCommitLogLeastPages": "4",
    "commitCommitLogThoroughInterval": "200",
    "commitIntervalCommitLog": "200",
    "debugLockEnable": "false",
    "defaultQueryMaxNum": "32",
    "deleteCommitLogFilesInterval": "100",
    "deleteConsumeQueueFilesInterval": "100",
    "destroyMapedFileIntervalForcibly": "120000",
    "diskFallRecorded": "true",
    "duplicationEnable": "false",
    "enableConsumeQueueExt": "false",
    "enableDLegerCommitLog": "false",
    "enableLmq": "false",
    "enableMultiDispatch": "false",
    "enableScheduleAsyncDeliver": "false",
    "enableScheduleMessageStats": "true",
    "fastFailIfNoBufferInStorePool": "false",
    "flushCommitLogLeastPages": "4",
    "flushCommitLogThoroughInterval": "10000",
    "flushCommitLogTimed": "true",
    "flushConsumeQueueLeastPages": "2",
    "flushConsumeQueueThoroughInterval": "60000",
    "flushLeastPagesWhenWarmMapedFile": "4096",
    "isEnableBatchPush": "false",
    "mappedFileSizeConsumeQueueExt": "50331648",
    "maxDelayTime": "40",
    "maxLmqConsumeQueueNum": "20000",
    "maxMsgsNumBatch": "64",
    "messageIndexSafe": "false",
    "messageStorePlugIn": "",
    "osPageCacheBusyTimeOutMills": "1000",
    "putMsgIndexHightWater": "600000",
    "redeleteHangedFileInterval": "120000",
    "scheduleAsyncDeliverMaxPendingLimit": "2000",
    "scheduleAsyncDeliverMaxResendNum2Blocked": "3",
    "transferMsgByHeap": "true",
    "transientStorePoolEnable": "false",
    "transientStorePoolSize": "5",
    "useReentrantLockWhenPutMessage": "true",
    "warmMapedFileEnable": "false",
}

# compat: 4.9.8's autoDeleteUnusedStats defaults to false; ours always drops a deleted topic's
# or group's stats (D13c), which that key set to true does
NOT_CONFIGURABLE: Final = {"autoDeleteUnusedStats": "true"}

FACT_KEYS: Final = frozenset({"useTLS", "rocketmqHome"})


def informational(n: int | None = None) -> dict[str, str]:
    """Every key of ``INFORMATIONAL`` with its value on a machine of ``n`` CPUs (this one's)."""
    return {**_FIXED, **_pools(cpus() if n is None else n), **NOT_CONFIGURABLE}


def facts(use_tls: bool, env: dict[str, str] | None = None) -> dict[str, str]:
    """``useTLS`` (NettyClientConfig's, from ``tls.enable`` as TlsSystemConfig.tlsEnable) and
    ``rocketmqHome`` (ROCKETMQ_HOME; 4.9.8 will not start without it, ours reads its ACL files
    from the current directory then, and says so)."""
    home = (os.environ if env is None else env).get("ROCKETMQ_HOME") or "."
    return {"useTLS": str(use_tls).lower(), "rocketmqHome": str(Path(home).expanduser().resolve())}


INFORMATIONAL: Final = frozenset(informational(1))
