"""SQL92 selectors evaluate as Apache's broker evaluates them (4.9.8, plus 5.x's CONTAINS...).

Each row names the Java rule it checks; every expected value was read from Apache's own
classes (SelectorParser + evaluate() of 4.9.8 and 5.3.3, /work/oracle/sql92-check): "T" TRUE,
"F" FALSE, "N" null (unknown), "E" an exception (the broker skips the message).
"""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.protocol.sql92 import Selector, SelectorError, compile_selector
from aiorocketmq.remoting.protocol.sql92.evaluator import EvalError, build
from aiorocketmq.remoting.protocol.sql92.parser import parse

RESULT = {True: "T", False: "F", None: "N"}


def evaluate(expression: str, properties: dict[str, str]) -> str:
    """Java's evaluate() of the selector: T, F, N (null) or E (it throws)."""
    fn = build(parse(expression))
    try:
        value = fn(properties)
    except EvalError:
        return "E"
    assert isinstance(value, bool) or value is None
    return RESULT[value]


# (rule, expression, properties, Java's result)
MATRIX = [
    ("a number as a string is parsed as the constant's Integer", "a = 1", {"a": "1"}, "T"),
    ("Integer.valueOf refuses a fraction: evaluation throws", "a = 1", {"a": "1.0"}, "E"),
    ("Integer.valueOf refuses text", "a = 1", {"a": "x"}, "E"),
    ("a missing property is null", "a = 1", {}, "N"),
    ("a missing property on the right of = is FALSE", "1 = a", {}, "F"),
    ("string equality is exact", "a = 'x'", {"a": "x"}, "T"),
    ("string inequality", "a <> 'x'", {"a": "y"}, "T"),
    ("<> of a missing property is null", "a <> 'x'", {}, "N"),
    ("NOT of null is null", "NOT (a = 'x')", {}, "N"),
    ("AND: FALSE beats null", "a = 'x' AND b = 'y'", {"b": "z"}, "F"),
    ("AND: TRUE and null is null", "a = 'x' AND b = 'y'", {"b": "y"}, "N"),
    ("OR: TRUE beats null", "a = 'x' OR b = 'y'", {"b": "y"}, "T"),
    ("OR: FALSE or null is null", "a = 'x' OR b = 'y'", {"b": "z"}, "N"),
    ("OR short-circuits an error on its right", "a = 'x' OR b > 1", {"a": "x", "b": "q"}, "T"),
    ("AND evaluates its right after a null", "a = 'x' AND b > 1", {"b": "q"}, "E"),
    ("> converts the property to the Integer constant's type", "a > 5", {"a": "6"}, "T"),
    ("> with a Double constant parses a double", "a > 5.5", {"a": "6"}, "T"),
    ("Double.valueOf accepts NaN, above everything", "a > 5.5", {"a": "NaN"}, "T"),
    ("Double.valueOf trims blanks", "a > 5.5", {"a": " 6 "}, "T"),
    ("Integer.valueOf does not trim", "a > 5", {"a": " 6"}, "E"),
    ("a Long constant parses a long", "a = 3000000000", {"a": "3000000000"}, "T"),
    ("an Integer constant cannot take a long", "a = 5", {"a": "3000000000"}, "E"),
    ("Integer vs Double promotes", "1 = 1.0", {}, "T"),
    ("BETWEEN is >= AND <=", "a BETWEEN 1 AND 3", {"a": "3"}, "T"),
    ("NOT BETWEEN is < OR >", "a NOT BETWEEN 1 AND 3", {"a": "0"}, "T"),
    ("BETWEEN of a missing property is null", "a BETWEEN 1 AND 3", {}, "N"),
    ("IN with strings", "a IN ('x', 'y')", {"a": "y"}, "T"),
    ("NOT IN of a missing property is null", "a NOT IN ('x')", {}, "N"),
    ("IS NULL of a missing property", "a IS NULL", {}, "T"),
    ("IS NOT NULL of a present property", "a IS NOT NULL", {"a": ""}, "T"),
    ("a bare property is never TRUE (it is a String)", "a", {"a": "true"}, "F"),
    ("NOT of a present bare property is TRUE", "NOT a", {"a": "x"}, "T"),
    ("a = TRUE parses the property with Boolean.valueOf", "a = TRUE", {"a": "TRUE"}, "T"),
    ("Boolean.valueOf: anything else is false", "a = FALSE", {"a": "yes"}, "T"),
    ("TRUE = a casts the Boolean to String: throws", "TRUE = a", {"a": "true"}, "E"),
    ("'' in a literal is one quote", "a = 'it''s'", {"a": "it's"}, "T"),
    ("comments are skipped", "a = /* c */ 1 -- c\n", {"a": "1"}, "T"),
    ("keywords ignore case", "a is not null and not (a = 'x')", {"a": "y"}, "T"),
    ("NOT binds tighter than =: (NOT a) = 'x' casts a Boolean", "NOT a = 'x'", {"a": "y"}, "E"),
    ("text after the expression is ignored", "a = 1 b c", {"a": "1"}, "T"),
    ("<> is NOT(=): a missing right-hand property makes it TRUE", "5 <> a", {}, "T"),
    ("two missing properties are equal (null == null)", "a = b", {}, "T"),
    ("two properties: equality of their strings", "a = b", {"a": "1", "b": "1.0"}, "F"),
    ("two properties ordered: both parsed as doubles", "a < b", {"a": "1", "b": "1.5"}, "T"),
    ("two properties ordered: text throws", "a < b", {"a": "1", "b": "x"}, "E"),
    (
        "Long vs Double: the long is rounded to a double",
        "9007199254740993 = 9007199254740992.0",
        {},
        "T",
    ),
    ("Integer vs Long compare as longs", "5 = 5L", {}, "T"),
    ("a negated Integer literal stays an Integer", "a <> -2147483647", {"a": "3000000000"}, "E"),
    ("-2147483648 is a negated Long: Long.valueOf", "a <> -2147483648", {"a": "3000000000"}, "T"),
    ("negating a property gives null", "-a = 5", {"a": "-5"}, "N"),
    ("unary plus changes nothing", "+a = +5", {"a": "5"}, "T"),
    (
        "BETWEEN with negated bounds is not checked at compile time",
        "a BETWEEN -1 AND -5",
        {"a": "-3"},
        "F",
    ),
    ("Double.valueOf reads hex floats", "a = 8.0", {"a": "0x1p3"}, "T"),
    ("Double.valueOf reads a d suffix", "a = 1.5", {"a": "1.5d"}, "T"),
    ("Double.compare: -0.0 is below 0.5 and not NaN", "a < 0.5", {"a": "-0.0"}, "T"),
    ("Integer.valueOf takes a leading +", "a = 5", {"a": "+5"}, "T"),
    ("Integer.valueOf takes any Unicode digit", "a = 3", {"a": "\u0663"}, "T"),
    ("IN compares strings exactly", "a IN ('1')", {"a": "01"}, "F"),
    (
        "TAGS and other system properties are plain properties",
        "TAGS = 'TagA'",
        {"TAGS": "TagA"},
        "T",
    ),
    (
        "a decimal with a leading zero ends at the 0 (007 is 0, then ignored text)",
        "a = 007",
        {"a": "0"},
        "T",
    ),
    ("5.x CONTAINS", "a CONTAINS 'bc'", {"a": "abcd"}, "T"),
    ("5.x NOT CONTAINS of a missing property is FALSE", "a NOT CONTAINS 'x'", {}, "F"),
    ("5.x STARTSWITH", "a STARTSWITH 'ab'", {"a": "abc"}, "T"),
    ("5.x ENDSWITH", "a NOT ENDSWITH 'bc'", {"a": "abc"}, "F"),
    ("5.x an empty search string is FALSE", "a CONTAINS ''", {"a": "abc"}, "F"),
]


@pytest.mark.parametrize(("rule", "expression", "properties", "expected"), MATRIX)
def test_evaluation_matches_java(
    rule: str, expression: str, properties: dict[str, str], expected: str
) -> None:
    assert evaluate(expression, properties) == expected, rule


def test_matches_is_true_only_for_true() -> None:
    """Selector.matches: only TRUE delivers; null and an evaluation error do not."""
    selector = compile_selector("a > 5")
    assert isinstance(selector, Selector)
    assert selector.expression == "a > 5"
    assert selector.matches({"a": "6"}) is True
    assert selector.matches({"a": "5"}) is False
    assert selector.matches({}) is False
    assert selector.matches({"a": "x"}) is False


def test_compile_error_is_the_java_remark() -> None:
    """A refused selector raises SelectorError whose text is Java's broker remark."""
    with pytest.raises(SelectorError) as info:
        compile_selector("a > 'x'")
    assert str(info.value) == "java.lang.RuntimeException: Value ''x'' cannot be compared."
