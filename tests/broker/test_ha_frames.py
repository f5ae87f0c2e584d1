"""The HA stream's framing (protocol.md 12.8): slave reports are bare int64s of which the
master uses the last complete one; master frames are ``int64 offset | int32 size | bytes``,
however TCP chunks them; a bad length is refused."""

from __future__ import annotations

import random

import pytest

from aiorocketmq.broker.ha_frames import (
    HAProtocolError,
    TransferParser,
    encode_report,
    encode_transfer,
    take_last_report,
)


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
