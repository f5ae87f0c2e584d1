"""A slave's raw appender to be killed: ``python -m tests.store.raw_writer MASTER SLAVE SEED``.

Opens the master store at MASTER and the slave store at SLAVE, and copies the master's
CommitLog into the slave from the slave's end, in random chunks of at most 32 KiB (read_raw,
append_raw), printing after each append returned: ``<dispatched offset> <max offset>``.
When the copy is complete it prints ``done`` and waits to be killed.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import structlog

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.remoting.runtime import configure_logging
from tests.store.conftest import HOST, small_config
from tests.store.replication import CHUNK, replica_config


async def main(master_root: str, slave_root: str, seed: int) -> None:
    configure_logging("warning", json=True)  # stdout carries the progress lines only
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    master = MessageStore(small_config(Path(master_root), **replica_config()), store_host=HOST)
    slave = MessageStore(small_config(Path(slave_root), **replica_config()), store_host=HOST)
    await master.start()
    await slave.start()
    print("ready", flush=True)
    rng = random.Random(seed)
    while (pos := slave.max_phys_offset) < master.max_phys_offset:
        await slave.append_raw(pos, master.read_raw(pos, rng.randrange(1, CHUNK + 1)))
        # one write per line, so a kill leaves a whole line or none
        sys.stdout.write(f"{slave.dispatched_phys_offset} {slave.max_phys_offset}\n")
        sys.stdout.flush()
        await asyncio.sleep(0.002)
    print("done", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
