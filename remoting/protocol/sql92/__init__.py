"""SQL92 message selectors as Apache RocketMQ's broker reads them (4.9.8's language plus 5.x's
[NOT] CONTAINS / STARTSWITH / ENDSWITH), without I/O.

``compile_selector(text)`` checks a selector once (SelectorError: the remark Java's broker
would send with SUBSCRIPTION_PARSE_FAILED, or one naming our limits); ``Selector.matches``
then tells, per message, whether the broker delivers it. Java's clients never filter SQL92
results again, so the rules are Java's to the letter: a property's text is converted to the
type of the constant it is compared with, a missing property makes a condition unknown, and
an evaluation Java would throw on (``a > 5`` with a = "x") is a message not delivered.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final

from aiorocketmq.remoting.protocol.sql92.errors import SelectorError
from aiorocketmq.remoting.protocol.sql92.evaluator import Eval, EvalError, build
from aiorocketmq.remoting.protocol.sql92.limits import (
    MAX_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_IN_LIST,
    MAX_NODES,
)
from aiorocketmq.remoting.protocol.sql92.parser import parse

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSION_LENGTH",
    "MAX_IN_LIST",
    "MAX_NODES",
    "Selector",
    "SelectorError",
    "compile_selector",
]

# compat: SelectorParser.PARSE_CACHE -- the last 100 selectors, refusals included (ali-ons
# sends its selector in every pull header)
CACHE_SIZE: Final = 100


class Selector:
    """A compiled selector: ``matches`` is what the broker asks of every message."""

    __slots__ = ("_fn", "expression")

    def __init__(self, expression: str, fn: Eval) -> None:
        self.expression = expression
        self._fn = fn

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with these properties is delivered: only when the selector is
        TRUE; FALSE, unknown (a missing property) and an evaluation error are not.

        compat: ExpressionMessageFilter.isMatchedByCommitLog -- an exception is logged there
        and the message skipped; here it is simply False.
        """
        try:
            return self._fn(properties) is True
        except EvalError:
            return False

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


def compile_selector(expression: str) -> Selector:
    """Compiles a selector; SelectorError (its text is the remark for the client) if refused."""
    outcome = _compiled(expression)
    if isinstance(outcome, str):
        raise SelectorError(outcome)
    return outcome


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled(expression: str) -> Selector | str:
    try:
        return _compile(expression)
    except SelectorError as exc:
        return str(exc)


def _compile(expression: str) -> Selector:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SelectorError(
            f"SQL92 selector of {len(expression)} characters: the limit is "
            f"{MAX_EXPRESSION_LENGTH} (sql92.MAX_EXPRESSION_LENGTH)"
        )
    return Selector(expression, build(parse(expression)))
