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

from aiorocketmq.remoting.protocol.sql92.errors import SelectorError
from aiorocketmq.remoting.protocol.sql92.limits import (
    MAX_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_IN_LIST,
    MAX_NODES,
)
from aiorocketmq.remoting.protocol.sql92.selector import (
    Selector,
    compile_selector,
    compile_uncached,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSION_LENGTH",
    "MAX_IN_LIST",
    "MAX_NODES",
    "Selector",
    "SelectorError",
    "compile_selector",
    "compile_uncached",
]
