"""A store writer to be killed: ``python -m tests.store.crash_writer ROOT ROUND``.

Opens the store at ROOT with SYNC_FLUSH and appends messages until killed, printing one line
per acknowledged put -- after ``put`` returned PUT_OK, so the bytes were fsynced:
``<phys> <queue offset> <topic> <queue id> <body sha256>``.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import sys
from pathlib import Path

import structlog

from aiorocketmq.broker.store import MessageStore, PutStatus
from aiorocketmq.broker.store.config import FlushDiskType
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.runtime import configure_logging
from tests.store.conftest import HOST, small_config


async def main(root: str, round_: int) -> None:
    configure_logging("warning", json=True)  # stdout carries the acknowledgements only
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    config = small_config(
        Path(root), flush_disk_type=FlushDiskType.SYNC_FLUSH, mapped_file_size_commit_log=64 * 1024
    )
    store = MessageStore(config, store_host=HOST)
    await store.start()
    print("ready", flush=True)
    rng = random.Random(round_)
    for seq in range(1_000_000):
        body = f"r{round_}-{seq}-".encode() + rng.randbytes(rng.randrange(0, 3000))
        topic, qid = rng.choice(["A", "B"]), rng.randrange(3)
        msg = MessageExt(
            topic=topic,
            queue_id=qid,
            body=body,
            born_host="127.0.0.1:1",
            properties={"KEYS": f"k{round_}-{seq}"},
        )
        result = await store.put(msg)
        if result.status is PutStatus.PUT_OK:
            digest = hashlib.sha256(body).hexdigest()
            line = f"{result.phys_offset} {result.queue_offset} {topic} {qid} {digest}\n"
            sys.stdout.write(line)  # one write per line, so a kill leaves a whole line or none
            sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
