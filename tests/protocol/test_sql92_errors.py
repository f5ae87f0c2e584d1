"""A refused SQL92 selector raises SelectorError whose text is the remark Java's broker sends
with SUBSCRIPTION_PARSE_FAILED (23): ``MQFilterException.getMessage()``, the cause's class and
message. Every remark below was printed by Apache 5.3.3's SelectorParser
(/work/oracle/sql92-check); 4.9.8 prints the same but for the "Was expecting" lists of syntax
errors (no CONTAINS, STARTSWITH, ENDSWITH, nor the trailing "+" of 5.3.3's lookahead report).
Our limits refuse with remarks that name them.
"""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.protocol import sql92
from aiorocketmq.remoting.protocol.sql92 import SelectorError, compile_selector

# (rule, selector, Java's remark)
JAVA_REMARKS = [
    (
        "an operand is missing at the end",
        "a =",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" '
            "at line 1, column 3.\n"
            "Was expecting one of:\n"
            '    "NOT" ...\n'
            '    "TRUE" ...\n'
            '    "FALSE" ...\n'
            '    "NULL" ...\n'
            "    <DECIMAL_LITERAL> ...\n"
            "    <FLOATING_POINT_LITERAL> ...\n"
            "    <STRING_LITERAL> ...\n"
            "    <ID> ...\n"
            '    "(" ...\n'
            '    "-" ...\n'
            '    "+" ...\n'
            "    "
        ),
    ),
    (
        "an empty selector",
        "",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" '
            "at line 0, column 0.\n"
            "Was expecting one of:\n"
            '    "NOT" ...\n'
            '    "TRUE" ...\n'
            '    "FALSE" ...\n'
            '    "NULL" ...\n'
            "    <DECIMAL_LITERAL> ...\n"
            "    <FLOATING_POINT_LITERAL> ...\n"
            "    <STRING_LITERAL> ...\n"
            "    <ID> ...\n"
            '    "(" ...\n'
            '    "-" ...\n'
            '    "+" ...\n'
            "    "
        ),
    ),
    (
        "NOT must start BETWEEN, IN, CONTAINS...",
        "a NOT x",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered " "NOT" '
            '"NOT "" at line 1, column 3.\n'
            "Was expecting one of:\n"
            '    "BETWEEN" ...\n'
            '    "IN" ...\n'
            '    "CONTAINS" ...\n'
            '    "STARTSWITH" ...\n'
            '    "ENDSWITH" ...\n'
            '    ">" ...\n'
            '    ">=" ...\n'
            '    "<" ...\n'
            '    "<=" ...\n'
            "    "
        ),
    ),
    (
        "IS must be followed by [NOT] NULL",
        "a IS 5",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered " <DECIM'
            'AL_LITERAL> "5 "" at line 1, column 6.\n'
            "Was expecting one of:\n"
            '    "NOT" ...\n'
            '    "NULL" ...\n'
            "    "
        ),
    ),
    (
        "IN takes string literals only",
        "a IN (5)",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered " <DECIM'
            'AL_LITERAL> "5 "" at line 1, column 7.\n'
            "Was expecting:\n"
            "    <STRING_LITERAL> ...\n"
            "    "
        ),
    ),
    (
        "an IN list needs its commas",
        "a IN ('x' 5)",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered " <DECIM'
            'AL_LITERAL> "5 "" at line 1, column 11.\n'
            "Was expecting one of:\n"
            '    "," ...\n'
            '    ")" ...\n'
            "    "
        ),
    ),
    (
        "a leading + must be followed by an operand",
        "+ )",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered " "+" "+'
            ' "" at line 1, column 1.\n'
            "Was expecting one of:\n"
            '    "NOT" ...\n'
            '    "TRUE" ...\n'
            '    "FALSE" ...\n'
            '    "NULL" ...\n'
            "    <DECIMAL_LITERAL> ...\n"
            "    <FLOATING_POINT_LITERAL> ...\n"
            "    <STRING_LITERAL> ...\n"
            "    <ID> ...\n"
            '    "(" ...\n'
            '    "-" ...\n'
            "    "
        ),
    ),
    (
        "a lexical error: an unknown character",
        "a.b = 1",
        (
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line"
            ' 1, column 3.  Encountered: "b" (98), after : "."'
        ),
    ),
    (
        "a lexical error at the input's end is reported as <EOF>",
        "a = #",
        (
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line"
            ' 1, column 6.  Encountered: <EOF> after : ""'
        ),
    ),
    (
        "an unterminated string",
        "a = 'abc",
        (
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line"
            ' 1, column 9.  Encountered: <EOF> after : "\\\'abc"'
        ),
    ),
    (
        "an unterminated comment",
        "a = 1 OR /* b",
        (
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line"
            ' 1, column 14.  Encountered: <EOF> after : "/* b"'
        ),
    ),
    (
        "a tab moves the column to the next multiple of 8",
        "a = \t",
        (
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" '
            "at line 1, column 8.\n"
            "Was expecting one of:\n"
            '    "NOT" ...\n'
            '    "TRUE" ...\n'
            '    "FALSE" ...\n'
            '    "NULL" ...\n'
            "    <DECIMAL_LITERAL> ...\n"
            "    <FLOATING_POINT_LITERAL> ...\n"
            "    <STRING_LITERAL> ...\n"
            "    <ID> ...\n"
            '    "(" ...\n'
            '    "-" ...\n'
            '    "+" ...\n'
            "    "
        ),
    ),
    (
        "a non-BMP character is two Java chars",
        "a = 😀",
        (
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line"
            ' 1, column 5.  Encountered: "\\ud83d" (55357), after : ""'
        ),
    ),
    (
        "a number is not a condition",
        "5",
        (
            "org.apache.rocketmq.filter.parser.ParseException: Expression will not "
            "result in a boolean value: 5"
        ),
    ),
    (
        "NOT of a number",
        "NOT 5",
        (
            "org.apache.rocketmq.filter.parser.ParseException: Expression will not "
            "result in a boolean value: 5"
        ),
    ),
    (
        "a negated property is not a condition",
        "-a",
        (
            "org.apache.rocketmq.filter.parser.ParseException: Expression will not "
            "result in a boolean value: (- a)"
        ),
    ),
    (
        "ordering against a string constant",
        "a > 'x'",
        "java.lang.RuntimeException: Value ''x'' cannot be compared.",
    ),
    (
        "ordering against a boolean constant",
        "a > TRUE",
        "java.lang.RuntimeException: Value 'TRUE' cannot be compared.",
    ),
    (
        "ordering against a condition",
        "a > (b = 1.5E10)",
        "java.lang.RuntimeException: Value '(b == 1.5E10)' cannot be compared.",
    ),
    (
        "TRUE = <non-boolean constant>",
        "TRUE = 1",
        "java.lang.RuntimeException: 'TRUE' cannot be compared with '1'",
    ),
    (
        "= NULL (IS NULL is the way)",
        "a = NULL",
        "java.lang.RuntimeException: 'NULL' cannot be compared.",
    ),
    (
        "BETWEEN with the larger bound first",
        "a BETWEEN 5 AND 1",
        (
            "java.lang.RuntimeException: Illegal values of between, left value(5) m"
            "ust less than or equal to right value(1)"
        ),
    ),
    (
        "BETWEEN bounds of mixed types: the String is parsed",
        "a BETWEEN 1 AND 'x'",
        ('java.lang.RuntimeException: java.lang.NumberFormatException: For input string: "x"'),
    ),
    (
        "BETWEEN with a String and a Boolean bound",
        "a BETWEEN 'x' AND TRUE",
        (
            "java.lang.ClassCastException: class java.lang.Boolean cannot be cast t"
            "o class java.lang.String (java.lang.Boolean and java.lang.String are i"
            "n module java.base of loader 'bootstrap')"
        ),
    ),
    (
        "BETWEEN NULL",
        "a BETWEEN NULL AND 1",
        ("java.lang.RuntimeException: Illegal values of between, values can not be null!"),
    ),
    (
        "BETWEEN bounds print as Java prints them",
        "a BETWEEN 1.5E10 AND 1",
        (
            "java.lang.RuntimeException: Illegal values of between, left value(1.5E"
            "10) must less than or equal to right value(1)"
        ),
    ),
    (
        "IN on a non-property",
        "5 IN ('a')",
        ("java.lang.RuntimeException: Expected a property for In expression, got: 5"),
    ),
    (
        "a long literal out of range",
        "a = 99999999999999999999",
        ('java.lang.NumberFormatException: For input string: "99999999999999999999"'),
    ),
    (
        "a float literal of zero is below Double.MIN_VALUE",
        "a > 0.0",
        "java.lang.RuntimeException: 0.0 is less than 4.9E-324",
    ),
    (
        "a float literal beyond Double.MAX_VALUE",
        "a > 1E400",
        ("java.lang.RuntimeException: 1E400 is greater than 1.7976931348623157E308"),
    ),
    (
        "an IN list of five or more prints in HashSet order",
        "a > (b IN ('x','y','z','w','v'))",
        ("java.lang.RuntimeException: Value 'b IN ( v, w, x, y, z )' cannot be compared."),
    ),
    (
        "a chain prints as Java's left-nested tree",
        "a > (b=1 AND c=2 AND d=3)",
        (
            "java.lang.RuntimeException: Value '(((b == 1) && (c == 2)) && (d == 3)"
            ")' cannot be compared."
        ),
    ),
    (
        "a 5.x CONTAINS prints without its search string",
        "a > (b CONTAINS 'x')",
        "java.lang.RuntimeException: Value '(CONTAINS b)' cannot be compared.",
    ),
]


@pytest.mark.parametrize(("rule", "expression", "remark"), JAVA_REMARKS)
def test_refused_with_the_java_remark(rule: str, expression: str, remark: str) -> None:
    with pytest.raises(SelectorError) as info:
        compile_selector(expression)
    assert str(info.value) == remark, rule


def test_a_refusal_is_cached_and_raised_again() -> None:
    """compat: SelectorParser.PARSE_CACHE keeps refusals too: the same remark every time."""
    for _ in range(2):
        with pytest.raises(SelectorError, match="cannot be compared"):
            compile_selector("cached > 'refusal'")


def test_accepted_selectors_ignore_trailing_text() -> None:
    """compat: JmsSelector has no <EOF>: what follows a whole expression is never read, so
    even a character the lexer refuses is accepted there when the parser did not peek at it."""
    assert compile_selector("a = 1 ) #").matches({"a": "1"})
    with pytest.raises(SelectorError, match="Lexical error at line 1, column 8"):
        compile_selector("a = 1 #")  # the token right after is read, to look for an operator


# -- our limits (Apache has none)


def test_too_long_is_refused_before_reading_it() -> None:
    text = "a = 1 OR " * 120_000  # about 1 MiB
    with pytest.raises(SelectorError) as info:
        compile_selector(text)
    assert str(info.value) == (
        f"SQL92 selector of {len(text)} characters: the limit is "
        f"{sql92.MAX_EXPRESSION_LENGTH} (sql92.MAX_EXPRESSION_LENGTH)"
    )


def test_too_long_selectors_are_not_kept_in_the_cache() -> None:
    """Memory stays bounded: 100 distinct 1 MiB selectors (ali-ons sends its selector in
    every pull) leave none of their text in the compile cache."""
    from aiorocketmq.remoting.protocol.sql92 import selector

    for i in range(selector.CACHE_SIZE):
        with pytest.raises(SelectorError):
            compile_selector(f"a = {i} OR " + "b = 1 OR " * 120_000)
    assert all(len(key) <= sql92.MAX_EXPRESSION_LENGTH for key in selector._cache)


def test_the_longest_selector_is_accepted() -> None:
    text = "a = '" + "x" * (sql92.MAX_EXPRESSION_LENGTH - 6) + "'"
    assert len(text) == sql92.MAX_EXPRESSION_LENGTH
    assert compile_selector(text).matches({"a": "x" * (sql92.MAX_EXPRESSION_LENGTH - 6)})


@pytest.mark.parametrize(
    "text",
    [
        "(" * 5_000 + "a = 1" + ")" * 5_000,
        "NOT " * 3_000 + "a",
        "- " * 5_000 + "a",
        "+(" * 3_000 + "a = 1" + ")" * 3_000,
        "a" + " = TRUE" * 100,
        "a" + " IS NULL" * 100,
    ],
    ids=["parentheses", "NOT", "minus", "plus-lookahead", "= chain", "IS NULL chain"],
)
def test_deep_nesting_is_refused_without_recursion_error(text: str) -> None:
    with pytest.raises(SelectorError) as info:
        compile_selector(text)
    assert "the limit is sql92.MAX_DEPTH" in str(info.value)


def test_nesting_up_to_the_limit_is_accepted() -> None:
    depth = sql92.MAX_DEPTH - 1
    selector = compile_selector("(" * depth + "a = 1" + ")" * depth)
    assert selector.matches({"a": "1"})


def test_too_many_terms_are_refused() -> None:
    accepted = " OR ".join(["a = 1"] * (sql92.MAX_NODES // 4))
    assert compile_selector(accepted).matches({"a": "1"})
    refused = " OR ".join(["a = 1"] * (sql92.MAX_NODES // 4 + 1))
    with pytest.raises(SelectorError) as info:
        compile_selector(refused)
    assert str(info.value) == (
        f"SQL92 selector has more than {sql92.MAX_NODES} terms (properties, constants, "
        "operators): the limit is sql92.MAX_NODES"
    )


def test_too_many_in_strings_are_refused() -> None:
    values = [f"'{i}'" for i in range(sql92.MAX_IN_LIST)]
    selector = compile_selector(f"a IN ({', '.join(values)})")
    assert selector.matches({"a": str(sql92.MAX_IN_LIST - 1)})
    half = ", ".join(values[: sql92.MAX_IN_LIST // 2 + 1])
    with pytest.raises(SelectorError) as info:
        compile_selector(f"a IN ({half}) OR b NOT IN ({half})")  # all lists count together
    assert str(info.value) == (
        f"SQL92 selector has more than {sql92.MAX_IN_LIST} strings in its IN lists: "
        "the limit is sql92.MAX_IN_LIST"
    )
