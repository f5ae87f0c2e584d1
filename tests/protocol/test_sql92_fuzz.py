"""Whatever the text, compiling a selector either succeeds or raises SelectorError (never
another exception, never Python's recursion limit), and a compiled selector answers True or
False for any properties without raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol.sql92 import Selector, SelectorError, compile_selector

PIECES = [
    "a", "b", "TAGS", "1", "0", "5L", "1.5", ".5", "5.", "1E400", "0.0", "2147483648",
    "'x'", "'it''s'", "''", "TRUE", "FALSE", "NULL", "NOT", "AND", "OR", "IS", "IN",
    "BETWEEN", "CONTAINS", "STARTSWITH", "ENDSWITH", "=", "<>", ">", ">=", "<", "<=", "(", ")",
    ",", "+", "-", "/* c */", "-- c\n", "#", ".", "'", "/*", "\t", "\n", "é", "\U0001f600",
]  # fmt: skip
VALUES = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["1", "-1", "1.5", "NaN", "Infinity", " 2 ", "true", "3000000000", "x"]),
)
PROPERTIES = st.dictionaries(st.sampled_from(["a", "b", "TAGS", "c"]), VALUES, max_size=4)
SOUP = st.lists(st.sampled_from(PIECES), max_size=24).map(" ".join)


def outcome(text: str) -> Selector | None:
    try:
        return compile_selector(text)
    except SelectorError:
        return None


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_any_text_compiles_or_raises_selector_error(text: str) -> None:
    outcome(text)


@settings(max_examples=500)
@given(SOUP, st.lists(PROPERTIES, max_size=3))
def test_any_tokens_compile_or_refuse_and_then_evaluate(
    text: str, maps: list[dict[str, str]]
) -> None:
    selector = outcome(text)
    if selector is not None:
        for properties in maps:
            assert selector.matches(properties) in (True, False)
