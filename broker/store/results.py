"""Store outcomes: PutStatus and GetStatus, named as in RocketMQ (seed 003, protocol.md 5.1,
5.2), and the result tuples the broker maps to response codes."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Final, NamedTuple, TypeAlias

from aiorocketmq.broker.store.props import RecordFilter

# a property filter: takes a stored message's properties as stored (UTF-8 name\x01value\x02
# items, broker.store.props), says whether to serve it; a RecordFilter reads them in place
RecordMatch: TypeAlias = Callable[[bytes], bool] | RecordFilter


class PutStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    # controller mode (5.x): fewer than minInSyncReplicas in the SyncStateSet; nothing written
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"


# refusals that depend on the message alone (its topic, size or properties): the same message
# is refused again however often it is tried, so a background loop re-storing it must set it
# aside rather than wait for it (broker/schedule.py, broker/txcheck.py)
NEVER_STORED: Final = frozenset({PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED})


class GetStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutResult(NamedTuple):
    status: PutStatus
    phys_offset: int = -1  # commitlog offset of the first record; -1 when nothing was stored
    queue_offset: int = -1  # queue offset of the first record
    msg_ids: list[str] = []  # offsetMsgIds, one per stored record  # noqa: RUF012
    store_timestamp: int = 0
    wrote_bytes: int = 0


class GetResult(NamedTuple):
    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""  # the raw stored records found, back to back, exactly as stored
    sizes: list[int] = []  # the size of each of them  # noqa: RUF012
    suggest_slave: bool = False

    @property
    def messages(self) -> list[bytes]:
        """The records one by one (copies: the pull answer sends ``body`` as it is)."""
        out, at, body = [], 0, self.body
        for size in self.sizes:
            out.append(body[at : at + size])
            at += size
        return out
