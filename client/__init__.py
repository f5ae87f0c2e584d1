"""The Python SDK for RocketMQ 4.x clusters (ours and Apache's). May import: remoting.

The public face, and all of it (spark and mqadmin use nothing else; pyproject's
import-linter contracts keep them to it):

- ``aiorocketmq.client`` (the same names as ``aiorocketmq``): ``Producer`` (sends with
  RocketMQ's retries and fault avoidance; DefaultMQProducer's settings as typed keywords),
  ``TransactionProducer`` (``half_message``: a half message any producer can send;
  ours beyond 4.9.8: ``send_halves``, ``send_half_batch`` (many messages as one half) and
  ``end_transactions``, many in one request, or
  ``TransactionBatchNotSupported`` from a broker without them),
  ``PushConsumer`` (listeners or ``async for``), ``PullConsumer`` (``poll``, ``pull_raw``
  for bulk readers, ``list_topics``), ``MessageSelector`` (a tag or SQL92 subscription:
  ``MessageSelector.by_sql("a > 5")``), ``Message`` / ``MessageExt`` / ``SendResult`` and
  friends; ``create_reply`` (request-reply: ``Producer.request`` asks, a consumer answers);
  errors: every one an ``MQClientError`` with ``retriable``:
  ``MQConnectionError``, ``MQTimeoutError`` (also a TimeoutError; ``MQRequestTimeoutError``
  a request's reply that never came), ``MQBrokerError`` (a refusal's ``code``); the
  remoting layer's own errors never leave the SDK. ``RawPull``, ``PullStatus``, ``Columns``
  and ``decode_columns`` read raw pulls column by column; ``Layout``, ``decode_layout`` and
  ``offset_msg_id_at`` give where the fields lie, for readers that build columns natively;
  ``Starts`` and ``decode_starts`` only where each record starts (the fields of the usual
  record shape lie at fixed places from there).
  Every client class takes ``access_key``/``secret_key`` (ACL 1.0 signatures) and ``tls``;
  ``tls_context`` builds a verifying ``ssl.SSLContext`` for it from PEM files;
  ``SecuritySettings`` types those four keywords (``**settings`` to any client class).
- ``aiorocketmq.client.api``: the request layer (Java's MQClientAPIImpl): builders for every
  request, parsers for the answers, ``Remote`` (connections that raise the errors above),
  ``check_group``, ``commit_offsets(consumer, group, offsets)``.
- ``aiorocketmq.client.sync``: blocking facades of the producers and consumers, and
  ``run(coro, timeout)``, which runs a coroutine on their shared event-loop thread.

Everything under ``client.core``, ``client.producer`` and ``client.consumer`` is internal.
"""

from aiorocketmq.client.consumer.lite.consumer import PullConsumer
from aiorocketmq.client.consumer.lite.raw import (
    Columns,
    Layout,
    PullStatus,
    RawPull,
    Starts,
    decode_columns,
    decode_layout,
    decode_starts,
    offset_msg_id_at,
)
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.push.iteration import Delivery
from aiorocketmq.client.consumer.selector import ExpressionType, MessageSelector
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
)
from aiorocketmq.client.core.errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQRequestTimeoutError,
    MQTimeoutError,
)
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult, SendStatus
from aiorocketmq.client.core.security import SecuritySettings, tls_context
from aiorocketmq.client.core.timer import RecallHandle
from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.client.producer.producer import Producer, select_by_hash
from aiorocketmq.client.producer.request import create_reply
from aiorocketmq.client.producer.transaction import TransactionProducer, half_message
from aiorocketmq.client.producer.transaction_batch import (
    TransactionBatchNotSupported,
    end_transactions,
    send_half_batch,
    send_halves,
)
from aiorocketmq.client.producer.transaction_types import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)
from aiorocketmq.remoting.protocol.message import MessageExt

# mypyc drops the docstrings of the classes it compiles (setup.py COMPILED): the two codec
# classes the SDK hands out get a short one back, for help()
if not MessageExt.__doc__:
    MessageExt.__doc__ = (
        "A stored message, as consumers and pulls return it: topic, body, tags, keys, "
        "properties, msg_id, queue_id, queue_offset, born and store timestamps and hosts, "
        "reconsume_times (Java's MessageExt)."
    )
if not Columns.__doc__:
    Columns.__doc__ = (
        "Records decoded column by column (decode_columns): one list per field, the i-th "
        "entry of each list one message."
    )
if not Starts.__doc__:
    Starts.__doc__ = (
        "Where records start in pull bodies laid end to end (decode_starts), and whether "
        "every one has the usual shape."
    )
if not Layout.__doc__:
    Layout.__doc__ = (
        "Where the fields of records lie in pull bodies laid end to end (decode_layout): "
        "fixed-size fields as values, variable ones as [start, end) byte positions."
    )

__all__ = [
    "Columns",
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Delivery",
    "ExpressionType",
    "Layout",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "MQConnectionError",
    "MQRequestTimeoutError",
    "MQTimeoutError",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "ProducerOptions",
    "PullConsumer",
    "PullStatus",
    "PushConsumer",
    "RawPull",
    "RecallHandle",
    "SecuritySettings",
    "SendResult",
    "SendStatus",
    "Starts",
    "TransactionBatchNotSupported",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "create_reply",
    "decode_columns",
    "decode_layout",
    "decode_starts",
    "end_transactions",
    "half_message",
    "offset_msg_id_at",
    "select_by_hash",
    "send_half_batch",
    "send_halves",
    "tls_context",
]
