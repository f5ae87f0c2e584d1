"""FrameDecoder's buffer (remoting/protocol/frame.py): kept across a stream of big frames
that arrive in pieces (a bytearray trimmed after each frame shrank to the next frame's first
bytes and grew again in fresh pages: 242 us for a 256 KiB frame in 64 KiB pieces, against
14 us in one piece; ``benchmarks/frame_decode.py``), never more than 1.5 times what has
arrived, and let go when no frame is pending if it is over the decoder's ``keep``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import CLIENT_KEEP, IDLE_KEEP, FrameDecoder, encode


def frame(size: int, opaque: int = 0) -> bytes:
    cmd = RemotingCommand(code=0, opaque=opaque, ext_fields={"a": "b"})
    cmd.body = bytes([opaque % 251]) * size
    head, body = encode(cmd)
    return head + body


def pieces(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def test_a_stream_of_big_frames_in_pieces_keeps_one_buffer() -> None:
    stream = b"".join(frame(256 * 1024, i) for i in range(12))
    decoder = FrameDecoder(keep=CLIENT_KEEP)
    seen, got = set(), []
    for i, chunk in enumerate(pieces(stream, 64 * 1024)):
        got += decoder.feed(chunk)
        if i >= 8:  # past the first two frames: the same buffer, the same allocation
            seen.add((id(decoder._buf), decoder._buf.__alloc__()))
    assert [c.opaque for c in got] == list(range(12)) and decoder.buffered == 0
    # grown for the first frames, then reused (trimmed, its allocation changed each frame)
    assert len(seen) == 1


def test_a_declared_length_alone_takes_no_memory() -> None:
    """A peer that declares 16 MiB and sends 8 bytes makes the decoder hold about 8 bytes,
    and 1.5 times what it sends after."""
    decoder = FrameDecoder()
    head = frame(16 * 1024 * 1024 - 100)[:8]
    assert decoder.feed(head) == [] and decoder.buffered == 8
    assert len(decoder._buf) <= 12
    for _ in range(10):
        decoder.feed(bytes(100_000))
        assert len(decoder._buf) <= 1.5 * decoder.buffered + 1


def test_the_buffer_is_let_go_when_no_frame_is_pending_over_keep() -> None:
    big = frame(300 * 1024)
    server, client = FrameDecoder(), FrameDecoder(keep=CLIENT_KEEP)
    for decoder in (server, client):
        for chunk in pieces(big, 64 * 1024):
            decoder.feed(chunk)
        assert decoder.buffered == 0
    assert len(server._buf) <= IDLE_KEEP  # a server's connections keep nothing idle
    assert len(client._buf) >= 300 * 1024  # a client's next answer reuses it


@settings(max_examples=60)
@given(
    st.lists(st.integers(0, 200_000), min_size=1, max_size=6),
    st.sampled_from([IDLE_KEEP, 64 * 1024, CLIENT_KEEP]),
    st.lists(st.integers(1, 150_000), min_size=1, max_size=8),
)
def test_any_pieces_any_keep_give_every_frame(sizes: list[int], keep: int, cuts: list[int]) -> None:
    """Whatever the pieces (cycled sizes) and ``keep``, every frame comes out whole, in
    order, and nothing stays buffered at the end."""
    stream = b"".join(frame(size, i) for i, size in enumerate(sizes))
    decoder, got, at, k = FrameDecoder(keep=keep), [], 0, 0
    while at < len(stream):
        step = cuts[k % len(cuts)]
        got += decoder.feed(stream[at : at + step])
        at, k = at + step, k + 1
        assert decoder.buffered <= at
    assert [(c.opaque, len(c.body)) for c in got] == list(enumerate(sizes))
    assert all(c.body == bytes([c.opaque % 251]) * len(c.body) for c in got)
    assert decoder.buffered == 0
