"""Compiled expressions (FilterFactory.get(type).compile), shared: a consumer that sends its
subscription with every pull (ali-ons, the lite pull consumer) compiles it once, not per
pull, and every consumer of one expression shares its memo (broker.filter.memo). Failures
are kept too, so a hostile expression repeated costs one compile."""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from aiorocketmq.broker.filter.memo import Memo
from aiorocketmq.remoting.protocol.sql92 import SelectorError, compile_selector

SQL92: Final = "SQL92"
CACHED_ENTRIES: Final = 256
CACHED_CHARS: Final = 16 * 1024  # longer expressions are compiled each time, never kept


class FilterError(Exception):
    """An expression that cannot filter; ``str()`` is the remark for the client."""


def is_tag_type(expression_type: str | None) -> bool:
    """ExpressionType.isTagType: null, empty or TAG."""
    return not expression_type or expression_type == "TAG"


class Compiled:
    def __init__(self, entries: int = CACHED_ENTRIES) -> None:
        self.entries = entries
        self._cache: OrderedDict[tuple[str, str], Memo | str] = OrderedDict()

    def get(self, expression_type: str, expression: str) -> Memo:
        """The compiled ``expression`` (``.matches(properties)``); FilterError when it does
        not compile or its type is not one the broker evaluates."""
        key = (expression_type, expression)
        found = self._cache.get(key)
        if found is None:
            found = _compile(expression_type, expression)
            if len(expression) <= CACHED_CHARS:
                self._cache[key] = found
                if len(self._cache) > self.entries:
                    self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        if isinstance(found, str):
            raise FilterError(found)
        return found


def _compile(expression_type: str, expression: str) -> Memo | str:
    if expression_type.upper() != SQL92:
        # compat: FilterFactory knows SQL92 only; 4.9.8 then meets a NullPointerException
        return f"The broker does not support consumer to filter message by {expression_type}"
    try:
        return Memo(compile_selector(expression))
    except SelectorError as exc:
        return str(exc)
