"""Our bounds on a selector (Apache has none): what a hostile subscription can cost.

A selector over any bound is refused at compile time with a remark naming the bound, so the
broker answers SUBSCRIPTION_PARSE_FAILED (23) and never spends more than a bounded time on
it: compiling the largest accepted selector takes well under a millisecond or two, and one
evaluation walks at most MAX_NODES nodes. Real selectors are a few terms long.
"""

from __future__ import annotations

from typing import Final

# characters in the selector's text (Java strings; a pull header carries it in every pull)
MAX_EXPRESSION_LENGTH: Final = 16384
# nesting: parentheses, NOT / - / + prefixes, and = / IS NULL chains, each level counting one
MAX_DEPTH: Final = 32
# expression nodes (properties, constants, operators); an IN list counts as one
MAX_NODES: Final = 512
# strings in the IN ( ... ) lists, all lists together
MAX_IN_LIST: Final = 1024
