"""BrokerSettings: the broker's configuration at run time, as UPDATE_BROKER_CONFIG (25) changes
it and GET_BROKER_CONFIG (26) shows it (AdminBrokerProcessor.updateBrokerConfig and
getBrokerConfig over org.apache.rocketmq.common.Configuration).

The keys are those of BrokerConfig, StoreConfig and ServerConfig, the objects one broker.conf
feeds; GET_BROKER_CONFIG also shows the keys of 4.9.8 we have no setting for
(broker.java_keys), so its answer holds every key 4.9.8's does. An update:

- refuses the whole request with NO_PERMISSION when it names a black-listed key, or a key no
  request may change (broker.runtime_keys.REFUSED: paths, layout, identity, addresses,
  listeners; REFUSED_PATTERNS: any key naming a file, security settings), and with
  SYSTEM_ERROR when a value is outside broker.runtime_keys.BOUNDS;
- ignores keys none of the three has, as ``Configuration.update`` does (``mergeIfExist`` keeps
  only keys already known, ``properties2Object`` sets only existing fields);
- applies at once the keys the running broker reads at each use (``LIVE_KEYS``); the others
  are accepted, shown by 26 (as Java shows them) and take effect at the next start;
- writes the accepted keys to the broker's config file (``Configuration.persist``), so a restart
  starts with them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from aiorocketmq.broker import java_keys, runtime_keys
from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.config import (
    ServerConfig,
    Value,
    build,
    config_keys,
    config_values,
    dump_values,
    parse_properties,
    update_properties,
)
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import atomic_write
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.message import now_ms

log = structlog.get_logger(__name__)

CLASSES: Final = (BrokerConfig, StoreConfig, ServerConfig)
KNOWN: Final = frozenset().union(*(config_keys(c) for c in CLASSES))
# Keys the running broker reads at each use, so a change takes effect at once. Every other key
# is read at start (listeners, identity, loops, file sizes, caches): it needs a restart.
# compat: Java sets every field at once, and whether that acts before a restart depends on
# where it reads the field; we keep the running value and say so in the answer.
LIVE_KEYS: Final = frozenset({
    # BrokerConfig, read through BrokerContext.config by each request and registration
    "brokerPermission", "regionId", "traceOn", "startAcceptSendRequestTimeStamp",
    "rejectTransactionMessage", "transactionTimeOut", "transactionCheckMax",
    "transactionCheckInterval", "slaveReadEnable", "storeReplyMessageEnable",
    # StoreConfig, read by the running store at each put, read or retention round
    "maxMessageSize", "syncFlushTimeout", "fileReservedTime", "deleteWhen",
    "diskMaxUsedSpaceRatio", "diskSpaceCleanForciblyRatio", "cleanFileForciblyEnable",
    "maxTransferBytesOnMessageInMemory",
    "maxTransferCountOnMessageInMemory", "maxTransferBytesOnMessageInDisk",
    "maxTransferCountOnMessageInDisk",
})  # fmt: skip
# AdminBrokerProcessor.initConfigBlackList: these always, plus BrokerConfig.configBlackList
ALWAYS_BLACK_LISTED: Final = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})
BLACK_LIST_REMARK: Final = "Can not update config in black list."
RESTART_HINT: Final = "set it in the broker's config file and restart"
SECRET_KEY: Final = "innerClientAuthenticationCredentials"
HIDDEN: Final = "***"


class SettingsRefused(Exception):
    def __init__(self, code: ResponseCode, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an update did with each key it named."""

    keys: frozenset[str]  # accepted: live now, or at the next start
    restart: tuple[str, ...]  # accepted with a new value the running broker cannot take
    ignored: tuple[str, ...]  # not a key of this broker
    unsaved: str | None  # why the config file could not be written

    @property
    def remark(self) -> str | None:
        """None when every key took effect (Java's answer); otherwise what did not."""
        parts = []
        if self.restart:
            parts.append(f"takes effect after restart: {', '.join(self.restart)}")
        if self.ignored:
            parts.append(f"ignored, not a key of this broker: {', '.join(self.ignored)}")
        if self.unsaved:
            parts.append(f"not saved: {self.unsaved}")
        return f"updated; {'; '.join(parts)}" if parts else None


class BrokerSettings:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.pending: dict[str, str] = {}  # accepted since start, taking effect at the next
        self._lock = asyncio.Lock()  # updateBrokerConfig is synchronized
        # 4.9.8's keys without a setting here, with the values 26 shows for them
        self._java = {**java_keys.informational(), **ctx.reported}

    def _running(self) -> dict[str, str]:
        ctx = self.ctx
        return config_values(ctx.config, ctx.store_config, ctx.server_config)

    def text(self) -> str:
        """GET_BROKER_CONFIG's body: every key, with the values accepted last (Java's
        ``getAllConfigsFormatString`` shows a field's new value even before a restart)."""
        values = {**self._java, **self._running(), **self.pending}
        if values.get(SECRET_KEY):  # ours: the inner credentials' secret is never shown
            values[SECRET_KEY] = HIDDEN
        return dump_values(values)

    def black_list(self) -> frozenset[str]:
        configured = self.ctx.config.config_black_list.split(";")
        return ALWAYS_BLACK_LISTED | {k.strip() for k in configured if k.strip()}

    async def update(self, text: str) -> Outcome:
        """Apply ``key=value`` lines. Raises SettingsRefused (a black-listed key) or ConfigError
        (a malformed line or value): then nothing is applied."""
        given = {k: v.text for k, v in parse_properties(text, "UPDATE_BROKER_CONFIG").items()}
        if self.black_list() & given.keys():
            raise SettingsRefused(ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        blocked = runtime_keys.refused(given.keys())
        if blocked:
            why = "; ".join(f"{k} ({runtime_keys.why_refused(k)})" for k in blocked)
            raise SettingsRefused(
                ResponseCode.NO_PERMISSION, f"Can not update at run time: {why}: {RESTART_HINT}"
            )
        accepted = {k: v for k, v in given.items() if k in KNOWN}
        async with self._lock:
            running = self._running()
            wanted = self._check({**running, **self.pending}, accepted)
            bad = runtime_keys.out_of_bounds({k: wanted[k] for k in accepted}, now_ms())
            if bad is not None:
                raise ConfigError(f"UPDATE_BROKER_CONFIG: {bad}")
            restart = []
            for key in accepted.keys() - LIVE_KEYS:
                if wanted[key] == running[key]:
                    self.pending.pop(key, None)
                else:
                    self.pending[key] = wanted[key]
                    restart.append(key)
            self._apply(running, {k: wanted[k] for k in accepted.keys() & LIVE_KEYS})
            self.ctx.config_version = self.ctx.config_version.next(now_ms())
            unsaved = await self._persist({k: wanted[k] for k in accepted})
        log.info("broker_config_updated", keys=sorted(accepted), restart=sorted(restart))
        outcome = Outcome(
            frozenset(accepted), tuple(sorted(restart)), tuple(sorted(given.keys() - KNOWN)),
            unsaved,
        )  # fmt: skip
        for listener in self.ctx.on_config_change:
            listener(outcome.keys)
        return outcome

    @staticmethod
    def _check(current: Mapping[str, str], accepted: Mapping[str, str]) -> dict[str, str]:
        """Every key's value after the update, normalized; raises ConfigError on a bad one."""
        values = {k: Value(v, "current") for k, v in current.items()}
        values.update((k, Value(v, "UPDATE_BROKER_CONFIG")) for k, v in accepted.items())
        return config_values(*(build(cls, values) for cls in CLASSES))

    def _apply(self, running: dict[str, str], live: dict[str, str]) -> None:
        if not live:
            return
        values = {k: Value(v, "current") for k, v in {**running, **live}.items()}
        ctx = self.ctx
        ctx.config = build(BrokerConfig, values)  # processors read it through the context
        ctx.store_config = build(StoreConfig, values)
        ctx.store.reconfigure(ctx.store_config)

    async def _persist(self, accepted: dict[str, str]) -> str | None:
        """Configuration.persist: the accepted keys into the broker's config file."""
        if not accepted:
            return None
        path = self.ctx.config_file
        try:
            await asyncio.to_thread(_rewrite, path, accepted)
        except (OSError, UnicodeError) as exc:
            error = getattr(exc, "strerror", None) or str(exc)
            log.error("broker_config_not_saved", path=str(path), error=error)
            return f"{path}: {error}"
        return None


def _rewrite(path: Path, values: dict[str, str]) -> None:
    """The file with ``values`` set, the previous content kept as ``<file>.bak``
    (MixAll.string2File)."""
    # compat: Java rewrites the whole file with every key of its config objects (comments and
    # order lost, defaults and command-line values written into it); we change only the lines
    # of the keys updated, so the file stays the operator's. A restart with the same command
    # line starts with the same values either way.
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    if old:
        atomic_write(path.with_name(path.name + ".bak"), old.encode())
    atomic_write(path, update_properties(old, values).encode())
