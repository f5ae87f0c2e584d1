"""What a transaction producer's user writes and gets back (4.9.8's LocalTransactionState,
TransactionListener, TransactionSendResult)."""

from __future__ import annotations

import enum
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from aiorocketmq.client.core.message import Message, SendResult
from aiorocketmq.remoting.protocol.message import MessageExt, SysFlag

__all__ = ["LocalTransactionState", "TransactionListener", "TransactionSendResult"]


class LocalTransactionState(enum.StrEnum):
    """The outcome of a local transaction (Java's names, UNKNOW included)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


# endTransaction: the END_TRANSACTION header's commitOrRollback (MessageSysFlag)
COMMIT_OR_ROLLBACK: Final = {
    LocalTransactionState.COMMIT_MESSAGE: SysFlag.TRANSACTION_COMMIT,
    LocalTransactionState.ROLLBACK_MESSAGE: SysFlag.TRANSACTION_ROLLBACK,
    LocalTransactionState.UNKNOW: SysFlag.TRANSACTION_NOT_TYPE,
}

StateOrAwaitable = LocalTransactionState | Awaitable[LocalTransactionState]


class TransactionListener(Protocol):
    """Either method may be ``async def`` (run on the loop) or plain (run in a worker thread,
    so the loop is never blocked). An exception, or None, counts as UNKNOW: the broker asks
    again later with ``check_local_transaction``."""

    def execute_local_transaction(self, msg: Message, arg: object) -> StateOrAwaitable:
        """Runs after the half message is stored; ``msg.transaction_id`` is its id."""
        ...

    def check_local_transaction(self, msg: MessageExt) -> StateOrAwaitable:
        """A broker asks about a half message left UNKNOW (or never ended)."""
        ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """SendResult of the half message, with the local transaction's outcome."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


def as_state(value: object) -> LocalTransactionState:
    """A listener's answer: None is UNKNOW (as in Java); a state's name is accepted too.
    Raises ValueError for anything else."""
    if value is None:
        return LocalTransactionState.UNKNOW
    if isinstance(value, str):
        return LocalTransactionState(value)
    raise ValueError(f"not a LocalTransactionState: {value!r}")


def exception_text(exc: BaseException) -> str:
    """Throwable.toString: the class name, then ": message" if there is one."""
    text = str(exc)
    return f"{type(exc).__qualname__}: {text}" if text else type(exc).__qualname__


def exception_simple_desc(exc: BaseException) -> str:
    """RemotingHelper.exceptionSimpleDesc: toString, then the frame that raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return exception_text(exc)
    top = frames[-1]
    return f"{exception_text(exc)}, {top.name}({Path(top.filename).name}:{top.lineno})"
