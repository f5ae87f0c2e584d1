"""Small test helpers: wait for a condition with a deadline instead of sleeping blindly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` every 10 ms; TimeoutError if it is still false after ``timeout``."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 -- polls state another object owns
            await asyncio.sleep(0.01)
