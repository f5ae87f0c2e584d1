"""Service: ``async with`` for anything with ``start()`` and ``close()`` (servers, clients,
the name server and the broker), so the protocol is written once."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Service:
    async def start(self) -> None:
        """Start serving; nothing to do by default (a client connects lazily)."""

    async def close(self) -> None:
        raise NotImplementedError  # every service says how it stops

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
