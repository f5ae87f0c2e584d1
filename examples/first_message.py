"""Send a first message to the cluster `make run` starts, then read it back by its id.

Run: ``.venv/bin/python examples/first_message.py [broker 127.0.0.1:10911] [topic]``.
It uses the SDK's request layer (``aiorocketmq.client.core.api``) directly: one SEND_MESSAGE_V2, as
any RocketMQ producer sends it, then VIEW_MESSAGE_BY_ID. An unknown topic is created from TBW102.
"""

from __future__ import annotations

import asyncio
import sys

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.message import decode_record
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.runtime import configure_logging


async def main(broker: str, topic: str) -> None:
    props = {"TAGS": "hello", "KEYS": "first"}
    async with RemotingClient() as client:
        request = api.send_message(topic, b"Hello, RocketMQ!", group="example_producer",
                                   properties=props)  # fmt: skip
        sent = api.parse_send(await client.invoke(broker, request), broker)
        print(f"send: {sent.status.name} queue={sent.queue_id} offset={sent.queue_offset}")
        _host, offset = parse_offset_msg_id(sent.offset_msg_id)
        stored = decode_record((await client.invoke(broker, api.view_message(offset))).body)
        print(f"stored: topic={stored.topic} queue={stored.queue_id} body={stored.body!r}")


if __name__ == "__main__":
    configure_logging("warning", json=False)
    broker, topic = (sys.argv[1:] + ["127.0.0.1:10911", "FirstTopic"][len(sys.argv[1:]) :])[:2]
    asyncio.run(main(broker, topic))
