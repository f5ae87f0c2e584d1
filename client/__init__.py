"""The Python SDK for RocketMQ 4.x clusters (ours and Apache's).

May import: remoting. ``client.api`` is the request layer every sender uses (Java's
MQClientAPIImpl); ``Producer`` sends with RocketMQ's retries and fault avoidance. The
consumers arrive with their issue.
"""

from client.errors import MQBrokerError, MQClientError
from client.lite_pull import PullConsumer
from client.message import Message, MessageQueue, SendResult, SendStatus
from client.producer import Producer, ProducerOptions, select_by_hash

__all__ = [
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageQueue",
    "Producer",
    "ProducerOptions",
    "PullConsumer",
    "SendResult",
    "SendStatus",
    "select_by_hash",
]
