"""KVConfig: namespace -> {key: value}, persisted atomically as ``{"configTable": {...}}``.

Every entry must be writable as UTF-8: the table is persisted, listed, and its
ORDER_TOPIC_CONFIG namespace rides on every REGISTER_BROKER response, so one entry that is
not would fail requests about all the others.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import structlog

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import atomic_write
from aiorocketmq.remoting.protocol.bounds import order_topic_conf_refusal
from aiorocketmq.remoting.protocol.text import unencodable

log = structlog.get_logger(__name__)

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfig:
    """The name server's key-value table (KVConfigManager); every change is written through."""

    def __init__(self, path: str) -> None:
        self._path = Path(path)
        self.table: dict[str, dict[str, str]] = {}
        self.version = 0
        self._lock = asyncio.Lock()

    def load(self) -> None:
        """Read the file if present; a corrupt file is a configuration error, never ignored."""
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(f"{self._path}: cannot read kv config: {exc.strerror}") from exc
        try:
            raw = json.loads(text).get("configTable") or {}
            table = {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in raw.items()}
        except (ValueError, AttributeError, RecursionError) as exc:
            raise ConfigError(f"{self._path}: malformed kv config: {exc}") from exc
        for ns, kv in table.items():
            for key, value in kv.items():
                if _refusal(ns, key, value) is None:
                    self.table.setdefault(ns, {})[key] = value
                else:  # an older version let it in (a JSON "\ud800" escape, an order topic
                    # config no client can use): drop, not fail
                    log.warning("kv_config_entry_dropped", namespace=ascii(ns), key=ascii(key),
                                reason=_refusal(ns, key, value))  # fmt: skip
        log.info("kv_config_loaded", path=str(self._path), namespaces=len(self.table))

    async def _persist(self) -> None:
        """Write a snapshot of the table; the lock keeps snapshots in order on disk."""
        self.version += 1
        async with self._lock:
            data = json.dumps({"configTable": self.table}, indent=2, sort_keys=True)
            await asyncio.to_thread(atomic_write, self._path, data.encode())

    async def put(self, namespace: str, key: str, value: str) -> None:
        """Raises ValueError, changing nothing, if any of the three is not valid UTF-8."""
        refusal = _refusal(namespace, key, value)
        if refusal is not None:
            raise ValueError(refusal)
        self.table.setdefault(namespace, {})[key] = value
        await self._persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    async def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            if not kv:
                del self.table[namespace]
            await self._persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        kv = self.table.get(namespace)
        return dict(kv) if kv else None


def _refusal(namespace: str, key: str, value: str) -> str | None:
    for what, text in (("namespace", namespace), ("key", key), ("value", value)):
        if unencodable(text):
            return f"the KV config {what} {text!a} is not valid UTF-8 (a lone surrogate)"
    if namespace == ORDER_TOPIC_CONFIG:  # rides on every route of the topic, to every client
        bad = order_topic_conf_refusal(value)
        if bad is not None:
            return f"the KV config value of {ORDER_TOPIC_CONFIG} {key}: {bad}"
    return None
