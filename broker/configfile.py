"""ConfigFile: one of the broker's JSON state files under ``<storePathRootDir>/config/``.

Read once at start (a corrupt file is a configuration error, never silently replaced);
written atomically off the loop, one snapshot at a time so they land in order. A write that
fails (a full disk) never fails the request that changed the state: it is logged once per
change of outcome, and the latest snapshot is written again by ``retry`` (the broker calls it
periodically) and at stop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import atomic_write
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.route import dumps

log = structlog.get_logger(__name__)


class ConfigFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()
        self._unsaved: bytes | None = None  # the latest snapshot a write failed to keep

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

    async def save(self, obj: Any) -> bool:
        """Write ``obj`` as JSON, atomically; concurrent saves are serialized. Returns
        whether it is on disk (if not, ``retry`` tries again)."""
        data = self._encode(obj)
        async with self._lock:
            if data is None:
                return False
            try:
                await asyncio.to_thread(atomic_write, self.path, data)
            except OSError as exc:
                return self._failed(data, exc)
            return self._written()

    async def retry(self) -> None:
        """Write the latest snapshot a save could not (nothing when all were written)."""
        data = self._unsaved
        if data is not None:
            async with self._lock:
                if self._unsaved is data:
                    try:
                        await asyncio.to_thread(atomic_write, self.path, data)
                    except OSError as exc:
                        self._failed(data, exc)
                    else:
                        self._written()

    def save_now(self, obj: Any) -> bool:
        """Write synchronously: at shutdown, when the loop has nothing else to do."""
        data = self._encode(obj)
        if data is None:
            return False
        try:
            atomic_write(self.path, data)
        except OSError as exc:
            return self._failed(data, exc)
        return self._written()

    def _encode(self, obj: Any) -> bytes | None:
        try:
            return dumps(obj)
        except ValueError as exc:  # text the edges should have refused: a bug, say so
            log.error("config_file_unencodable", path=str(self.path), error=str(exc))
            return None

    def _failed(self, data: bytes, exc: OSError) -> bool:
        if self._unsaved is None:
            log.error("config_file_not_saved", path=str(self.path), error=str(exc),
                      action="kept in memory, written again later")  # fmt: skip
        self._unsaved = data
        return False

    def _written(self) -> bool:
        if self._unsaved is not None:
            log.warning("config_file_saved_again", path=str(self.path))
            self._unsaved = None
        return True


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
            if not await self.file.save(self.to_json()):
                self._dirty = True  # written again next round

    def persist_now(self) -> None:
        self._dirty = not self.file.save_now(self.to_json())
