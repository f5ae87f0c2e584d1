"""Properties: a stored record's properties over their text, looked up one at a time (the
mapping a property filter evaluates). Not compiled: mypyc compiles no subclass of Mapping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class Properties(Mapping[str, str]):
    """A record's properties over their text (``name\x01value\x02`` items): ``get`` finds
    one item without splitting the others; the same answers as ``parse_properties``'s dict
    (a name found twice: the last one, as Java's HashMap keeps)."""

    __slots__ = ("_items", "_text")

    def __init__(self, text: str) -> None:
        self._text = "\x02" + text  # every item now starts after a \x02
        self._items: dict[str, str] | None = None

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        text = self._text
        key = "\x02" + name + "\x01"
        at = text.rfind(key)
        if at < 0 or not name:
            return default
        start = at + len(key)
        stop = text.find("\x02", start)
        value = text[start:stop] if stop >= 0 else text[start:]
        if not value:  # Java leaves an item with no value out; an earlier one stands
            return self._split().get(name, default)
        return value

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def _split(self) -> dict[str, str]:
        if self._items is None:
            self._items = parse_properties(self._text[1:])
        return self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._split())

    def __len__(self) -> int:
        return len(self._split())


def parse_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: ``name\\x01value`` items split at their
    first ``\\x01``; an item with an empty name or value is skipped."""
    out: dict[str, str] = {}
    for item in text.split("\x02"):
        name, _sep, value = item.partition("\x01")
        if name and value:
            out[name] = value
    return out
