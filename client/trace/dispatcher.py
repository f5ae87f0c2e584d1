"""TraceDispatcher: a traced client's records, written to the trace topic in batches by an
internal producer of its own (AsyncTraceDispatcher of 4.9.8).

Records wait in a bounded queue (1,024, Java's traceContextQueue); a record arriving at a
full queue is dropped and counted (``dropped``), never waited for, so a slow or missing
trace topic never slows the traced client. One task, woken by the first record after an
idle spell, takes them every 100 ms (pollingTimeMil: not one wake-up per record), encodes
them and sends a batch (up to 4 at once, beside the draining, as Java's send executor) when
its text reaches 118,000 characters (the trace producer's 128,000-byte message limit less
10,000, as Java) or half a second after its first record (waitTimeThresholdMil).
A batch that cannot be sent is counted (``failed``) and warned about at most once a minute;
the traced client never sees it.

The internal producer is Java's: group ``_INNER_TRACE_PRODUCER-<group>-<PRODUCE|CONSUME>-<n>``,
instance ``PID_CLIENT_INNER_TRACE_PRODUCER_<name servers>`` (its own connections), a 5 s send
timeout, the host client's credentials (the broker lets any account publish to
RMQ_SYS_TRACE_TOPIC: PlainPermissionManager) and TLS. It sends along the trace topic's route,
so only to the brokers that host it (tryGetMessageQueueBrokerSet); without a route, along
TBW102's, and a broker that auto-creates topics creates it (Java's behaviour, r#3258).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.message import Message
from aiorocketmq.client.core.security import Tls
from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.client.producer.sending import ProducerCore
from aiorocketmq.client.trace.encoder import FIELD_SPLITOR, TRACE_TOPIC, TraceContext, encode
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import SerializeType

log = get_logger(__name__)

QUEUE_SIZE: Final = 1024  # AsyncTraceDispatcher.traceContextQueue
MAX_MESSAGE_SIZE: Final = 128_000  # the trace producer's maxMessageSize
BATCH_TEXT: Final = MAX_MESSAGE_SIZE - 10_000  # TraceDataSegment: send once this full
WINDOW: Final = 0.5  # s: a batch leaves this long after its first record at the latest
POLL: Final = 0.1  # s between takes from the queue while busy (pollingTimeMil)
SEND_TIMEOUT_MS: Final = 5000
SENDS_IN_FLIGHT: Final = 4  # batches being sent at once (Java: an executor of 10-20 threads)
STOP_TIMEOUT: Final = 5.0  # s: shutdown sends what is queued, for at most this long
WARN_EVERY: Final = 60.0  # s between warnings about failed batches
GROUP_PREFIX: Final = "_INNER_TRACE_PRODUCER"  # TraceConstants.GROUP_NAME_PREFIX
INSTANCE_PREFIX: Final = "PID_CLIENT_INNER_TRACE_PRODUCER"  # TraceConstants.TRACE_INSTANCE_NAME

_counter = itertools.count(1)  # AsyncTraceDispatcher.COUNTER
Listener = Callable[[TraceContext], None]


class TraceSettings(Protocol):
    """What a dispatcher reads of its client's options (every client's options have it)."""

    @property
    def trace(self) -> bool: ...
    @property
    def trace_topic(self) -> str: ...
    @property
    def serialize_type(self) -> SerializeType: ...
    @property
    def access_key(self) -> str | None: ...
    @property
    def secret_key(self) -> str | None: ...
    @property
    def security_token(self) -> str | None: ...
    @property
    def tls(self) -> Tls: ...


class TraceDispatcher:
    """The records of one traced producer or consumer (``kind`` "PRODUCE" or "CONSUME")."""

    def __init__(self, group: str, kind: str, namesrv: list[str], client: TraceSettings) -> None:
        self.topic = client.trace_topic or TRACE_TOPIC
        self.contexts: deque[TraceContext] = deque()
        self.dropped = 0  # records dropped: the queue was full
        self.failed = 0  # records in batches that could not be sent
        self.sent = 0  # records in batches sent
        self.listeners: list[Listener] = []  # each record, as it leaves (the OpenTelemetry bridge)
        addr = ";".join(namesrv)
        options = ProducerOptions(
            send_msg_timeout=SEND_TIMEOUT_MS,
            max_message_size=MAX_MESSAGE_SIZE,
            instance_name=f"{INSTANCE_PREFIX}_{addr}",
            serialize_type=client.serialize_type,
            create_topic_on_every_master=False,  # as Java's: TBW102's broker only
            access_key=client.access_key,
            secret_key=client.secret_key,
            security_token=client.security_token,
            tls=client.tls,
        )
        self.group = f"{GROUP_PREFIX}-{group}-{kind}-{next(_counter)}"
        self.producer = ProducerCore(self.group, addr, options)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self._closing = False
        self._warned_at = -WARN_EVERY

    def append(self, ctx: TraceContext) -> None:
        """Queue a record; a full queue drops it (counted). Never waits, never raises."""
        if len(self.contexts) >= QUEUE_SIZE:
            self.dropped += 1
            return
        self.contexts.append(ctx)
        if not self._wake.is_set():
            self._wake.set()

    async def start(self) -> None:
        if self._task is not None:
            return
        await self.producer._start()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="trace")

    async def stop(self) -> None:
        """Send what is queued (for up to STOP_TIMEOUT), then stop the internal producer."""
        task, self._task = self._task, None
        if task is None:
            return
        self._closing = True
        self._wake.set()
        done, _ = await asyncio.wait([task], timeout=STOP_TIMEOUT)
        if not done:
            for pending in (task, *self._sending):
                pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(task, *self._sending)
        await self.producer._shutdown()

    async def _run(self) -> None:
        """AsyncRunnable: idle until a record comes, then every POLL take what is queued into
        the batch (encoded), sending it when full or WINDOW after its first record."""
        loop = asyncio.get_running_loop()
        texts: list[str] = []
        keys: set[str] = set()
        size, first = 0, 0.0
        while True:
            if not self.contexts and not texts:
                if self._closing:
                    return
                self._wake.clear()  # appends set it again: one wake-up per idle spell
                if not self.contexts:
                    await self._wake.wait()
                continue
            if not self._closing:
                await asyncio.sleep(POLL)
            while self.contexts:
                ctx = self.contexts.popleft()
                text, ctx_keys = encode(ctx)
                for listener in self.listeners:
                    listener(ctx)
                if not texts:
                    first = loop.time()
                texts.append(text)
                keys |= ctx_keys
                size += len(text)
                if size >= BATCH_TEXT:
                    await self._dispatch(texts, keys)
                    texts, keys, size = [], set(), 0
            if texts and (self._closing or loop.time() - first >= WINDOW):
                await self._dispatch(texts, keys)
                texts, keys, size = [], set(), 0
            if self._closing and not self.contexts and not texts:
                await asyncio.gather(*self._sending)

    async def _dispatch(self, texts: list[str], keys: set[str]) -> None:
        """Send a batch beside the queue's draining (AsyncDataSendTask on traceExecutor),
        at most SENDS_IN_FLIGHT at once: past that, wait for one to end."""
        while len(self._sending) >= SENDS_IN_FLIGHT:
            await asyncio.wait(self._sending, return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.get_running_loop().create_task(self._send(texts, keys))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, texts: list[str], keys: set[str]) -> None:
        """AsyncDataSendTask: one trace message, its keys every traced id and key."""
        msg = Message(self.topic, "".join(texts).encode(), keys=sorted(keys))
        records = sum(t.count(FIELD_SPLITOR) for t in texts)
        try:
            await self.producer._send(msg, None, None, None, None)
        except MQClientError as exc:
            self.failed += records
            now = time.monotonic()
            if now - self._warned_at >= WARN_EVERY:
                self._warned_at = now
                log.warning("trace_send_failed", topic=self.topic, group=self.group,
                            failed=self.failed, dropped=self.dropped, error=str(exc))  # fmt: skip
            return
        self.sent += records
