"""The README's quick start: send ten messages to ``QuickStart`` with the SDK's Producer, then
receive them with a PushConsumer of group ``quickstart_consumers`` and print each.

Run with ``make run`` going: ``python examples/quickstart.py`` (inside ``.venv``). The name
server is ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``. Afterwards
``mqadmin consumerProgress -g quickstart_consumers`` shows the group caught up.
"""

from __future__ import annotations

import asyncio
import os

from aiorocketmq.client import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)

TOPIC = "QuickStart"
COUNT = 10


async def main(namesrv: str) -> None:
    async with Producer("quickstart_producers", namesrv_addr=namesrv) as producer:
        sent = set()
        for i in range(COUNT):
            body = f"hello {i} ({os.getpid()})".encode()  # this run's messages, not older ones
            await producer.send(Message(TOPIC, body, tags="TagA"))
            sent.add(body)
        print(f"sent {COUNT} messages to {TOPIC}")
    received: set[bytes] = set()
    done = asyncio.Event()

    async def on_messages(msgs: list[MessageExt], _: ConsumeConcurrentlyContext) -> ConsumeStatus:
        for msg in msgs:
            if msg.body in sent and msg.body not in received:
                received.add(msg.body)
                print(f"received {msg.body.decode()!r} from queue {msg.queue_id}")
        if received == sent:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "quickstart_consumers",
        namesrv_addr=namesrv,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(TOPIC, "TagA")
    consumer.register_message_listener(on_messages)
    async with consumer:
        await asyncio.wait_for(done.wait(), 60)
    print(f"all {COUNT} received")


if __name__ == "__main__":
    asyncio.run(main(os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876")))
