"""A selector's tree turned into closures, once, so a message costs a few calls, not a walk.

Each closure takes the message's properties and returns Java's value: True, False or None
(null: unknown) for a condition, the operand's value otherwise; it raises EvalError where
Java's evaluation throws (the broker then does not deliver the message).
compat: ComparisonExpression, LogicExpression, UnaryExpression (5.3.3) evaluate().
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Final, TypeAlias

from aiorocketmq.remoting.protocol.sql92 import javatypes as jt
from aiorocketmq.remoting.protocol.sql92 import nodes as nd
from aiorocketmq.remoting.protocol.sql92.javatypes import EvalError

Properties: TypeAlias = Mapping[str, str]
Eval: TypeAlias = Callable[[Properties], object]

_NUMBERS: Final = (jt.K_INT, jt.K_LONG, jt.K_DOUBLE)
_TESTS: Final = {
    nd.EQ: operator.eq,
    nd.GT: operator.gt,
    nd.GE: operator.ge,
    nd.LT: operator.lt,
    nd.LE: operator.le,
}
_SWAPPED: Final = {nd.EQ: nd.EQ, nd.GT: nd.LT, nd.GE: nd.LE, nd.LT: nd.GT, nd.LE: nd.GE}


def build(node: nd.Node) -> Eval:
    """The closure that evaluates ``node`` (recursion bounded by the tree's depth)."""
    tag = node.tag
    if tag == nd.CONST or tag == nd.NEG:
        fn, value, _ = _operand(node)
        if fn is not None:
            return fn
        return _constant(value)
    if tag == nd.PROP:
        return _property(node.name)
    if tag == nd.CAST:
        return _cast(node.children[0].name)
    if tag == nd.NOT:
        return _not(build(node.children[0]))
    if tag == nd.AND:
        return _and([build(child) for child in node.children])
    if tag == nd.OR:
        return _or([build(child) for child in node.children])
    if tag == nd.IN:
        return _in(node.children[0].name, frozenset(node.values), node.negated)
    if tag == nd.TEXT:
        search = node.value
        assert isinstance(search, str)
        return _text(build(node.children[0]), node.op, search, node.negated)
    return _comparison(node)


def _constant(value: object) -> Eval:
    def constant(props: Properties) -> object:
        return value

    return constant


def _property(name: str) -> Eval:
    def prop(props: Properties) -> object:
        return props.get(name)

    return prop


def _operand(node: nd.Node) -> tuple[Eval | None, object, int]:
    """An operand as (closure or None, its value when constant, its Java class when not null).

    A property is a String, a condition a Boolean. compat: UnaryExpression.createNegate --
    negating anything but a number gives null, so ``-a`` is always null.
    """
    tag = node.tag
    if tag == nd.CONST:
        return None, node.value, node.value_kind
    if tag == nd.PROP:
        return _property(node.name), None, jt.K_STR
    if tag == nd.NEG:
        fn, value, kind = _operand(node.children[0])
        if fn is None:
            if kind in _NUMBERS:
                assert isinstance(value, int | float)
                return None, -value, kind
            return None, None, jt.K_NULL
        if node.children[0].tag == nd.PROP:
            return None, None, jt.K_NULL
        return _then_null(fn), None, jt.K_NULL
    return build(node), None, jt.K_BOOL


def _then_null(fn: Eval) -> Eval:
    """The negation of a condition: evaluated (it may throw), then null."""

    def negated(props: Properties) -> object:
        fn(props)
        return None

    return negated


def _cast(name: str) -> Eval:
    """compat: UnaryExpression.createBooleanCast -- a property (a String) is never TRUE."""

    def cast(props: Properties) -> object:
        return None if props.get(name) is None else False

    return cast


def _not(fn: Eval) -> Eval:
    def negation(props: Properties) -> object:
        value = fn(props)
        if value is None:
            return None
        return value is not True

    return negation


def _and(fns: list[Eval]) -> Eval:
    """compat: LogicExpression.createAND, a left-nested chain: FALSE ends it, null taints it."""
    if len(fns) == 2:
        first, second = fns

        def and2(props: Properties) -> object:
            left = first(props)
            if left is False:
                return False
            right = second(props)
            if right is False:
                return False
            if left is None or right is None:
                return None
            return True

        return and2

    def conjunction(props: Properties) -> object:
        unknown = False
        for fn in fns:
            value = fn(props)
            if value is False:
                return False
            if value is None:
                unknown = True
        return None if unknown else True

    return conjunction


def _or(fns: list[Eval]) -> Eval:
    """compat: LogicExpression.createOR: TRUE ends it, null taints a FALSE."""

    def disjunction(props: Properties) -> object:
        unknown = False
        for fn in fns:
            value = fn(props)
            if value is True:
                return True
            if value is None:
                unknown = True
        return None if unknown else False

    return disjunction


def _in(name: str, values: frozenset[str], negated: bool) -> Eval:
    """compat: UnaryExpression.createInExpression: a missing property is null, even for NOT IN."""

    def member(props: Properties) -> object:
        value = props.get(name)
        if value is None:
            return None
        return (value in values) is not negated

    return member


def _text(fn: Eval, op: str, search: str, negated: bool) -> Eval:
    """5.x's [NOT] CONTAINS / STARTSWITH / ENDSWITH: anything but a String is FALSE, both ways;
    an empty search string is FALSE without evaluating the operand."""
    if not search:
        return _constant(False)

    def text(props: Properties) -> object:
        value = fn(props)
        if not isinstance(value, str):
            return False
        if op == nd.CONTAINS:
            found = search in value
        elif op == nd.STARTSWITH:
            found = value.startswith(search)
        else:
            found = value.endswith(search)
        return found is not negated

    return text


def _order(op: str, sign: int) -> bool:
    """ComparisonExpression.asBoolean of each operator."""
    if op == nd.EQ:
        return sign == 0
    if op == nd.GT:
        return sign > 0
    if op == nd.GE:
        return sign >= 0
    if op == nd.LT:
        return sign < 0
    return sign <= 0


def _comparison(node: nd.Node) -> Eval:
    op = node.op
    left_fn, left_value, left_kind = _operand(node.children[0])
    right_fn, right_value, right_kind = _operand(node.children[1])
    left_prop = node.children[0].tag == nd.PROP
    right_prop = node.children[1].tag == nd.PROP
    if left_prop and right_fn is None and right_value is not None:
        return _property_vs_constant(op, node.children[0].name, right_value, right_kind, True)
    if right_prop and left_fn is None and left_value is not None and left_kind != jt.K_BOOL:
        return _property_vs_constant(op, node.children[1].name, left_value, left_kind, False)
    if op == nd.EQ:
        return _equal(left_fn, left_value, left_kind, right_fn, right_value, right_kind)
    return _ordered(op, left_fn, left_value, left_kind, right_fn, right_value, right_kind)


def _property_vs_constant(op: str, name: str, constant: object, kind: int, prop_left: bool) -> Eval:
    """The common case, ``a > 5`` or ``5 < a``: the property is parsed as the constant's type.

    A missing property makes ``a = 5`` null but ``5 = a`` FALSE (doCreateEqual), and any
    ordering null.
    """
    missing: object = None if (prop_left or op != nd.EQ) else False
    if kind == jt.K_STR:  # only = gets here: ordering a string constant does not compile

        def equal_text(props: Properties) -> object:
            value = props.get(name)
            if value is None:
                return missing
            return value == constant

        return equal_text
    if kind == jt.K_BOOL:  # a = TRUE (TRUE = a throws: left to the general path)

        def equal_boolean(props: Properties) -> object:
            value = props.get(name)
            if value is None:
                return missing
            return jt.parse_boolean(value) is constant

        return equal_boolean
    parse = jt.parse_int if kind == jt.K_INT else jt.parse_long if kind == jt.K_LONG else None
    # ``5 < a`` is ``a > 5``
    test = _TESTS[op if prop_left else _SWAPPED[op]]
    if parse is not None:
        assert isinstance(constant, int)
        number = constant

        def compare_integer(props: Properties) -> object:
            value = props.get(name)
            if value is None:
                return missing
            return test(parse(value), number)

        return compare_integer
    assert isinstance(constant, float)
    real = constant  # never 0.0 nor NaN: Double.compare is the plain comparison but for NaN
    nan_result = _order(op, -1 if not prop_left else 1)

    def compare_double(props: Properties) -> object:
        value = props.get(name)
        if value is None:
            return missing
        parsed = jt.parse_double(value)
        if parsed != parsed:
            return nan_result
        return test(parsed, real)

    return compare_double


def _equal(
    left_fn: Eval | None,
    left_value: object,
    left_kind: int,
    right_fn: Eval | None,
    right_value: object,
    right_kind: int,
) -> Eval:
    """compat: ComparisonExpression.doCreateEqual -- both sides are evaluated; one null gives
    null (left) or FALSE (right), both null TRUE."""

    def equal(props: Properties) -> object:
        left = left_value if left_fn is None else left_fn(props)
        right = right_value if right_fn is None else right_fn(props)
        if left is None:
            return True if right is None else None
        if right is None:
            return False
        return jt.java_compare(left, left_kind, right, right_kind) == 0

    return equal


def _ordered(
    op: str,
    left_fn: Eval | None,
    left_value: object,
    left_kind: int,
    right_fn: Eval | None,
    right_value: object,
    right_kind: int,
) -> Eval:
    """compat: ComparisonExpression.evaluate -- null on either side is null; two Strings are
    compared as doubles (or throw)."""

    def ordered(props: Properties) -> object:
        left = left_value if left_fn is None else left_fn(props)
        if left is None:
            return None
        right = right_value if right_fn is None else right_fn(props)
        if right is None:
            return None
        if left_kind == jt.K_STR and right_kind == jt.K_STR:
            assert isinstance(left, str) and isinstance(right, str)
            sign = jt.compare_double(jt.parse_double(left), jt.parse_double(right))
        else:
            sign = jt.java_compare(left, left_kind, right, right_kind)
        return _order(op, sign)

    return ordered


__all__ = ["Eval", "EvalError", "Properties", "build"]
