"""Send a first message to the cluster `make run` starts, then read it back by its id.

Run: ``.venv/bin/python examples/first_message.py [broker 127.0.0.1:10911] [topic]``.
It speaks the wire protocol directly (the Python SDK arrives with its own issue): one
SEND_MESSAGE_V2, as any RocketMQ producer sends it, then VIEW_MESSAGE_BY_ID.
"""

from __future__ import annotations

import asyncio
import sys
import time

from remoting.client import RemotingClient
from remoting.protocol.codes import RequestCode
from remoting.protocol.command import RemotingCommand
from remoting.protocol.headers.send import SendMessageHeader
from remoting.protocol.message import decode_record, encode_properties
from remoting.protocol.msgid import parse_offset_msg_id
from remoting.runtime import configure_logging


async def main(broker: str, topic: str) -> None:
    header = SendMessageHeader(
        producer_group="example_producer",
        topic=topic,
        default_topic="TBW102",  # unknown topics are created from TBW102 (4 queues)
        default_topic_queue_nums=4,
        queue_id=-1,  # any queue
        sys_flag=0,
        born_timestamp=time.time_ns() // 1_000_000,
        flag=0,
        properties=encode_properties({"TAGS": "hello", "KEYS": "first"}),
    )
    async with RemotingClient() as client:
        request = RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, header.to_ext(v2=True), b"Hello, RocketMQ!"
        )
        sent = await client.invoke(broker, request)
        print(f"send: code={sent.code} {sent.ext_fields}")
        _host, offset = parse_offset_msg_id(sent.ext_fields["msgId"])
        view = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        stored = decode_record((await client.invoke(broker, view)).body)
        print(f"stored: topic={stored.topic} queue={stored.queue_id} body={stored.body!r}")


if __name__ == "__main__":
    configure_logging("warning", json=False)
    asyncio.run(main(*(sys.argv[1:3] or ["127.0.0.1:10911", "FirstTopic"])))
