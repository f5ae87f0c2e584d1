"""A broker's controller alone in a process, for tests that stop it with SIGSTOP:
``python -m tests.controller.node CONTROLLER_ADDR BROKER_ID TTL_MS``.

Its stdout is JSON log lines (tests/harness.py's ServerProcess reads them): the controller's
own events, and every 20 ms a ``tick`` with what the broker would see before acknowledging:
``at`` (the clock before asking), ``may_ack``, the fence's bound ``valid_until`` (on
fence.boot_clock, one clock for every process of the host), the role and epoch."""

from __future__ import annotations

import asyncio
import sys

from aiorocketmq.broker.controller.controller import Controller
from aiorocketmq.broker.controller.fence import boot_clock
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.runtime import configure_logging

log = get_logger("tests.controller.node")


async def main(controller_addr: str, broker_id: int, ttl_ms: int) -> None:
    ctl = Controller(
        controller_addr=controller_addr,
        cluster="DefaultCluster",
        broker_name="broker-a",
        broker_id=broker_id,
        broker_addr=f"127.0.0.1:{10911 + 10 * broker_id}",
        lease_ttl_ms=ttl_ms,
    )
    await ctl.start()
    seq = 0
    while True:
        at = boot_clock()  # read before may_ack: it asked at this time or later
        log.info(
            "tick",
            seq=seq,
            at=at,
            may_ack=ctl.may_ack(),
            valid_until=ctl.fence.valid_until,
            role=str(ctl.role),
            epoch=ctl.epoch,
        )
        seq += 1
        await asyncio.sleep(0.02)


if __name__ == "__main__":
    configure_logging("info", json=True)
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
