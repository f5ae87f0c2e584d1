"""TransactionProducer: RocketMQ's TransactionMQProducer for asyncio (protocol.md 5.6 and
12.4, fidelity.md 3.1).

    async with TransactionProducer("tx_group", listener, namesrv_addr="127.0.0.1:9876") as p:
        result = await p.send_message_in_transaction(Message("Topic", b"order 42"), arg=42)

A half message is sent (TRAN_MSG=true, PGROUP=<group>), the listener's local transaction
runs, and END_TRANSACTION (oneway) commits or rolls it back. A broker asks about a half
message left UNKNOW with CHECK_TRANSACTION_STATE; the listener's ``check_local_transaction``
answers it, from any producer process of the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, Unpack

from aiorocketmq.client.consumer.push.consume import is_async
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import Message, SendResult
from aiorocketmq.client.producer.options import ProducerSettings
from aiorocketmq.client.producer.producer import Producer
from aiorocketmq.client.producer.transaction_types import (
    COMMIT_OR_ROLLBACK,
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
    as_state,
    exception_simple_desc,
    exception_text,
)
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import RemotingCommandError, RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from aiorocketmq.remoting.protocol.message import MessageExt, Prop
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.signature import sign

log = get_logger(__name__)

END_TIMEOUT: Final = 3.0  # s: processTransactionState's endTransactionOneway timeout
_Check = tuple[CheckTransactionStateRequestHeader, MessageExt, Channel]


class TransactionProducer(Producer):
    """A Producer (``send`` and the rest work as usual) that also sends in transactions.

    Options as ``Producer``'s keywords (ProducerSettings), plus TransactionMQProducer's
    ``check_thread_pool_max_size`` (1: check-backs answered one at a time, as in Java) and
    ``check_request_hold_max`` (2000 waiting check-backs; more are dropped, and the broker asks
    again next round)."""

    def __init__(
        self, group: str, listener: TransactionListener, namesrv_addr: str | None = None, *,
        check_thread_pool_max_size: int = 1, check_request_hold_max: int = 2000,
        **options: Unpack[ProducerSettings],
    ) -> None:  # fmt: skip
        super().__init__(group, namesrv_addr, **options)
        self.listener = listener
        self._check_workers = max(1, check_thread_pool_max_size)
        self._hold_max = check_request_hold_max
        self._checks: asyncio.Queue[_Check] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._pool: ThreadPoolExecutor | None = None
        self.dropped_checks = 0  # check-backs dropped because the queue was full

    async def start(self) -> None:
        """Start, register for check-backs, and make the group known to every master now
        (the broker sends a check to a producer of the group it has a heartbeat from)."""
        if self._instance is not None:
            return
        await super().start()
        inst = self.instance
        try:  # no check-back can arrive before the queue below exists: no await between
            inst.register_check_listener(self.group, self._on_check)
        except MQClientError:
            await super().shutdown()
            raise
        loop = asyncio.get_running_loop()
        self._checks = asyncio.Queue(self._hold_max)
        self._pool = ThreadPoolExecutor(self._check_workers, "rocketmq-tx-check")
        self._tasks = [loop.create_task(self._answer_checks()) for _ in range(self._check_workers)]
        await self._announce()

    async def _announce(self) -> None:
        """DefaultMQProducerImpl.start puts TBW102 in the publish table, so the route polling
        learns every broker, and heartbeats at once. Ours fetches TBW102's route now (kept
        fresh by the instance's route polling) and heartbeats its masters before returning."""
        inst = self.instance
        with contextlib.suppress(MQClientError):
            timeout = self.options.send_msg_timeout / 1000
            route = await inst.fetch_route(api.AUTO_CREATE_TOPIC, timeout)
            if route is not None:
                inst.remember_route(api.AUTO_CREATE_TOPIC, route)
        await inst.heartbeat_all()

    async def shutdown(self) -> None:
        """destroyTransactionEnv, then the Producer's shutdown."""
        if self._instance is None:
            return
        self._instance.unregister_check_listener(self.group, self._on_check)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks, self._checks = [], None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        await super().shutdown()

    async def __aenter__(self) -> TransactionProducer:
        await self.start()
        return self

    # ------------------------------------------------------------ sendMessageInTransaction

    async def send_message_in_transaction(
        self, msg: Message, arg: object = None
    ) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the listener's ``execute_local_transaction(msg,
        arg)`` (``msg.transaction_id`` set), then commit, roll back or leave it UNKNOW for a
        check-back. A half message not stored SEND_OK is rolled back without running it."""
        half, sent = await self.send_half(msg)
        state, error = LocalTransactionState.ROLLBACK_MESSAGE, None
        if sent.status is api.SendStatus.SEND_OK:
            fn = self.listener.execute_local_transaction
            try:
                if is_async(fn):
                    state = as_state(await fn(half, arg))  # type: ignore[misc]
                else:  # a plain listener runs in a worker thread: the loop goes on
                    state = as_state(await asyncio.to_thread(fn, half, arg))
            except Exception as exc:  # noqa: BLE001 - Java catches Throwable: UNKNOW, checked later
                state, error = LocalTransactionState.UNKNOW, exc
        return await self.finish(half, sent, state, error)

    async def finish(
        self, half: Message, sent: SendResult, state: LocalTransactionState,
        error: BaseException | None = None,
    ) -> TransactionSendResult:  # fmt: skip
        """After the local transaction: log what is not a commit, END_TRANSACTION, the result."""
        if error is not None:
            log.info("execute_local_transaction_failed", group=self.group, msg_id=sent.msg_id,
                     error=exception_text(error))  # fmt: skip
        elif state is not LocalTransactionState.COMMIT_MESSAGE:
            log.info("execute_local_transaction_returned", group=self.group, msg_id=sent.msg_id,
                     state=str(state), topic=half.topic)  # fmt: skip
        await self.end_transaction(sent, state, error, half)
        return transaction_result(sent, state)

    async def send_half(self, msg: Message) -> tuple[Message, SendResult]:
        """The half message (``half_message(msg, group)`` with its UNIQ_KEY set), sent and
        stored; raises as ``send`` does."""
        half = half_message(msg, self.group)
        half.properties.setdefault(Prop.UNIQ_KEY, self._ids.next())
        return half, await self.send(half)

    async def end_transaction(
        self, sent: SendResult, state: LocalTransactionState, error: BaseException | None = None,
        half: Message | None = None, *, oneway: bool = True,
    ) -> bool:  # fmt: skip
        """endTransaction: END_TRANSACTION, oneway, to the master of the broker that stored
        the half message. A failure is logged, not raised (the check-back settles it). A
        traced producer records it (with ``half``, the message sent).

        ``sent`` may be rebuilt from the handles of a half another process sent (its queue's
        topic and broker name, ``queue_offset``, ``offset_msg_id``): any producer of the
        half's group can end it. With ``oneway=False`` the broker's answer is awaited
        (ours: a broker processes ENDs as they come; one that runs them in a pool, as
        Java's, may commit two oneway ENDs out of order). Returns whether the request was
        written (oneway) or the broker answered SUCCESS."""
        try:
            _, commit_log_offset = parse_offset_msg_id(sent.offset_msg_id or sent.msg_id)
            header = EndTransactionRequestHeader(
                producer_group=self.group,
                tran_state_table_offset=sent.queue_offset,
                commit_log_offset=commit_log_offset,
                commit_or_rollback=COMMIT_OR_ROLLBACK[state],
                msg_id=sent.msg_id,
                transaction_id=sent.transaction_id,  # the send reply's (none from 4.9.8)
                bname=sent.queue.broker_name,
            )
            remark = None
            if error is not None:
                remark = f"executeLocalTransactionBranch exception: {exception_text(error)}"
            addr = await self.instance.master_addr(sent.queue.broker_name, sent.queue.topic)
            if self._send_trace is not None and half is not None:  # doExecuteEndTransactionHook
                self._send_trace.ended(half.topic, half.wire_properties(), sent.msg_id,
                                       sent.transaction_id or sent.msg_id, state.value, addr,
                                       False)  # fmt: skip
            timeout = self.options.send_msg_timeout / 1000
            request = end_request(header, remark)
            if oneway:
                await self.instance.remoting.invoke_oneway(addr, request, timeout)
                return True
            answer = await self.instance.remoting.invoke(addr, request, timeout)
            if answer.code != ResponseCode.SUCCESS:
                raise MQBrokerError(answer.code, answer.remark, addr)
            return True
        except (MQClientError, RemotingError, ValueError) as exc:
            log.warning("end_transaction_failed", group=self.group, msg_id=sent.msg_id,
                        state=str(state), error=str(exc))  # fmt: skip
            return False

    # ------------------------------------------------------------ checkTransactionState

    def _on_check(self, req: RemotingCommand, msg: MessageExt, ch: Channel) -> None:
        """ClientRemotingProcessor.checkTransactionState: queued for the check workers; a full
        queue drops it (Java's checkExecutor rejects it), the broker asks again next round."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext(req.ext_fields)
        except RemotingCommandError as exc:
            log.warning("check_transaction_state_bad_header", broker=ch.peer, error=str(exc))
            return
        if self._checks is None:
            return
        try:
            self._checks.put_nowait((header, msg, ch))
        except asyncio.QueueFull:
            self.dropped_checks += 1
            log.warning("check_transaction_state_dropped", group=self.group, broker=ch.peer,
                        msg_id=header.msg_id, waiting=self._hold_max)  # fmt: skip

    async def _answer_checks(self) -> None:
        assert self._checks is not None
        checks = self._checks
        while True:
            header, msg, ch = await checks.get()
            try:
                await self._answer_check(header, msg, ch)
            except Exception:  # one bad answer must not stop the worker
                log.exception("check_transaction_state_failed", group=self.group)

    async def _answer_check(
        self, header: CheckTransactionStateRequestHeader, msg: MessageExt, ch: Channel
    ) -> None:
        """The listener's answer, as END_TRANSACTION (oneway, fromTransactionCheck=true) on
        the connection the check came on; an exception is UNKNOW, with a remark."""
        error: Exception | None = None
        try:
            state = as_state(await self._call(self.listener.check_local_transaction, msg))
        except Exception as exc:  # noqa: BLE001 - Java catches Throwable: UNKNOW
            log.info("check_local_transaction_failed", group=self.group,
                     msg_id=header.msg_id, error=exception_text(exc))  # fmt: skip
            state, error = LocalTransactionState.UNKNOW, exc
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=COMMIT_OR_ROLLBACK[state],
            from_transaction_check=True,
            msg_id=msg.properties.get(Prop.UNIQ_KEY) or msg.msg_id,
            transaction_id=header.transaction_id,
            bname=header.bname,
        )
        remark = None
        if error is not None:
            remark = f"checkLocalTransactionState Exception: {exception_simple_desc(error)}"
        request = end_request(end, remark)
        if self._send_trace is not None:  # processTransactionState's doExecuteEndTransactionHook
            self._send_trace.ended(
                msg.topic,
                msg.properties,
                end.msg_id or "",
                msg.properties.get(Prop.UNIQ_KEY),
                state.value,
                ch.peer,
                True,
            )
        try:
            if ch.is_open:
                # a request of ours on the broker's connection, past the RemotingClient that
                # signs: signed here (Java sends it through the client, AclClientRPCHook too)
                credentials = self.instance.security.credentials
                if credentials is not None:
                    sign(request, credentials)
                await ch.oneway(request, END_TIMEOUT)
            else:  # parseChannelRemoteAddr + endTransactionOneway: reconnects if need be
                await self.instance.remoting.invoke_oneway(ch.peer, request, END_TIMEOUT)
        except RemotingError as exc:
            log.warning("end_transaction_failed", group=self.group, broker=ch.peer,
                        msg_id=end.msg_id, error=str(exc))  # fmt: skip

    async def _call(self, fn: Callable[..., Any], *args: object) -> object:
        if is_async(fn):
            return await fn(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, *args)


def half_message(msg: Message, group: str) -> Message:
    """A copy of ``msg`` as a half message of producer group ``group`` (TRAN_MSG and PGROUP
    set, a delay level dropped, as sendMessageInTransaction does). Any ``Producer`` can send
    it: the broker parks it until a ``TransactionProducer`` of ``group`` ends it
    (``end_transaction`` with its SendResult) or answers a check-back about it -- so the
    sender need not be the producer that decides (the Spark sink's executors send, its
    driver ends)."""
    props = dict(msg.properties)
    props.pop(Prop.DELAY, None)  # sendMessageInTransaction: "ignore DelayTimeLevel"
    props[Prop.TRAN_MSG] = "true"
    props[Prop.PGROUP] = group
    return dataclasses.replace(msg, delay_level=0, properties=props)


def end_request(header: EndTransactionRequestHeader, remark: str | None) -> RemotingCommand:
    request = api.request(C.END_TRANSACTION, header)
    request.remark = remark
    return request


def transaction_result(sent: SendResult, state: LocalTransactionState) -> TransactionSendResult:
    # compat: 4.9.8's broker never puts transactionId in a send reply, so Java's
    # TransactionSendResult.transactionId is null; ours is the id consumers and check-backs
    # see (the UNIQ_KEY)
    return TransactionSendResult(
        status=sent.status, msg_id=sent.msg_id, offset_msg_id=sent.offset_msg_id,
        queue=sent.queue, queue_offset=sent.queue_offset, region=sent.region,
        transaction_id=sent.transaction_id or sent.msg_id, local_transaction_state=state,
    )  # fmt: skip
