"""What a send's put status answers: response code and remark (SendMessageProcessor
.handlePutMessageResult), and which statuses count as stored."""

from __future__ import annotations

from typing import Final

from aiorocketmq.broker.store import PutStatus
from aiorocketmq.remoting.protocol.codes import ResponseCode

_ILLEGAL: Final = (  # {body}: maxMessageSize in bytes
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit {body}B, msg properties length limit 32KB."
)
# put status -> (response code, remark); the first four count as stored
PUT_RESULT: Final[dict[PutStatus, tuple[ResponseCode, str | None]]] = {
    PutStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutStatus.CREATE_MAPPED_FILE_FAILED: (
        ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    PutStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    PutStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    PutStatus.SERVICE_NOT_AVAILABLE: (  # {disk}: SendMessageProcessor.diskUtil()
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: the "
        "broker's disk is full [{disk}], messages are put to the slave, message store has been "
        "shut down, etc."),
    PutStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
    PutStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    # compat: 5.x SendMessageProcessor.handlePutMessageResult -- nothing was stored
    PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: (
        ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough"),
}  # fmt: skip
STORED: Final = frozenset(s for s, (code, _) in PUT_RESULT.items() if code in (0, 10, 11, 12))
