"""Which Spark filters the source pushes to the brokers and what it makes of them (issue 34
item 2; spark/pushdown.py), with the filter objects pyspark hands ``pushFilters``."""

from __future__ import annotations

import datetime as dt

from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from aiorocketmq.spark.pushdown import Pushed, push

T = dt.datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=dt.UTC)  # a whole ms
MS = 1_767_323_045_678
ODD = T + dt.timedelta(microseconds=250)  # between two ms


def test_tag_filters_become_the_subscription() -> None:
    """EqualTo and In on tags are pushed (not returned); several intersect."""
    a, ab = EqualTo(("tags",), "A"), In(("tags",), ("A", "B"))
    pushed, left = push([a, ab], Pushed(), tags_allowed=True)
    assert pushed.tags == frozenset({"A"}) and left == []
    pushed, left = push([In(("tags",), ("B", "C")), a], Pushed(), tags_allowed=True)
    assert pushed.tags == frozenset() and left == []  # no row can match


def test_tag_filters_that_cannot_be_a_subscription_stay_with_spark() -> None:
    odd = [EqualTo(("tags",), v) for v in ("*", " A", "", "A||B")]
    others = [Not(EqualTo(("tags",), "A")), IsNull(("tags",)), StringStartsWith(("tags",), "A"),
              EqualTo(("keys",), "k1"), In(("tags",), ("A", None))]  # fmt: skip
    pushed, left = push(odd + others, Pushed(), tags_allowed=True)
    assert pushed == Pushed() and left == odd + others
    a = EqualTo(("tags",), "A")
    pushed, left = push([a], Pushed(), tags_allowed=False)  # an SQL92 subscription
    assert pushed == Pushed() and left == [a]


def test_store_time_bounds_in_whole_ms_and_still_checked_by_spark() -> None:
    """[from_ms, until_ms) of the store times in ms each filter keeps; returned to Spark."""
    cases = [
        (GreaterThan(("storeTimestamp",), T), Pushed(from_ms=MS + 1)),
        (GreaterThanOrEqual(("storeTimestamp",), T), Pushed(from_ms=MS)),
        (LessThan(("storeTimestamp",), T), Pushed(until_ms=MS)),
        (LessThanOrEqual(("storeTimestamp",), T), Pushed(until_ms=MS + 1)),
        (EqualTo(("storeTimestamp",), T), Pushed(from_ms=MS, until_ms=MS + 1)),
        (GreaterThan(("storeTimestamp",), ODD), Pushed(from_ms=MS + 1)),
        (GreaterThanOrEqual(("storeTimestamp",), ODD), Pushed(from_ms=MS + 1)),
        (LessThan(("storeTimestamp",), ODD), Pushed(until_ms=MS + 1)),
        (LessThanOrEqual(("storeTimestamp",), ODD), Pushed(until_ms=MS + 1)),
        (EqualTo(("storeTimestamp",), ODD), Pushed(from_ms=MS + 1, until_ms=MS + 1)),
    ]
    for f, want in cases:
        assert push([f], Pushed(), tags_allowed=True) == (want, [f]), f
    later = T + dt.timedelta(seconds=1)
    fs = [GreaterThan(("storeTimestamp",), T), GreaterThanOrEqual(("storeTimestamp",), later),
          LessThan(("storeTimestamp",), later + dt.timedelta(seconds=5)),
          LessThan(("storeTimestamp",), later + dt.timedelta(seconds=1))]  # fmt: skip
    assert push(fs, Pushed(), tags_allowed=True) == (Pushed(None, MS + 1000, MS + 2000), fs)
    naive = GreaterThan(("storeTimestamp",), T.replace(tzinfo=None))
    assert push([naive], Pushed(), tags_allowed=True) == (Pushed(), [naive])
