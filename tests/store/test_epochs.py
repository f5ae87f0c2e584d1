"""The epoch file (5.x's epochFileCheckpoint, EpochFileCache over CheckpointFile): its text
format, the consistent point two replicas agree on, durable appends and suffix cuts, and a
store that drops at start the entries its log does not reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiorocketmq.broker.store.epochs import (
    FILE_NAME,
    EpochEntry,
    EpochFile,
    EpochFileError,
    consistent_point,
    decode,
    encode,
)
from tests.store.conftest import StoreFactory, message

E = EpochEntry


def test_the_file_is_5x_checkpoint_text() -> None:
    """CheckpointFile's javadoc example, byte for byte: count, crc32 & 0x7FFFFFFF of the
    entry lines, ``epoch-startOffset`` lines."""
    text = b"2\n773307083\n7-7000\n8-8000\n"
    assert encode([E(7, 7000), E(8, 8000)]) == text
    assert decode(text) == [E(7, 7000), E(8, 8000)]
    assert decode(b"0\n0\n") == [] == decode(encode([]))
    assert decode(b"1\n0\n3-5\n") == [E(3, 5)]  # crc 0: not checked (NOT_CHECK_CRC_MAGIC_CODE)


@pytest.mark.parametrize(
    "bad", [b"2\n773307083\n7-7000\n", b"2\n1\n7-7000\n8-8000\n", b"x\n0\n", b"1\n0\n1-x\n"]
)
def test_a_damaged_file_is_refused(bad: bytes) -> None:
    """A count or crc that does not match, or a line that is no number, is not guessed at."""
    with pytest.raises(EpochFileError):
        decode(bad)


def test_consistent_point_as_5x_computes_it() -> None:
    """EpochFileCacheTest's four samples: the newest epoch both hold with one start offset,
    ended at the lesser of the two ends; -1 when none agrees."""
    mine = [E(1, 100), E(2, 300), E(3, 500)]
    assert consistent_point(mine, 2**62, [E(1, 100), E(2, 300), E(3, 450)], 2**62) == 450
    assert consistent_point(mine, 700, [E(1, 100), E(2, 300), E(3, 500)], 600) == 600
    assert consistent_point(mine, 700, [E(1, 200), E(2, 500)], 900) == -1
    theirs = [E(1, 100), E(2, 300), E(3, 500), E(4, 800)]
    assert consistent_point(theirs, 900, mine, 700) == 700
    # an old master that took writes of its own at epoch 1 after its slave was promoted
    assert consistent_point([E(1, 0)], 5000, [E(1, 0), E(2, 3000)], 9000) == 3000


def test_appends_and_cuts_are_durable(tmp_path: Path) -> None:
    """appendEntry refuses an epoch or start offset going back; an epoch that wrote nothing
    is superseded; truncateSuffixByOffset drops entries from an offset on; each change is
    on disk when the call returns."""
    epochs = EpochFile(tmp_path)
    epochs.load()
    assert (epochs.last_epoch, epochs.entries) == (-1, [])
    epochs.append(E(1, 0))
    epochs.append(E(2, 400))
    with pytest.raises(ValueError):
        epochs.append(E(2, 500))
    with pytest.raises(ValueError):
        epochs.append(E(3, 300))
    epochs.append(E(3, 400))  # epoch 2 wrote nothing
    again = EpochFile(tmp_path)
    again.load()
    assert again.entries == [E(1, 0), E(3, 400)]
    again.truncate_suffix_by_offset(400)
    third = EpochFile(tmp_path)
    third.load()
    assert third.entries == [E(1, 0)] and third.last_epoch == 1


async def test_a_store_drops_entries_past_its_log_at_start(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """An entry starting past the end of the log (a crash between a cut and its epoch file)
    goes at the next start; one starting at the end (a new master that wrote nothing yet)
    stays."""
    store = await open_store()
    for i in range(20):
        await store.put(message(body=b"m%d" % i))
    end = store.max_phys_offset
    store.epochs.append(E(1, 0))
    store.epochs.append(E(2, end))
    await store.shutdown()
    (tmp_path / FILE_NAME).write_bytes(encode([E(1, 0), E(2, end), E(3, end + 100)]))
    store = await open_store()
    assert store.epochs.entries == [E(1, 0), E(2, end)]
