"""Small test helpers: wait for a condition with a deadline instead of sleeping blindly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` every 10 ms; TimeoutError if it is still false after ``timeout``."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 -- polls state another object owns
            await asyncio.sleep(0.01)


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (VmRSS from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


# FAQUrl.suggestTodo, which 4.9.8 appends to some remarks (fidelity D14), spelled out here so
# the tests check the text itself
FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
