"""An orderly push consumer in its own process, for the SIGKILL test of test_push.py:
``python -m tests.client.orderly_worker NAMESRV TOPIC GROUP NAME``. Prints one JSON line per
consumed message (event ``consumed``: key, seq, queue) and ``ready`` once started; runs until
SIGTERM (then shuts the consumer down) or SIGKILL."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.types import (
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    PushOptions,
)
from aiorocketmq.remoting.protocol.message import MessageExt


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


async def main(namesrv: str, topic: str, group: str, name: str) -> None:
    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        for m in msgs:
            key, seq = m.body.decode().split(":")
            emit(event="consumed", key=key, seq=int(seq), queue=f"{m.broker_name}/{m.queue_id}")
        await asyncio.sleep(0.01)  # slow enough that a kill lands mid-stream
        return ConsumeOrderlyStatus.SUCCESS

    fast: PushOptions = {
        "rebalance_interval": 1000,
        "persist_consumer_offset_interval": 200,
        "instance_name": name,
    }
    consumer = PushConsumer(group, namesrv_addr=namesrv, **fast)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener, orderly=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with consumer:
        emit(event="ready", name=name)
        await stop.wait()
    emit(event="stopped", name=name)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
