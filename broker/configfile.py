"""ConfigFile: one of the broker's JSON state files under ``<storePathRootDir>/config/``.

Read once at start (a corrupt file is a configuration error, never silently replaced);
written atomically off the loop, one snapshot at a time so they land in order.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog

from remoting.errors import ConfigError
from remoting.files import atomic_write
from remoting.protocol import fastjson
from remoting.protocol.route import dumps

log = structlog.get_logger(__name__)


class ConfigFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    def load(self) -> Any | None:
        """The parsed file (fastjson rules, so Java-written files load too), or None."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot read: {exc.strerror}") from exc
        try:
            return fastjson.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{self.path}: malformed JSON: {exc}") from exc

    async def save(self, obj: Any) -> None:
        """Write ``obj`` as JSON, atomically; concurrent saves are serialized."""
        data = dumps(obj)
        async with self._lock:
            await asyncio.to_thread(atomic_write, self.path, data)

    def save_now(self, obj: Any) -> None:
        """Write synchronously: at shutdown, when the loop has nothing else to do."""
        atomic_write(self.path, dumps(obj))


class Snapshot:
    """State saved to a ConfigFile when it changed: periodically (``persist``) and at stop
    (``persist_now``). Subclasses set ``file``, call ``mark_dirty()`` and give ``to_json()``."""

    file: ConfigFile
    _dirty: bool = False

    def to_json(self) -> Any:
        raise NotImplementedError

    def mark_dirty(self) -> None:
        self._dirty = True

    async def persist(self) -> None:
        if self._dirty:
            self._dirty = False
            await self.file.save(self.to_json())

    def persist_now(self) -> None:
        self.file.save_now(self.to_json())
        self._dirty = False
