"""Which Spark filters the source pushes to the brokers and what it makes of them (issue 34
item 2; spark/pushdown.py), with the filter objects pyspark hands ``pushFilters``."""

from __future__ import annotations

import datetime as dt

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from aiorocketmq.spark.pushdown import Pushed, push, sql92

T = dt.datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=dt.UTC)  # a whole ms
MS = 1_767_323_045_678
ODD = T + dt.timedelta(microseconds=250)  # between two ms


def test_tag_filters_become_the_subscription() -> None:
    """EqualTo and In on tags are pushed (not returned); several intersect."""
    a, ab = EqualTo(("tags",), "A"), In(("tags",), ("A", "B"))
    pushed, left = push([a, ab], Pushed())
    assert pushed.tags == frozenset({"A"}) and left == []
    pushed, left = push([In(("tags",), ("B", "C")), a], Pushed())
    assert pushed.tags == frozenset() and left == []  # no row can match


def test_tag_filters_that_cannot_be_a_subscription_stay_with_spark() -> None:
    odd = [EqualTo(("tags",), v) for v in ("*", " A", "", "A||B")]
    others = [Not(EqualTo(("tags",), "A")), IsNull(("tags",)), StringStartsWith(("tags",), "A"),
              In(("tags",), ("A", None)), EqualTo(("tags",), "A\x01")]  # fmt: skip
    pushed, left = push(odd + others, Pushed())
    assert pushed == Pushed() and left == odd + others


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
        assert push([f], Pushed()) == (want, [f]), f
    later = T + dt.timedelta(seconds=1)
    fs = [GreaterThan(("storeTimestamp",), T), GreaterThanOrEqual(("storeTimestamp",), later),
          LessThan(("storeTimestamp",), later + dt.timedelta(seconds=5)),
          LessThan(("storeTimestamp",), later + dt.timedelta(seconds=1))]  # fmt: skip
    assert push(fs, Pushed()) == (Pushed(None, MS + 1000, MS + 2000), fs)
    naive = GreaterThan(("storeTimestamp",), T.replace(tzinfo=None))
    assert push([naive], Pushed()) == (Pushed(), [naive])


def test_keys_filters_become_sql92_terms() -> None:
    """Equality and IN on keys are exact (not returned); IS NOT NULL and the negations keep
    a superset (returned); ``'`` is doubled; IS NULL, odd values and other columns stay."""
    eq, eq_ns = EqualTo(("keys",), "it's"), EqualNullSafe(("keys",), "k1")
    inn = In(("keys",), ("k2", "k1 k3", "k2"))
    partial = [IsNotNull(("keys",)), Not(EqualTo(("keys",), "x")), Not(In(("keys",), ("y", "z")))]
    pushed, left = push([eq, eq_ns, inn, *partial], Pushed())
    assert pushed.keys == (
        "KEYS = 'it''s'", "KEYS = 'k1'", "KEYS IN ('k1 k3', 'k2')", "KEYS IS NOT NULL",
        "KEYS <> 'x'", "KEYS NOT IN ('y', 'z')",
    )  # fmt: skip
    assert pushed.keys_exact == (eq, eq_ns, inn) and left == partial
    assert pushed.unpushed_keys() == Pushed()
    stay = [IsNull(("keys",)), Not(IsNotNull(("keys",))), EqualTo(("keys",), "a\x02b"),
            In(("keys",), ("a", None)), EqualNullSafe(("keys",), None), EqualTo(("keys",), 5),
            StringStartsWith(("keys",), "k"), EqualTo(("body",), "k")]  # fmt: skip
    assert push(stay, Pushed()) == (Pushed(), stay)


def test_the_sql92_expression_ands_the_user_s_tags_and_keys() -> None:
    pushed, _ = push([EqualTo(("keys",), "k"), IsNotNull(("keys",))], Pushed())
    assert sql92(pushed, None, None) == "KEYS = 'k' AND KEYS IS NOT NULL"
    assert sql92(pushed, None, frozenset({"B", "A"})) == (
        "TAGS IN ('A', 'B') AND KEYS = 'k' AND KEYS IS NOT NULL"
    )
    assert sql92(pushed, "a > 5 -- note", frozenset({"A"})) == (
        "(a > 5 -- note\n) AND TAGS IN ('A') AND KEYS = 'k' AND KEYS IS NOT NULL"
    )
    assert sql92(Pushed(), "a > 5", None) == "(a > 5\n)"
