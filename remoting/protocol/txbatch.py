"""Transactional batches: ours, beyond 4.9.8 (issue 34, for the Spark sink's exactlyOnce;
compatibility.md "Transactional batches"). Apache clients never send these, and an Apache
broker refuses both, so a client of ours falls back to one request per half and per END.

- **Half messages in one SEND_BATCH_MESSAGE (320)**: the header's sysFlag PREPARED and the
  ext field ``halfBatch=true``. 4.9.8's CommitLog.putMessages refuses a batch whose sysFlag
  has a transaction type (MESSAGE_ILLEGAL, 13): so do we without the field, or with the
  broker's ``enableBatchTransaction=false``. With it, every message of the body is a half
  (TRAN_MSG and PGROUP in its properties), parked in RMQ_SYS_TRANS_HALF_TOPIC in one append:
  the answer's ``msgId`` lists their offsetMsgIds, comma-separated, and ``queueOffset`` is the
  first one's half-queue offset (the others follow it, one each). Each half is still ended by
  its own offsets.
- **A batch parked as one half** (``halfBatch=record``): the same request, but the body is
  kept as it came, in one half message whose properties are the request's (TRAN_MSG, PGROUP,
  the properties the messages share, the record's UNIQ_KEY) with ``HALF_RECORD`` = the
  message count. It is answered as one send (its offsetMsgId, its half-queue offset) and
  ended, checked back and rolled back as one half; its COMMIT appends every message of the
  body to the real queue, in order, as a batch send stores them. One record and one END a
  batch instead of one a message: what makes the Spark sink's exactlyOnce cheap.
- **END_TRANSACTION_BATCH (30037)**: many ENDs of one producer group (ext ``producerGroup``)
  in one request; the body a JSON array of ``[commitLogOffset, tranStateTableOffset, msgId,
  commitOrRollback]`` (at most ``MAX_END_ENTRIES``), the answer's body a JSON array of
  ``[code, remark]``, one per entry, in order. The committed messages are appended in the
  entries' order, in one append with one op message naming every ended half (5.x's comma
  form). The code is in no Apache range (4.9.8's and 5.x's RequestCode end at 3543 below
  the 200,000s; the binary header holds a 16-bit code); a broker without it answers
  REQUEST_CODE_NOT_SUPPORTED (3).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, NamedTuple

from aiorocketmq.remoting.errors import MessageDecodeError

END_TRANSACTION_BATCH: Final = 30037  # ours: RequestCode has no such number in 4.9.8 or 5.x
HALF_BATCH_FIELD: Final = "halfBatch"  # ext field of a SEND_BATCH_MESSAGE of half messages
HALF_RECORD_MODE: Final = "record"  # halfBatch: the batch parked as one half
HALF_BATCH_MODES: Final = frozenset({"true", HALF_RECORD_MODE})  # "true": a half a message
GROUP_FIELD: Final = "producerGroup"  # ext field of END_TRANSACTION_BATCH
MAX_END_ENTRIES: Final = 4096  # entries per END_TRANSACTION_BATCH; more: the request refused
MAX_HALVES: Final = 4096  # half messages per SEND_BATCH_MESSAGE


class EndEntry(NamedTuple):
    """One END of a batch: the half's offsets (as END_TRANSACTION's header), its msgId."""

    commit_log_offset: int
    tran_state_table_offset: int
    msg_id: str
    commit_or_rollback: int


def encode_entries(entries: Sequence[EndEntry]) -> bytes:
    return json.dumps([list(e) for e in entries], separators=(",", ":")).encode()


def decode_entries(body: bytes) -> list[EndEntry | None]:
    """The entries; None for one that is not ``[int, int, str, int]`` (answered on its own).
    Raises MessageDecodeError when the body is not a JSON array."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MessageDecodeError(f"END_TRANSACTION_BATCH body is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise MessageDecodeError("END_TRANSACTION_BATCH body is not a JSON array")
    return [_entry(item) for item in raw]


def _entry(item: object) -> EndEntry | None:
    if not isinstance(item, list) or len(item) != 4:
        return None
    clo, tsto, msg_id, kind = item
    ints = all(type(v) is int for v in (clo, tsto, kind))
    return EndEntry(clo, tsto, msg_id, kind) if ints and isinstance(msg_id, str) else None


def encode_results(results: Sequence[tuple[int, str | None]]) -> bytes:
    return json.dumps([list(r) for r in results], separators=(",", ":")).encode()


def decode_results(body: bytes, count: int) -> list[tuple[int, str | None]]:
    """The per-entry answers; raises MessageDecodeError unless there are ``count`` of them."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MessageDecodeError(f"END_TRANSACTION_BATCH answer is not JSON: {exc}") from exc
    if not isinstance(raw, list) or len(raw) != count:
        raise MessageDecodeError(f"END_TRANSACTION_BATCH answer does not hold {count} results")
    out: list[tuple[int, str | None]] = []
    for item in raw:
        if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int:
            raise MessageDecodeError(f"END_TRANSACTION_BATCH result malformed: {item!r}")
        out.append((item[0], item[1] if isinstance(item[1], str) else None))
    return out
