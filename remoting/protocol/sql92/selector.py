"""The compiled selector the broker asks about every message, and the cache of compilations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aiorocketmq.remoting.protocol.sql92.errors import SelectorError
from aiorocketmq.remoting.protocol.sql92.evaluator import Eval, EvalError, build
from aiorocketmq.remoting.protocol.sql92.limits import MAX_EXPRESSION_LENGTH
from aiorocketmq.remoting.protocol.sql92.nodes import property_names
from aiorocketmq.remoting.protocol.sql92.parser import parse

# compat: SelectorParser.PARSE_CACHE -- the last 100 selectors, refusals included (ali-ons
# sends its selector in every pull header); here the oldest entry goes first
CACHE_SIZE: Final = 100
_cache: dict[str, Selector | str] = {}


class Selector:
    """A compiled selector: ``matches`` is what the broker asks of every message."""

    __slots__ = ("_fn", "expression", "names")

    def __init__(self, expression: str, fn: Eval, names: list[str]) -> None:
        self.expression = expression
        self._fn = fn
        self.names = names  # the properties it may ask ``matches``'s mapping for

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with these properties is delivered: only when the selector is
        TRUE; FALSE, unknown (a missing property) and an evaluation error are not.

        compat: ExpressionMessageFilter.isMatchedByCommitLog -- Java logs the exception and
        skips the message; here it is simply False.
        """
        try:
            return self._fn(properties) is True
        except EvalError:
            return False

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


def compile_selector(expression: str) -> Selector:
    """Compiles a selector; SelectorError (its text is the remark for the client) if refused."""
    if len(expression) > MAX_EXPRESSION_LENGTH:  # refused before the cache: never kept
        compile_uncached(expression)
    outcome = _cache.get(expression)
    if outcome is None:
        outcome = _outcome(expression)
        if len(_cache) >= CACHE_SIZE:
            # another thread may have evicted it already: a miss is harmless
            _cache.pop(next(iter(_cache), ""), None)
        _cache[expression] = outcome
    if isinstance(outcome, str):
        raise SelectorError(outcome)
    return outcome


def _outcome(expression: str) -> Selector | str:
    try:
        return compile_uncached(expression)
    except SelectorError as exc:
        return str(exc)


def compile_uncached(expression: str) -> Selector:
    """compile_selector without the cache (benchmarks and tests time the work itself)."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SelectorError(
            f"SQL92 selector of {len(expression)} characters: the limit is "
            f"{MAX_EXPRESSION_LENGTH} (sql92.MAX_EXPRESSION_LENGTH)"
        )
    tree = parse(expression)
    return Selector(expression, build(tree), property_names(tree))
