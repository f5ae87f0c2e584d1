"""broker.filter.memo: a selector's remembered answers are always its own (any sequence of
messages, short-circuits and repeated properties included), and a selector whose messages
keep bringing unseen values stops remembering."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.broker.filter.memo import SIZE, TRIAL, Memo
from aiorocketmq.broker.store.properties import Properties
from aiorocketmq.remoting.protocol.message import encode_properties
from aiorocketmq.remoting.protocol.sql92 import compile_selector

SELECTORS = [
    "a > 5 AND b = 'x' AND c IN ('p', 'q')",
    "a > 5 OR b = 'x'",
    "a > 5 OR a < 2",
    "NOT (a BETWEEN 2 AND 7) AND b IS NOT NULL",
    "b IS NULL OR c <> 'r'",
    "TRUE",
    "a = 7.0 OR flag = TRUE",
]
VALUES = st.one_of(
    st.none(),
    st.sampled_from(["1", "5", "6", "7", "9", "x", "y", "p", "q", "r", "true", "7.0", "-3"]),
    # a property value cannot hold the encoding's separators (\x01 between a name and its
    # value, \x02 between properties: MessageDecoder.messageProperties2String): a stored one
    # reads back otherwise, on 4.9.8 as here; nor a lone surrogate, which UTF-8 cannot encode
    # (no client can send one)
    st.text(st.characters(exclude_characters="\x01\x02", exclude_categories=["Cs"]), max_size=80),
)
MESSAGE = st.fixed_dictionaries({k: VALUES for k in ("a", "b", "c", "flag")}).map(
    lambda d: {k: v for k, v in d.items() if v}
)


def raw(**props: str) -> bytes:
    """Properties as a record stores them."""
    return encode_properties(props).encode()


def test_stored_oddities_are_read_as_java_reads_them() -> None:
    """The first item has no separator before it; of two items of a name the last with a
    value counts; an item without a value is left out."""
    memo = Memo(compile_selector("a = 'x'"))
    for text, expected in [
        (b"a\x01x\x02", True),
        (b"a\x01y\x02a\x01x\x02", True),
        (b"a\x01x\x02a\x01y\x02", False),
        (b"a\x01x\x02a\x01\x02", True),
        (b"ba\x01x\x02", False),
        (b"b\x01a\x01x\x02", False),
    ]:
        for _ in range(2):
            assert memo.matches(text) is expected, text


@given(st.sampled_from(SELECTORS), st.lists(MESSAGE, min_size=1, max_size=60))
def test_the_memo_answers_as_the_selector(expression: str, messages: list[dict[str, str]]) -> None:
    selector = compile_selector(expression)
    memo = Memo(selector)
    for _round in range(2):  # the second round walks what the first one grew
        for props in messages:
            as_stored = encode_properties({"UNIQ_KEY": "u", **props}).encode()
            assert memo.matches(as_stored) == selector.matches(props), (expression, props)


def test_unseen_values_turn_the_memo_off() -> None:
    selector = compile_selector("amount > 100")
    memo = Memo(selector)
    for i in range(TRIAL + 10):
        assert memo.matches(raw(amount=str(i))) == (i > 100)
    assert memo.off
    assert memo.matches(raw(amount="101")) and not memo.matches(raw(amount="100"))


def test_few_values_are_walked_not_evaluated() -> None:
    memo = Memo(compile_selector("a > 5 AND b = 'x'"))
    for i in range(1000):
        memo.matches(raw(a=str(i % 10), b="xy"[i % 2], id=str(i)))
    assert not memo.off and memo.misses <= 20 and memo.hits >= 980


def test_the_tree_is_bounded() -> None:
    """Values never seen before, among enough repeats to keep the memo on: it stops growing
    at SIZE and still answers right."""
    memo = Memo(compile_selector("a = 'x' AND b > 3"))
    for i in range(3 * SIZE):
        for _ in range(8):
            assert memo.matches(raw(a="x", b="5"))
        assert not memo.matches(raw(a="x", b=f"-{i}"))
    assert not memo.off and memo.size <= SIZE + 1


_VALUE_BYTES = st.one_of(
    st.sampled_from([b"", b"5", b"7", b"x", b"p", b"true", b"7.0", b"\xe2\x82", b"\xff"]),
    st.binary(max_size=6).map(lambda b: b.replace(b"\x01", b"").replace(b"\x02", b"")),
)
_ITEM = st.tuples(st.sampled_from([b"a", b"b", b"c", b"flag", b"ab", b""]), _VALUE_BYTES).map(
    lambda kv: kv[0] + b"\x01" + kv[1]
)


@given(st.sampled_from(SELECTORS), st.lists(_ITEM, max_size=8))
def test_an_evaluation_without_the_tree_reads_what_the_text_says(
    expression: str, items: list[bytes]
) -> None:
    """With the memo off, the selector gets only the values of the properties it names,
    each decoded alone: the answers of the whole text decoded (duplicates, empty values,
    broken UTF-8 included)."""
    selector = compile_selector(expression)
    memo = Memo(selector)
    memo.off = True
    text = b"\x02".join(items)
    assert memo.matches(text) == selector.matches(Properties(text.decode("utf-8", "replace")))
