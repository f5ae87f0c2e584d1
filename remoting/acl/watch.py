"""AclFiles: one server's ACL rules, kept current with its files (4.9.8's
AclFileWatchService and PlainPermissionManager.load).

Loaded at start (a file that cannot be used, or no file at all, stops the start with a
ConfigError). Then every ``poll_seconds`` (5 s, as Apache's WATCH_INTERVAL) the files are
listed and hashed (MD5 of the content, as Apache's watcher did before 4.9.8 went by
modification time, which misses two writes within the same second); a file added, removed
or changed reloads every file, so the rules are always those of one consistent reading.
A reload that fails (a YAML error, a short key, a bad address pattern) leaves the last good
rules in force and logs why once for that state of the files, not at every poll. Files all
gone give empty rules: every checked request is then refused (as 4.9.8 with an empty file).
"""

from __future__ import annotations

import asyncio

from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.files import Fingerprint, Location, fingerprint, load, read
from aiorocketmq.remoting.acl.rules import Rules
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)

POLL_SECONDS = 5.0  # AclFileWatchService.WATCH_INTERVAL


class AclFiles:
    def __init__(self, where: Location, *, poll_seconds: float = POLL_SECONDS) -> None:
        self.where = where
        self.poll_seconds = poll_seconds
        self.rules = Rules()
        self.fingerprint: Fingerprint = ()
        self.reload_failures = 0  # reloads that kept the previous rules (/metrics)
        self.checks = 0  # looks at the files (/metrics)
        self._failed: Fingerprint | None = None  # the state of the files last found unusable
        self.lock = asyncio.Lock()  # a management edit and a reload never interleave

    def load_now(self) -> None:
        """The first load, before serving. Raises ConfigError."""
        contents = read(self.where)
        if not contents:
            raise ConfigError(
                f"aclEnable is true but there is no ACL file: neither {self.where.default_file} "
                f"nor a *.yml under {self.where.directory}"
            )
        try:
            rules, warnings = load(contents, now_ms())
        except AclError as exc:
            raise ConfigError(f"ACL: {exc.message}") from None
        self._take(rules, warnings, fingerprint(contents))

    async def run(self) -> None:
        """Poll until cancelled."""
        await every(self.poll_seconds, self.poll, name="acl_watch")

    async def poll(self) -> None:
        """One look at the files; reload when they changed since the last look."""
        async with self.lock:
            contents = await asyncio.to_thread(read, self.where)
            current = fingerprint(contents)
            self.checks += 1
            if current in (self.fingerprint, self._failed):
                return
            await self._reload(contents, current)

    async def reload(self) -> None:
        """Read every file again now (after a management code rewrote one). Hold ``lock``."""
        contents = await asyncio.to_thread(read, self.where)
        await self._reload(contents, fingerprint(contents))

    async def _reload(self, contents: list[tuple[str, bytes]], current: Fingerprint) -> None:
        try:
            rules, warnings = await asyncio.to_thread(load, contents, now_ms())
        except AclError as exc:
            self._failed = current
            self.reload_failures += 1
            log.error("acl_reload_failed", error=exc.message, kept="the previous rules",
                      files=len(self.rules.files))  # fmt: skip
            return
        before = dict(self.fingerprint)
        after = dict(current)
        log.info(
            "acl_reloaded",
            added=sorted(after.keys() - before.keys()),
            removed=sorted(before.keys() - after.keys()),
            changed=sorted(p for p in after.keys() & before.keys() if after[p] != before[p]),
            accounts=len(rules.accounts),
        )
        if not contents:
            log.warning("acl_no_files", file=str(self.where.default_file),
                        directory=str(self.where.directory))  # fmt: skip
        self._take(rules, warnings, current)

    def _take(self, rules: Rules, warnings: list[str], current: Fingerprint) -> None:
        for warning in warnings:
            log.warning("acl_file_warning", warning=warning)
        self.rules = rules
        self.fingerprint = current
        self._failed = None
