"""The HA stream's framing (protocol.md 12.8): slave reports are bare int64s of which the
master uses the last complete one; master frames are ``int64 offset | int32 size | bytes``,
however TCP chunks them; a bad length is refused."""

from __future__ import annotations

import random

import pytest

from aiorocketmq.broker.ha_frames import (
    EPOCHS_HEADER,
    HAProtocolError,
    TransferParser,
    decode_epoch_hello,
    decode_epochs,
    decode_epochs_header,
    encode_epoch_hello,
    encode_epochs,
    encode_report,
    encode_transfer,
    take_last_report,
)
from aiorocketmq.broker.store.epochs import EpochEntry


def test_the_last_complete_report_counts() -> None:
    buf = bytearray(encode_report(5) + encode_report(70_000_000_000) + encode_report(9)[:3])
    assert take_last_report(buf) == 70_000_000_000
    assert bytes(buf) == encode_report(9)[:3]  # the partial value waits for its rest
    assert take_last_report(buf) is None
    buf += encode_report(9)[3:]
    assert take_last_report(buf) == 9 and not buf


def test_frames_survive_any_chunking() -> None:
    rng = random.Random(7)
    frames = [(rng.randrange(1 << 40), rng.randbytes(rng.randrange(0, 5000))) for _ in range(200)]
    stream = b"".join(encode_transfer(phys, data) for phys, data in frames)
    parser, got, pos = TransferParser(), [], 0
    while pos < len(stream):
        step = rng.randrange(1, 9000)
        got += parser.feed(stream[pos : pos + step])
        pos += step
    assert got == frames and parser.pending == 0


@pytest.mark.parametrize("size", [-1, 4 * 1024 * 1024 + 1])
def test_a_bad_length_is_refused(size: int) -> None:
    frame = (0).to_bytes(8, "big") + size.to_bytes(4, "big", signed=True)
    with pytest.raises(HAProtocolError):
        TransferParser().feed(frame)


def test_the_epoch_handshake_frames() -> None:
    """Controller mode (ha_frames): the slave's epoch hello is ``0xFF 'HAE' | int64
    brokerId``; the master's answer is ``int32 bodySize | int64 maxOffset | int32 lastEpoch``
    and 12-byte ``int32 epoch | int64 startOffset`` entries (5.x AutoSwitchHAConnection's
    handshake body); a bad size or magic is refused."""
    hello = encode_epoch_hello(3)
    assert hello == b"\xffHAE" + (3).to_bytes(8, "big")
    assert decode_epoch_hello(hello) == 3
    with pytest.raises(HAProtocolError):
        decode_epoch_hello(b"\xffHA1" + bytes(8))
    entries = [EpochEntry(1, 0), EpochEntry(2, 4096)]
    frame = encode_epochs(9000, entries)
    assert frame[:EPOCHS_HEADER] == (24).to_bytes(4, "big") + (9000).to_bytes(8, "big") + (
        2
    ).to_bytes(4, "big")
    size, end = decode_epochs_header(frame[:EPOCHS_HEADER])
    assert (size, end) == (24, 9000)
    assert decode_epochs(frame[EPOCHS_HEADER : EPOCHS_HEADER + size]) == entries
    assert encode_epochs(0, [])[:EPOCHS_HEADER] == bytes(4) + bytes(8) + b"\xff" * 4
    for bad in (13, -12, 12 * 1001):
        with pytest.raises(HAProtocolError):
            decode_epochs_header(bad.to_bytes(4, "big", signed=True) + bytes(12))
