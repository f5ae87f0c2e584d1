"""Recording: a message's properties for a selector, noting which it asked for (broker.filter
.memo's evaluations). Not compiled: mypyc compiles no subclass of Mapping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from aiorocketmq.broker.store.properties import Properties
from aiorocketmq.broker.store.props import find_property


class Recording(Mapping[str, str]):
    """``props`` (decoded from ``raw``), each ``get`` noted with the value's stored bytes."""

    __slots__ = ("asked", "props", "raw")

    def __init__(self, props: Properties, raw: bytes) -> None:
        self.props, self.raw = props, raw
        self.asked: list[tuple[str, bytes | None]] = []

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.asked.append((name, find_property(self.raw, b"\x02" + name.encode() + b"\x01")))
        value = self.props.get(name)
        return default if value is None else value

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.props)

    def __len__(self) -> int:
        return len(self.props)
