"""HalfOps: which half messages have an op message (are committed, rolled back or given up),
as one bit per RMQ_SYS_TRANS_HALF_TOPIC queue offset. Pure state, no I/O.

Java's broker answers "has this half an op?" only inside a check round, by reading the op
queue (TransactionalMessageServiceImpl.fillOpRemoveMap), so a second END_TRANSACTION for the
same half commits it twice. We keep the answer in memory, rebuilt from the op queue at
start, so ENDs and the check rounds can ask it at once (protocol.md 12.4: "check for an op
first"). A bit costs nothing next to the half message it stands for; the bits below
``low`` -- the check rounds' position a few rounds back -- are dropped.

A half message the check round re-appends (a *copy*, checked again later) names its chain's
first record in TRAN_PREPARED_QUEUE_OFFSET (Java sets it on immunity copies only); a chain
is over once its first record has an op, whichever record the END named.
"""

from __future__ import annotations

from collections import deque

from aiorocketmq.remoting.protocol.message import MessageExt, Prop


def chain_root(half: MessageExt) -> int:
    """The queue offset of the first record of ``half``'s chain (itself unless a copy)."""
    text = half.properties.get(Prop.TRAN_PREPARED_QUEUE_OFFSET)
    if text is not None:
        try:
            root = int(text)
        except ValueError:
            return half.queue_offset
        if 0 <= root <= half.queue_offset:
            return root
    return half.queue_offset


class HalfOps:
    """Bits for half queue offsets ``low`` and up; ``keep_rounds`` check rounds' worth."""

    def __init__(self, low: int = 0, *, keep_rounds: int = 17) -> None:
        self.low = low
        self._bits = bytearray()
        self._bases: deque[int] = deque(maxlen=keep_rounds)

    def __contains__(self, offset: int) -> bool:
        if offset < self.low:
            return False
        i = offset - self.low
        byte = i >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (i & 7)))

    def add(self, offset: int) -> None:
        if offset < self.low:
            return
        i = offset - self.low
        byte = i >> 3
        if byte >= len(self._bits):
            self._bits.extend(bytes(byte + 1 - len(self._bits)))
        self._bits[byte] |= 1 << (i & 7)

    def ended(self, half: MessageExt) -> bool:
        """Whether ``half``, or the chain it belongs to, has an op."""
        return half.queue_offset in self or chain_root(half) in self

    def round_done(self, base: int) -> None:
        """A check round passed everything below ``base``: drop the bits older than the
        base of ``keep_rounds`` rounds ago (a chain lives at most transactionCheckMax
        rounds, so no END or copy still needs them)."""
        self._bases.append(base)
        if len(self._bases) == self._bases.maxlen:
            self._drop_below(self._bases[0])

    def _drop_below(self, low: int) -> None:
        whole = (low - self.low) >> 3  # keep byte alignment: drop whole bytes only
        if whole > 0:
            del self._bits[:whole]
            self.low += whole << 3

    @property
    def size(self) -> int:
        """Bytes held (tests and the benchmark report it)."""
        return len(self._bits)
