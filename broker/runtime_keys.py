"""What UPDATE_BROKER_CONFIG (25) may change while the broker runs, and within what bounds.

An update is persisted to the broker's config file, so whatever it sets also holds after the
next restart. No request, whoever sends it, may therefore move the store, point the broker at
other name servers or another address, change its identity or role, or touch its listeners
and their limits: ``REFUSED`` lists those keys, each with the reason the answer gives. Nor may
it name a file or directory, or change a security setting, whether the broker has the key
today or not: ``REFUSED_PATTERNS`` refuses every ``storePath*`` key, every key whose name ends
in Path, Dir, File, Home, Folder or Directory (``aclFile``, ``tls.server.keyPath``,
``tls.config.file``, ``metricsBearerTokenFile``...), every ``acl*`` and ``tls*`` key and every
key with an ``Acl`` or ``Tls`` word (``controllerTlsEnable``), and any key naming a secret,
password, access key, token, credential or user name, so a key added later is
refused from its first day (a request that moved a file would make the broker read or write
one outside its store, or stop authenticating, after its next restart). They are set in the
config file (or with ``--set``) and take effect when the broker starts.
Values a request may set are also held to ``BOUNDS``, stricter than what a config file may
say where a value would stop the broker serving or delete data (a config file is the
operator's own; a request may come from anyone who reaches the port).

compat: 4.9.8 refuses only brokerConfigPath, rocketmqHome and configBlackList
(AdminBrokerProcessor.initConfigBlackList) and stores any value it can parse; this request
was the way in for CVE-2023-33246. 5.x still refuses only those (plus configBlackList's own
list) with the same answer, NO_PERMISSION; ours keeps that code and names the key and why.
docs/compatibility.md D3 lists the differences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from aiorocketmq.remoting.protocol.bounds import QUEUE_NUMS_MAX

_PATH = "a path"
_LAYOUT = "the layout of the files already written"
_IDENTITY = "the broker's identity or role"
_ADDRESS = "where the broker registers, or the address its clients dial"
_LISTENER = "a listener's setting"
_FILE = "names a file or directory"
_SECURITY = "a security setting: who may use the broker"

# key -> why it cannot change at run time (Apache's three keep Java's answer: settings.py)
REFUSED: Final[Mapping[str, str]] = {
    "storePathRootDir": _PATH,
    "storePathCommitLog": _PATH,
    "brokerConfigPath": _PATH,
    "rocketmqHome": _PATH,
    "configBlackList": "the list of keys refused",
    "mappedFileSizeCommitLog": _LAYOUT,
    "mappedFileSizeConsumeQueue": _LAYOUT,
    "maxHashSlotNum": _LAYOUT,
    "maxIndexNum": _LAYOUT,
    "timerPrecisionMs": _LAYOUT,  # the timer wheel's slots (broker/store/timerwheel.py)
    "timerRollWindowSlot": _LAYOUT,
    "mappedFileSizeTimerLog": _LAYOUT,
    "brokerClusterName": _IDENTITY,
    "brokerName": _IDENTITY,
    "brokerId": _IDENTITY,
    "brokerRole": _IDENTITY,
    "haMasterAddress": _IDENTITY,
    "namesrvAddr": _ADDRESS,
    "brokerIP1": _ADDRESS,
    "brokerIP2": _ADDRESS,
    "listenPort": _LISTENER,
    "bindAddress": _LISTENER,
    "haListenPort": _LISTENER,
    "metricsPort": _LISTENER,
    "metricsHost": _LISTENER,
    "frameMaxLength": _LISTENER,
    "serverChannelMaxIdleTimeSeconds": _LISTENER,
    "serverConnectionMaxInFlight": _LISTENER,
    "serverWriteStallTimeoutMillis": _LISTENER,
    "serverOutputBufferMaxBytes": _LISTENER,
    "serverPartialFrameMaxBytes": _LISTENER,
    "metricsBearerTokenFile": _FILE,
    "aclEnable": _SECURITY,
    "aclFile": _PATH,
    "aclDir": _PATH,
    "innerClientAuthenticationCredentials": _SECURITY,
    "enableControllerMode": _IDENTITY,
    "controllerAddr": _ADDRESS,
}

# key patterns refused as REFUSED's keys are (re.match: from the key's start)
REFUSED_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"storePath"), _PATH),
    (re.compile(r".*(path|dir|file|home|folder|directory)$", re.IGNORECASE), _FILE),
    (re.compile(r"(acl|tls|.*[a-z0-9](Acl|Tls))([A-Z._]|$)"), _SECURITY),
    (
        re.compile(r".*(secret|password|accesskey|token|credential|username)", re.IGNORECASE),
        _SECURITY,
    ),
)

_MINUTE: Final = 60_000
_DAY: Final = 86_400_000

# key -> (least, most or None) a request may set; beyond them the broker would refuse every
# send, drop its consumers or its slave, delete what it holds, spin on a periodic job, or
# (a period of years) never run it again
BOUNDS: Final[Mapping[str, tuple[int, int | None]]] = {
    "maxMessageSize": (1024, None),  # below it, every real message is refused
    "fileReservedTime": (1, None),  # 0 h: every file deleted at the next deleteWhen
    # compat: MessageStoreConfig.getDiskMaxUsedSpaceRatio reads anything else as 10 or 95
    "diskMaxUsedSpaceRatio": (10, 95),
    "diskSpaceCleanForciblyRatio": (50, 100),  # lower: young messages deleted on a half-full disk
    "diskSpaceWarningLevelRatio": (50, 100),  # lower: writes refused on a half-empty disk
    "diskSpaceFreeFloorMb": (0, 1024),  # higher: writes refused on a disk with room
    "syncFlushTimeout": (100, 10 * _MINUTE),  # lower: SYNC_FLUSH / SYNC_MASTER sends time out
    "transactionCheckMax": (1, None),  # 0: every half discarded at its first check
    "transactionCheckInterval": (1000, _DAY),
    "transactionTimeOut": (0, _DAY),
    "registerBrokerTimeoutMills": (1000, 10 * _MINUTE),  # lower: registrations fail
    "clientChannelExpiredTime": (_MINUTE, _DAY),  # lower: live consumers dropped (30 s beats)
    "clientChannelScanInterval": (1000, _DAY),
    "haSendHeartbeatInterval": (100, _MINUTE),
    "haHousekeepingInterval": (10_000, _DAY),  # lower: the slave's connection dropped
    "haSlaveFallbehindMax": (1 << 20, None),  # lower: SYNC_MASTER finds no slave in sync
    "slaveSyncInterval": (1000, _DAY),
    "waitTimeMillsInSendQueue": (100, 10 * _MINUTE),  # lower: sends refused as SYSTEM_BUSY
    "shortPollingTimeMills": (1, _MINUTE),
    "rebalanceLockMaxLiveTime": (1000, _DAY),
    "flushIntervalCommitLog": (10, _MINUTE),
    "flushIntervalConsumeQueue": (10, _MINUTE),
    "flushConsumerOffsetInterval": (100, _DAY),
    "flushDelayOffsetInterval": (100, _DAY),
    "cleanResourceInterval": (1000, _DAY),
    "defaultTopicQueueNums": (1, QUEUE_NUMS_MAX),  # what auto-created topics get
}
_HOURS: Final = frozenset(str(h) for h in range(24)) | frozenset(f"{h:02d}" for h in range(10))


def why_refused(key: str) -> str | None:
    """Why no request may change ``key`` (REFUSED, then REFUSED_PATTERNS), or None."""
    why = REFUSED.get(key)
    if why is not None:
        return why
    return next((why for pattern, why in REFUSED_PATTERNS if pattern.match(key)), None)


def refused(keys: Iterable[str]) -> list[str]:
    """The keys of ``keys`` no request may change, sorted."""
    return sorted(k for k in keys if why_refused(k) is not None)


def out_of_bounds(values: Mapping[str, str], now_ms: int) -> str | None:
    """Why one of ``values`` (normalized, as BrokerSettings checks them) may not be set at run
    time, or None."""
    for key, text in sorted(values.items()):
        if key == "startAcceptSendRequestTimeStamp" and int(text) > now_ms:
            return f"{key}: a time to come would refuse every send until then, got {text}"
        if key == "deleteWhen" and not set(text.replace(",", ";").split(";")) <= _HOURS:
            return f"{key}: must be hours of the day (0 to 23) separated by ';', got {text!r}"
        bounds = BOUNDS.get(key)
        if bounds is None:
            continue
        least, most = bounds
        value = int(text)
        if value < least or (most is not None and value > most):
            span = f"at least {least}" if most is None else f"between {least} and {most}"
            return f"{key}: must be {span} at run time, got {value}"
    return None
