"""Spark filters a batch read pushes to the brokers (issue 34 item 2; pyspark >= 4.1
``DataSourceReader.pushFilters``, on with ``spark.sql.python.filterPushdown.enabled``).

- ``tags = 'A'`` / ``tags IN ('A', 'B')``: the tags the brokers send. Several such filters
  (AND) and a TAG ``subExpression`` intersect. Alone, they become a TAG subscription (matched
  on hash codes, then exactly on the executor, as every tag subscription here); with an SQL92
  subscription or pushed ``keys`` filters, ``TAGS IN ('A', 'B')`` in the pulls' SQL92
  expression. Left to Spark when a value cannot be a tag of a subscription (blank, padded,
  ``*``, containing ``||`` or a property separator).
- ``keys``: the column is the KEYS property (spark/rows.py), so these are SQL92 over it,
  AND-ed into the pulls' expression (the user's own SQL92 expression, pushed tags), which the
  brokers evaluate as 4.9.8's SelectorParser (a missing property is NULL, never equal, never
  unequal; strings compare exactly; ``'`` is written ``''``):
  ``keys = 'k'`` / ``keys <=> 'k'`` -> ``KEYS = 'k'``, ``keys IN (...)`` -> ``KEYS IN (...)``:
  exact (the brokers keep exactly Spark's rows), so not returned to Spark;
  ``keys IS NOT NULL``, ``NOT keys = 'k'`` (``KEYS <> 'k'``), ``NOT keys IN (...)``
  (``KEYS NOT IN (...)``): the brokers keep a superset of Spark's rows -- a KEYS value with a
  ``\\x01`` in it is a value to them, no property to the source's row (as
  ``decode_properties``) -- so they are returned too. ``keys IS NULL`` is not pushed: such a
  value would be dropped by the brokers and kept by Spark. A TAG subscription becomes SQL92
  only where every broker of the read takes SQL92 (spark/source.py ``PushingBatchReader``
  asks them; 4.9.8's default ``enablePropertyFilter=false`` refuses); else the ``keys``
  filters are left to Spark.
- ``storeTimestamp`` ``>``, ``>=``, ``=``, ``<``, ``<=``: each queue starts at the first
  message stored at or after the lower bound and ends before the first one at or after the
  upper (SEARCH_OFFSET_BY_TIMESTAMP). Store times are the broker's clock and a queue's are in
  order only as far as that clock is, so these filters are also returned to Spark, which
  checks every row (Spark's "partially pushed" filters): the pushdown only saves the reading.
Everything else is returned to Spark as is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class Pushed:
    """What the pushed filters ask of the brokers. ``tags``: None reads every tag the
    subscription does; a set (maybe empty: no row matches) keeps only those.
    ``from_ms`` / ``until_ms``: only messages stored at or after / before these times.
    ``keys``: SQL92 terms over KEYS, all of which a message must meet; ``keys_exact``: the
    filters among them that Spark is not asked to check again (returned to it when the terms
    cannot be sent: ``unpushed_keys``)."""

    tags: frozenset[str] | None = None
    from_ms: int | None = None
    until_ms: int | None = None
    keys: tuple[str, ...] = ()
    keys_exact: tuple[Filter, ...] = ()

    def unpushed_keys(self) -> Pushed:
        return replace(self, keys=(), keys_exact=())


def push(filters: Iterable[Filter], pushed: Pushed) -> tuple[Pushed, list[Filter]]:
    """The filters folded into ``pushed``, and those Spark must still evaluate (by
    reference, as given)."""
    left: list[Filter] = []
    for f in filters:
        column = f.attribute if isinstance(f, _BINARY) else None
        if column == ("tags",) and (wanted := _tag_values(f)) is not None:
            have = pushed.tags
            pushed = replace(pushed, tags=wanted if have is None else have & wanted)
            continue
        if column == ("storeTimestamp",) and (bounds := _time_bounds(f)) is not None:
            low, high = bounds
            if low is not None:
                low = low if pushed.from_ms is None else max(low, pushed.from_ms)
            if high is not None:
                high = high if pushed.until_ms is None else min(high, pushed.until_ms)
            pushed = replace(pushed, from_ms=pushed.from_ms if low is None else low,
                             until_ms=pushed.until_ms if high is None else high)  # fmt: skip
        elif (term := _keys_term(f)) is not None:
            sql, exact = term
            pushed = replace(pushed, keys=(*pushed.keys, sql))
            if exact:
                pushed = replace(pushed, keys_exact=(*pushed.keys_exact, f))
                continue
        left.append(f)
    return pushed, left


def sql92(pushed: Pushed, user: str | None, tags: frozenset[str] | None) -> str:
    """The pulls' SQL92 expression: the user's own (``user``), ``tags`` as ``TAGS IN`` and
    the ``keys`` terms, AND-ed ("TRUE" when there is nothing to ask)."""
    terms = [f"({user}\n)"] if user is not None else []  # (a line comment ends at \n)
    if tags is not None:
        terms.append(f"TAGS IN ({_literals(tags)})")
    terms += pushed.keys
    return " AND ".join(terms) or "TRUE"


_BINARY = (EqualTo, EqualNullSafe, In, GreaterThan, GreaterThanOrEqual, LessThan,
           LessThanOrEqual)  # fmt: skip


def _keys_term(f: Filter) -> tuple[str, bool] | None:
    """The SQL92 term of a filter on ``keys`` and whether it is exact, or None."""
    negated = isinstance(f, Not)
    inner = f.child if isinstance(f, Not) else f
    if isinstance(inner, IsNotNull):
        return ("KEYS IS NOT NULL", False) if inner.attribute == ("keys",) and not negated else None
    if not isinstance(inner, (EqualTo, EqualNullSafe, In)) or inner.attribute != ("keys",):
        return None
    values = inner.value if isinstance(inner, In) else (inner.value,)
    if not values or not all(isinstance(v, str) and _literal_ok(v) for v in values):
        return None
    listed = _literals(values)
    if isinstance(inner, In):
        return (f"KEYS NOT IN ({listed})", False) if negated else (f"KEYS IN ({listed})", True)
    return (f"KEYS <> {listed}", False) if negated else (f"KEYS = {listed}", True)


def _literals(values: Iterable[str]) -> str:
    """SQL92 string literals, sorted, comma separated: ``'`` doubled (SelectorParser's
    STRING_LITERAL)."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(set(values)))


def _literal_ok(v: str) -> bool:
    """No property separator: such a value is never a whole property of a row."""
    return "\x01" not in v and "\x02" not in v


def _tag_values(f: Filter) -> frozenset[str] | None:
    if isinstance(f, EqualTo):
        values: tuple[object, ...] = (f.value,)
    elif isinstance(f, In):
        values = tuple(f.value)
    else:
        return None
    if not all(isinstance(v, str) and _is_tag(v) for v in values):
        return None
    return frozenset(v for v in values if isinstance(v, str))


def _is_tag(v: str) -> bool:
    """A value a TAG subscription can name: SubscriptionData splits on ``||`` and trims."""
    return bool(v) and v == v.strip() and v != "*" and "||" not in v and _literal_ok(v)


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
