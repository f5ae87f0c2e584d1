"""Spark filters a batch read pushes to the brokers (issue 34 item 2; pyspark >= 4.1
``DataSourceReader.pushFilters``, on with ``spark.sql.python.filterPushdown.enabled``).

- ``tags = 'A'`` / ``tags IN ('A', 'B')``: a TAG subscription, so the brokers send only those
  tags (matched on hash codes, then exactly on the executor, as every tag subscription here).
  Several such filters (AND) and a TAG ``subExpression`` intersect. Not pushed, but left to
  Spark, when the subscription is SQL92 (one pull carries one expression) or a value cannot
  be a tag of a subscription (blank, padded, ``*``, containing ``||``).
- ``storeTimestamp`` ``>``, ``>=``, ``=``, ``<``, ``<=``: each queue starts at the first
  message stored at or after the lower bound and ends before the first one at or after the
  upper (SEARCH_OFFSET_BY_TIMESTAMP). Store times are the broker's clock and a queue's are in
  order only as far as that clock is, so these filters are also returned to Spark, which
  checks every row (Spark's "partially pushed" filters): the pushdown only saves the reading.
- ``keys`` is not pushed: a pull has no key filter (a key lookup is the index's
  QUERY_MESSAGE, which answers a bounded number of messages, not a queue range).
Everything else is returned to Spark as is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class Pushed:
    """What the pushed filters ask of the brokers. ``tags``: None reads every tag the
    subscription does; a set (maybe empty: no row matches) keeps only those.
    ``from_ms`` / ``until_ms``: only messages stored at or after / before these times."""

    tags: frozenset[str] | None = None
    from_ms: int | None = None
    until_ms: int | None = None


def push(
    filters: Iterable[Filter], pushed: Pushed, *, tags_allowed: bool
) -> tuple[Pushed, list[Filter]]:
    """The filters folded into ``pushed``, and those Spark must still evaluate (by
    reference, as given). ``tags_allowed``: False when the subscription is SQL92."""
    left: list[Filter] = []
    for f in filters:
        column = f.attribute if isinstance(f, _BINARY) else None
        if column == ("tags",) and tags_allowed and (wanted := _tag_values(f)) is not None:
            have = pushed.tags
            pushed = Pushed(wanted if have is None else have & wanted, pushed.from_ms,
                            pushed.until_ms)  # fmt: skip
            continue
        if column == ("storeTimestamp",) and (bounds := _time_bounds(f)) is not None:
            low, high = bounds
            if low is not None:
                low = low if pushed.from_ms is None else max(low, pushed.from_ms)
            if high is not None:
                high = high if pushed.until_ms is None else min(high, pushed.until_ms)
            pushed = Pushed(pushed.tags, pushed.from_ms if low is None else low,
                            pushed.until_ms if high is None else high)  # fmt: skip
        left.append(f)
    return pushed, left


_BINARY = (EqualTo, In, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)


def _tag_values(f: Filter) -> frozenset[str] | None:
    values = (f.value,) if isinstance(f, EqualTo) else f.value if isinstance(f, In) else None
    if values is None or not all(isinstance(v, str) and _is_tag(v) for v in values):
        return None
    return frozenset(values)


def _is_tag(v: str) -> bool:
    """A value a TAG subscription can name: SubscriptionData splits on ``||`` and trims."""
    return bool(v) and v == v.strip() and v != "*" and "||" not in v


def _time_bounds(f: Filter) -> tuple[int | None, int | None] | None:
    """``[low, high)`` in whole ms of the rows ``f`` keeps (store times are whole ms; the
    column holds them as µs): None when the value is not a time with a zone."""
    us = _micros(getattr(f, "value", None))
    if us is None:
        return None
    floor_ms, rest = divmod(us, 1000)
    ceil_ms = floor_ms + (rest > 0)
    if isinstance(f, GreaterThan):  # ms * 1000 > us
        return floor_ms + 1, None
    if isinstance(f, GreaterThanOrEqual):
        return ceil_ms, None
    if isinstance(f, LessThan):
        return None, ceil_ms
    if isinstance(f, LessThanOrEqual):
        return None, floor_ms + 1
    if isinstance(f, EqualTo):
        return (ceil_ms, floor_ms + 1) if rest == 0 else (ceil_ms, ceil_ms)
    return None


def _micros(value: object) -> int | None:
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return None
    return (value - _EPOCH) // _US
