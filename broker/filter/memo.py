"""Memo: a selector's answers remembered by the values of the properties it read.

A selector's answer depends only on the values ``get`` returns for the properties it asks
for, and which property it asks for next depends only on the values it was given so far. So
its evaluations form a decision tree: a node names the property asked for, its branches are
the values seen, its leaves the answers. Walking that tree for a message costs one lookup
in the stored properties' bytes per property the selector reads (nothing is decoded), where
evaluating costs the whole expression, conversions included; an unseen value evaluates once,
recorded, and grows the tree.

The tree is bounded (``SIZE`` nodes and answers, values of at most ``VALUE_BYTES``: with
broker.filter.compiled's 256 expressions, a few tens of MiB at worst), and a selector whose
messages keep bringing values not seen before (an amount, an id) stops being memoised:
every message is then evaluated, as without the memo.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import i64

from aiorocketmq.broker.filter.recording import Recording
from aiorocketmq.broker.store.properties import Properties
from aiorocketmq.broker.store.props import RecordFilter, Slot, find_values, first_bytes
from aiorocketmq.remoting.protocol.sql92 import Selector

SIZE: Final = 1024
VALUE_BYTES: Final = 64
TRIAL: Final = 2048  # evaluations before deciding whether the memo pays


class Node:
    """A property the selector asks for, and what comes next for each value it had."""

    __slots__ = ("branches", "name", "slot")

    def __init__(self, name: str, slot: Slot) -> None:
        self.name = name
        self.slot = slot  # where a message's value of it lies (find_values)
        self.branches: dict[bytes | None, Node | bool] = {}


class Memo(RecordFilter):
    """``matches(raw)`` answers as ``selector.matches`` of the properties text ``raw`` (as
    stored: ``name\\x01value\\x02`` items), remembering by property values; ``accepts``
    the same of the text where it lies."""

    def __init__(self, selector: Selector) -> None:
        self.selector = selector
        self.root: Node | None = None
        self.constant: bool | None = None  # a selector that reads no property
        self.size = 0  # nodes and answers
        self.hits = 0
        self.misses = 0
        self.off = False  # not worth it: every message is evaluated
        self.slots: list[Slot] = []  # one per property the tree names
        self._slot_of: dict[str, Slot] = {}
        self._firsts = first_bytes([])
        # every property the selector names, for an evaluation without the tree (_plain)
        self._names = selector.names
        self._all = [Slot(name.encode()) for name in self._names]
        self._all_firsts = first_bytes(self._all)

    def matches(self, raw: bytes) -> bool:
        return self.accepts(raw, 0, len(raw))

    def accepts(self, buf: bytes, start: i64, end: i64) -> bool:
        if self.constant is not None:
            return self.constant
        node = self.root
        if node is not None and not self.off:
            find_values(buf, start, end, self.slots, self._firsts)  # every value the walk needs
            while True:
                slot = node.slot
                value = buf[slot.start : slot.stop] if slot.start >= 0 else None
                found = node.branches.get(value)
                if found is None:
                    break
                if isinstance(found, bool):
                    self.hits += 1
                    return found
                node = found
        return self._evaluate(buf, start, end)

    def _node(self, name: str) -> Node:
        slot = self._slot_of.get(name)
        if slot is None:
            slot = self._slot_of[name] = Slot(name.encode())
            self.slots.append(slot)
            self._firsts = first_bytes(self.slots)
        return Node(name, slot)

    def _evaluate(self, buf: bytes, start: i64, end: i64) -> bool:
        if self.off:
            return self._plain(buf, start, end)
        self.misses += 1
        if self.hits + self.misses >= TRIAL and self.misses * 4 > self.hits:
            self.off, self.root = True, None  # mostly unseen values: stop remembering
            return self._plain(buf, start, end)
        if self.size >= SIZE:  # the tree is full: nothing to record
            return self._plain(buf, start, end)
        raw = buf[start:end]
        recording = Recording(Properties(raw.decode("utf-8", "replace")), raw)
        answer = self.selector.matches(recording)
        self._remember(recording.asked, answer)
        return answer

    def _plain(self, buf: bytes, start: i64, end: i64) -> bool:
        """The selector evaluated on the values of the properties it names, found in one walk
        and each decoded alone (the same strings as decoding the whole text: the items split
        at ASCII bytes, which UTF-8 never uses inside a character)."""
        slots = self._all
        find_values(buf, start, end, slots, self._all_firsts)
        props: dict[str, str] = {}
        for i, slot in enumerate(slots):
            if slot.start >= 0:
                props[self._names[i]] = buf[slot.start : slot.stop].decode("utf-8", "replace")
        return self.selector.matches(props)

    def _remember(self, asked: list[tuple[str, bytes | None]], answer: bool) -> None:
        for _name, value in asked:
            if value is not None and len(value) > VALUE_BYTES:
                return
        if not asked:
            self.constant = answer
            return
        if self.root is None:
            self.root = self._node(asked[0][0])
            self.size += 1
        node: Node | bool = self.root
        for i, (name, value) in enumerate(asked):
            if not isinstance(node, Node) or node.name != name:
                self.off, self.root = True, None  # not a function of its values: never
                return
            nxt = node.branches.get(value)
            if nxt is None:
                nxt = self._node(asked[i + 1][0]) if i + 1 < len(asked) else answer
                node.branches[value] = nxt
                self.size += 1
            node = nxt
