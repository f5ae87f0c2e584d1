"""remoting/protocol/bigendian.py: the compiled byte reads give what ``struct`` gives for
big-endian (network order) signed and unsigned integers, at any place in the bytes."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol.bigendian import int32_at, int64_at, uint32_at


@given(st.binary(min_size=8, max_size=40), st.data())
def test_reads_are_structs_big_endian(data: bytes, draw: st.DataObject) -> None:
    at = draw.draw(st.integers(0, len(data) - 8))
    assert uint32_at(data, at) == struct.unpack_from(">I", data, at)[0]
    assert int32_at(data, at) == struct.unpack_from(">i", data, at)[0]
    assert int64_at(data, at) == struct.unpack_from(">q", data, at)[0]


def test_the_extremes() -> None:
    for value in (0, 1, -1, 2**63 - 1, -(2**63), 2**32, -(2**32), 2**31, -(2**31) - 1):
        assert int64_at(b"\x00" + struct.pack(">q", value), 1) == value
    for value in (0, 1, -1, 2**31 - 1, -(2**31)):
        assert int32_at(struct.pack(">i", value), 0) == value
    assert uint32_at(b"\xff\xff\xff\xff", 0) == 2**32 - 1
