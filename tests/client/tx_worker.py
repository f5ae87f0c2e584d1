"""A transaction producer in its own process, for the SIGKILL test of
test_transaction_producer.py: ``python -m tests.client.tx_worker NAMESRV GROUP TOPIC``.
Sends one transactional message whose local transaction never finishes: prints
``{"event": "half", "msg_id": ...}`` once the half message is stored, then waits to be killed
(SIGKILL) before any END_TRANSACTION. Checks that reach it are answered UNKNOW."""

from __future__ import annotations

import asyncio
import json
import sys

from aiorocketmq.client import LocalTransactionState, Message, TransactionProducer
from aiorocketmq.remoting.protocol.message import MessageExt


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Hang:
    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        emit(event="half", msg_id=msg.transaction_id)
        await asyncio.Event().wait()  # killed here, between the half message and its END
        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        emit(event="checked", msg_id=msg.transaction_id)
        return LocalTransactionState.UNKNOW


async def main(namesrv: str, group: str, topic: str) -> None:
    async with TransactionProducer(group, Hang(), namesrv_addr=namesrv, instance_name="w") as p:
        emit(event="ready")
        await p.send_message_in_transaction(Message(topic, b"from the killed producer"))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
