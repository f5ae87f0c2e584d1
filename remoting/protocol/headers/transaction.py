"""END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39) headers (protocol.md 5.6,
fidelity.md 3.1). Wire keys are Java's field names."""

from __future__ import annotations

from dataclasses import field
from typing import Final

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire

# MessageSysFlag.TRANSACTION_*_TYPE: the values of commitOrRollback
TRANSACTION_NOT_TYPE: Final = 0
TRANSACTION_COMMIT_TYPE: Final = 8
TRANSACTION_ROLLBACK_TYPE: Final = 12


@header
class EndTransactionRequestHeader(Header):
    """EndTransactionRequestHeader (extends RpcRequestHeader: ``bname``, 5.x)."""

    producer_group: str = field(metadata=wire("producerGroup"))
    tran_state_table_offset: int = field(metadata=wire("tranStateTableOffset"))
    commit_log_offset: int = field(metadata=wire("commitLogOffset"))
    commit_or_rollback: Int32 = field(metadata=wire("commitOrRollback"))
    from_transaction_check: bool = field(default=False, metadata=wire("fromTransactionCheck"))
    msg_id: str = field(metadata=wire("msgId"))
    transaction_id: str | None = field(default=None, metadata=wire("transactionId"))
    bname: str | None = field(default=None, metadata=wire("bname"))


@header
class CheckTransactionStateRequestHeader(Header):
    """CheckTransactionStateRequestHeader (extends RpcRequestHeader: ``bname``, 5.x)."""

    tran_state_table_offset: int = field(metadata=wire("tranStateTableOffset"))
    commit_log_offset: int = field(metadata=wire("commitLogOffset"))
    msg_id: str | None = field(default=None, metadata=wire("msgId"))
    transaction_id: str | None = field(default=None, metadata=wire("transactionId"))
    offset_msg_id: str | None = field(default=None, metadata=wire("offsetMsgId"))
    bname: str | None = field(default=None, metadata=wire("bname"))
