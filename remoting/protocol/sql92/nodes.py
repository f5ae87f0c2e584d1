"""The selector's tree, built by Java's factory rules: each ``create_*`` refuses what Java's
refuses, with Java's remark, and prints a node as Java's ``toString`` does (remarks quote it).

compat: ComparisonExpression, LogicExpression, UnaryExpression, ConstantExpression (5.3.3).
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.protocol.sql92 import javatypes as jt
from aiorocketmq.remoting.protocol.sql92.errors import PARSE, RUNTIME, SelectorError, java_remark
from aiorocketmq.remoting.protocol.sql92.limits import MAX_DEPTH

# node tags
CONST: Final = 1  # value, value_kind
PROP: Final = 2  # name
NEG: Final = 3  # unary minus of children[0]
NOT: Final = 4  # children[0]
CAST: Final = 5  # a property where a boolean is wanted (UnaryExpression.createBooleanCast)
CMP: Final = 6  # op, children[0] op children[1]
AND: Final = 7  # children, left to right (Java's left-nested binary tree)
OR: Final = 8
IN: Final = 9  # children[0] (a property) [NOT] IN values
TEXT: Final = 10  # children[0] [NOT] CONTAINS / STARTSWITH / ENDSWITH search (5.x)

# CMP operators: the symbols Java's toString prints
EQ: Final = "=="
GT: Final = ">"
GE: Final = ">="
LT: Final = "<"
LE: Final = "<="
# TEXT operators
CONTAINS: Final = "CONTAINS"
STARTSWITH: Final = "STARTSWITH"
ENDSWITH: Final = "ENDSWITH"


class Node:
    """One expression node; ``depth`` bounds the recursion of every walk over the tree."""

    __slots__ = (
        "children",
        "depth",
        "name",
        "negated",
        "op",
        "tag",
        "value",
        "value_kind",
        "values",
    )

    def __init__(
        self,
        tag: int,
        children: list[Node],
        *,
        value: object = None,
        value_kind: int = jt.K_NULL,
        name: str = "",
        op: str = "",
        values: list[str] | None = None,
        negated: bool = False,
    ) -> None:
        self.tag = tag
        self.children = children
        self.value = value
        self.value_kind = value_kind
        self.name = name
        self.op = op
        self.values: list[str] = values if values is not None else []
        self.negated = negated
        self.depth: int = 1
        for child in children:
            self.deepen(child.depth + 1)

    def deepen(self, depth: int) -> None:
        """Raises the node's depth to ``depth``, refusing a tree deeper than MAX_DEPTH."""
        if depth > self.depth:
            if depth > MAX_DEPTH:
                raise SelectorError(depth_remark())
            self.depth = depth

    @property
    def is_boolean(self) -> bool:
        """Java's ``BooleanExpression``: a comparison, a logic node, or TRUE/FALSE/NULL."""
        if self.tag == CONST:
            return self.value_kind == jt.K_BOOL or self.value_kind == jt.K_NULL
        return self.tag not in (PROP, NEG)

    def java(self) -> str:
        """Java's toString of this node."""
        tag = self.tag
        if tag == CONST:
            return constant_text(self.value, self.value_kind)
        if tag == PROP:
            return self.name
        if tag == NEG:
            return f"(- {self.children[0].java()})"
        if tag == NOT:
            return f"(NOT {self.children[0].java()})"
        if tag == CAST:
            return self.children[0].java()
        if tag == CMP:
            return f"({self.children[0].java()} {self.op} {self.children[1].java()})"
        if tag in (AND, OR):
            symbol = " && " if tag == AND else " || "
            text = self.children[0].java()
            for child in self.children[1:]:
                text = f"({text}{symbol}{child.java()})"
            return text
        if tag == IN:
            shown = self.values if len(self.values) < 5 else jt.java_hashset_order(self.values)
            symbol = "NOT IN" if self.negated else "IN"
            return f"{self.children[0].java()} {symbol} ( {', '.join(shown)} )"
        symbol = f"NOT {self.op}" if self.negated else self.op
        return f"({symbol} {self.children[0].java()})"


def property_names(node: Node) -> list[str]:
    """The properties ``node`` reads, each once, in the order they first appear (recursion
    bounded by the tree's depth)."""
    names: list[str] = []
    _collect(node, names)
    return names


def _collect(node: Node, names: list[str]) -> None:
    if node.tag == PROP:
        if node.name not in names:
            names.append(node.name)
        return
    for child in node.children:
        _collect(child, names)


def depth_remark() -> str:
    return (
        f"SQL92 selector nested deeper than {MAX_DEPTH} levels "
        "(parentheses, NOT, signs, = chains): the limit is sql92.MAX_DEPTH"
    )


def constant_text(value: object, kind: int) -> str:
    """ConstantExpression.toString: NULL, TRUE, FALSE, a quoted string, a number."""
    if kind == jt.K_NULL:
        return "NULL"
    if kind == jt.K_BOOL:
        return "TRUE" if value else "FALSE"
    if kind == jt.K_STR:
        assert isinstance(value, str)
        return "'" + value.replace("'", "''") + "'"
    if kind == jt.K_DOUBLE:
        assert isinstance(value, float)
        return jt.java_double_str(value)
    return str(value)


def runtime_error(message: str) -> SelectorError:
    return SelectorError(java_remark(RUNTIME, message))


def constant(value: object, kind: int) -> Node:
    return Node(CONST, [], value=value, value_kind=kind)


NULL_CONSTANT: Final = constant(None, jt.K_NULL)


def as_boolean(node: Node) -> Node:
    """compat: SelectorParser.asBooleanExpression -- a property becomes a boolean cast."""
    if node.is_boolean:
        return node
    if node.tag == PROP:
        return Node(CAST, [node])
    raise SelectorError(
        java_remark(PARSE, f"Expression will not result in a boolean value: {node.java()}")
    )


def create_logic(tag: int, left: Node, right: Node) -> Node:
    """LogicExpression.createAND / createOR; a left operand of the same kind is extended, so
    a long chain stays one flat node (same order, same short-circuit as Java's tree)."""
    if left.tag == tag:
        left.children.append(right)
        left.deepen(right.depth + 1)
        return left
    return Node(tag, [left, right])


def create_not(node: Node) -> Node:
    return Node(NOT, [node])


def _check_less_than_operand(node: Node) -> None:
    """compat: ComparisonExpression.checkLessThanOperand."""
    if node.tag == CONST:
        if node.value_kind in (jt.K_INT, jt.K_LONG, jt.K_DOUBLE):
            return
        raise runtime_error(f"Value '{node.java()}' cannot be compared.")
    if node.is_boolean:
        raise runtime_error(f"Value '{node.java()}' cannot be compared.")


def create_order(op: str, left: Node, right: Node) -> Node:
    """createGreaterThan, createGreaterThanEqual, createLessThan, createLessThanEqual."""
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    return Node(CMP, [left, right], op=op)


def create_equal(left: Node, right: Node) -> Node:
    """compat: ComparisonExpression.createEqual -- NULL is refused; TRUE = <non-boolean
    constant> is refused (only that way round)."""
    for node in (left, right):
        if node.tag == CONST and node.value_kind == jt.K_NULL:
            raise runtime_error(f"'{node.java()}' cannot be compared.")
    if left.tag == CONST and right.tag == CONST and left.is_boolean and not right.is_boolean:
        raise runtime_error(f"'{left.java()}' cannot be compared with '{right.java()}'")
    return Node(CMP, [left, right], op=EQ)


def create_is_null(node: Node, negated: bool) -> Node:
    """IS [NOT] NULL: an equality with NULL, without createEqual's checks."""
    equal = Node(CMP, [node, NULL_CONSTANT], op=EQ)
    return create_not(equal) if negated else equal


def create_between(value: Node, low: Node, high: Node, negated: bool) -> Node:
    """compat: ComparisonExpression.createBetween / createNotBetween."""
    if negated:
        return Node(OR, [create_order(LT, value, low), create_order(GT, value, high)])
    if low.tag == CONST and high.tag == CONST:
        if low.value_kind == jt.K_NULL or high.value_kind == jt.K_NULL:
            raise runtime_error("Illegal values of between, values can not be null!")
        try:
            order = jt.java_compare(high.value, high.value_kind, low.value, low.value_kind)
        except jt.EvalError as exc:
            text = str(exc)
            # a NumberFormatException comes wrapped in a RuntimeException, a cast error bare
            if text.startswith("java.lang.NumberFormatException"):
                raise runtime_error(text) from exc
            raise SelectorError(text) from exc
        if order < 0:
            raise runtime_error(
                "Illegal values of between, left value("
                f"{jt.java_str(low.value)}) must less than or equal to right value("
                f"{jt.java_str(high.value)})"
            )
    return Node(AND, [create_order(GE, value, low), create_order(LE, value, high)])


def create_in(node: Node, values: list[str], negated: bool) -> Node:
    """compat: ComparisonExpression.createInFilter -- only a property may be tested."""
    if node.tag != PROP:
        raise runtime_error(f"Expected a property for In expression, got: {node.java()}")
    return Node(IN, [node], values=values, negated=negated)


def create_text(op: str, node: Node, search: str, negated: bool) -> Node:
    """5.x's [NOT] CONTAINS / STARTSWITH / ENDSWITH: any operand, no check."""
    return Node(TEXT, [node], op=op, value=search, negated=negated)
