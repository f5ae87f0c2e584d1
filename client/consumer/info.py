"""What a consumer tells brokers and admins about itself (ClientRemotingProcessor and
DefaultMQPushConsumerImpl.consumerRunningInfo of 4.9.8), as bodies Java's mqadmin reads:

- GET_CONSUMER_RUNNING_INFO (307): ConsumerRunningInfo (properties, subscriptionSet,
  mqTable keyed by MessageQueue objects as fastjson writes them, statusTable, jstack);
- CONSUME_MESSAGE_DIRECTLY (309): ConsumeMessageDirectlyResult;
- GET_CONSUMER_STATUS_FROM_CLIENT (221): GetConsumerStatusBody;
- RESET_CONSUMER_CLIENT_OFFSET (220): the ResetOffsetBody's offsets, parsed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData

MQVersion = "V4_9_8"


def _ms(monotonic: float) -> int:
    """A monotonic instant as ms since the epoch."""
    return int((time.time() - (time.monotonic() - monotonic)) * 1000)


def process_queue_info(pq: ProcessQueue, commit_offset: int) -> dict[str, Any]:
    """ProcessQueue.fillProcessQueueInfo."""
    waiting = pq.offsets
    return {
        "cachedMsgCount": pq.count,
        "cachedMsgMaxOffset": waiting[-1] if waiting else 0,
        "cachedMsgMinOffset": waiting[0] if waiting else 0,
        "cachedMsgSizeInMiB": pq.size >> 20,
        "commitOffset": commit_offset,
        "droped": pq.dropped,
        "lastConsumeTimestamp": _ms(pq.last_consume),
        "lastLockTimestamp": _ms(pq.last_lock) if pq.last_lock else 0,
        "lastPullTimestamp": _ms(pq.last_pull),
        "locked": pq.locked,
        "transactionMsgCount": 0,
        "transactionMsgMaxOffset": 0,
        "transactionMsgMinOffset": 0,
        "tryUnlockTimes": pq.try_unlock_times,
    }


def running_info(
    properties: Mapping[str, str],
    subscriptions: list[SubscriptionData],
    queues: Mapping[MessageQueue, tuple[ProcessQueue, int]],
    topics: list[str],
) -> bytes:
    """ConsumerRunningInfo as fastjson writes it (mqTable with object keys)."""
    mq_table = fastjson.dumps_object_keyed(
        (mq.to_json(), process_queue_info(pq, off)) for mq, (pq, off) in sorted(queues.items())
    )
    status = {
        t: {"consumeFailedMsgs": 0, "consumeFailedTPS": 0.0, "consumeOkTPS": 0.0,
            "consumeRT": 0.0, "pullRT": 0.0, "pullTPS": 0.0}
        for t in sorted(topics)
    }  # fmt: skip
    subs = json.dumps([s.to_json() for s in sorted(subscriptions, key=lambda s: s.topic)])
    return (
        f'{{"jstack":"","mqTable":{mq_table},"properties":{json.dumps(dict(properties))},'
        f'"statusTable":{json.dumps(status)},"subscriptionSet":{subs}}}'
    ).encode()


def direct_result(order: bool, result: str, remark: str, spent_ms: int) -> bytes:
    """ConsumeMessageDirectlyResult; ``result`` one of CMResult's names (CR_SUCCESS, ...)."""
    return json.dumps(
        {
            "autoCommit": True,
            "consumeResult": result,
            "order": order,
            "remark": remark,
            "spentTimeMills": spent_ms,
        }
    ).encode()


def consumer_status(offsets: Mapping[MessageQueue, int]) -> bytes:
    """GetConsumerStatusBody: this client's offsets of the topic's queues."""
    table = fastjson.dumps_object_keyed((mq.to_json(), off) for mq, off in sorted(offsets.items()))
    return f'{{"consumerTable":{{}},"messageQueueTable":{table}}}'.encode()


def reset_offsets(body: bytes) -> dict[MessageQueue, int]:
    """ResetOffsetBody ``offsetTable`` (object keys); ValueError if malformed."""
    if not body:
        return {}
    table = fastjson.loads(body).get("offsetTable") or {}
    out = {}
    for key, offset in table.items():
        obj = dict(key) if isinstance(key, tuple) else fastjson.loads(key)
        out[MessageQueue.from_json(obj)] = int(offset)
    return out
