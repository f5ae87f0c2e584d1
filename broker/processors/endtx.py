"""END_TRANSACTION (37): commit or roll back a half message (EndTransactionProcessor;
protocol.md 5.6, fidelity.md 3.1). Clients send it oneway, so its answer is mostly for
two-way callers and tests. And the admin's RESUME_CHECK_HALF_MESSAGE (323), and ours,
END_TRANSACTION_BATCH (remoting/protocol/txbatch.py)."""

from __future__ import annotations

import structlog

from aiorocketmq.broker.config import BrokerRole
from aiorocketmq.broker.transaction_batch import end_many
from aiorocketmq.broker.transactions import Transactions
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.dispatch import not_supported
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    EndTransactionRequestHeader,
)
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.txbatch import (
    GROUP_FIELD,
    MAX_END_ENTRIES,
    decode_entries,
    encode_results,
)

log = structlog.get_logger(__name__)


class EndTransactionProcessor:
    def __init__(self, tx: Transactions) -> None:
        self.tx = tx

    async def end(self, req: RemotingCommand, ch: Channel) -> RemotingCommand | None:
        hdr = EndTransactionRequestHeader.from_ext(req.ext_fields)
        if self.tx.ctx.config.broker_role is BrokerRole.SLAVE:
            log.warning("end_transaction_on_slave", peer=ch.peer)
            return response_to(req, R.SLAVE_NOT_AVAILABLE)
        if hdr.commit_or_rollback not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            # 0 (UNKNOW) or anything else: logged, not answered, as in Java
            log.info("end_transaction_pending", peer=ch.peer, msg_id=hdr.msg_id,
                     from_check=hdr.from_transaction_check, remark=req.remark)  # fmt: skip
            return None
        if hdr.from_transaction_check or hdr.commit_or_rollback == TRANSACTION_ROLLBACK_TYPE:
            log.info("end_transaction", peer=ch.peer, msg_id=hdr.msg_id,
                     commit=hdr.commit_or_rollback == TRANSACTION_COMMIT_TYPE,
                     from_check=hdr.from_transaction_check, remark=req.remark)  # fmt: skip
        outcome = await self.tx.end(hdr)
        return response_to(req, outcome.code, outcome.remark)

    async def end_batch(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """END_TRANSACTION_BATCH: an answer per entry in the body; the request itself is
        refused only when it cannot be read, is too long, or this broker is a slave. With
        ``enableBatchTransaction=false`` it is answered as by a broker without the code."""
        config = self.tx.ctx.config
        if not config.enable_batch_transaction:
            return not_supported(req)
        if config.broker_role is BrokerRole.SLAVE:
            log.warning("end_transaction_on_slave", peer=ch.peer)
            return response_to(req, R.SLAVE_NOT_AVAILABLE)
        group = req.ext_fields.get(GROUP_FIELD)
        if not group:
            return response_to(req, R.INVALID_PARAMETER, f"the {GROUP_FIELD} field is missing")
        try:
            entries = decode_entries(req.body)
        except MessageDecodeError as exc:
            return response_to(req, R.INVALID_PARAMETER, str(exc))
        if len(entries) > MAX_END_ENTRIES:
            return response_to(
                req, R.INVALID_PARAMETER,
                f"{len(entries)} entries, at most {MAX_END_ENTRIES} in one request",
            )  # fmt: skip
        outcomes = await end_many(self.tx, group, entries)
        answer = response_to(req, R.SUCCESS)
        answer.body = encode_results(outcomes)
        return answer

    async def resume_check(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """AdminBrokerProcessor.resumeCheckHalfMessage: the record behind ``msgId`` (an
        offsetMsgId) goes back to the half queue with TRANSACTION_CHECK_TIMES=0."""
        try:
            _host, offset = parse_offset_msg_id(req.ext_fields.get("msgId", ""))
        except MessageDecodeError:
            offset = -1
        if offset < 0 or not await self.tx.resume(offset):
            return response_to(
                req, R.SYSTEM_ERROR, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
            )
        return response_to(req, R.SUCCESS)
