"""MessageSelector: which messages of a topic a consumer wants (Java's MessageSelector) -- tags,
matched by their hash codes, or an SQL92 expression over the message's properties, which the
broker evaluates (with ``enablePropertyFilter=true``) and the consumer never re-checks.

    consumer.subscribe("Orders", MessageSelector.by_sql("region = 'eu' AND amount > 100"))
    consumer.subscribe("Orders", "TagA || TagB")      # a string is a tag expression
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from aiorocketmq.remoting.protocol.heartbeat import SUB_ALL, SubscriptionData


class ExpressionType(enum.StrEnum):
    """ExpressionType: how a subscription's expression is read."""

    TAG = "TAG"
    SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """A subscription's expression and its type; build one with ``by_tag`` or ``by_sql``."""

    expression_type: ExpressionType
    expression: str

    @classmethod
    def by_tag(cls, tags: str | None = SUB_ALL) -> MessageSelector:
        """``"*"`` (or None, empty) for every message, or ``"TagA || TagB"``."""
        return cls(ExpressionType.TAG, (tags or "").strip() or SUB_ALL)

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        """An SQL92 expression over the message's properties (``a > 5 AND b = 'x'``; TAGS and
        KEYS are properties too). The broker must run with ``enablePropertyFilter=true``:
        the consumer's start fails with its refusal otherwise, and with the parser's message
        (code 23) for an expression it cannot read."""
        if not sql or not sql.strip():
            raise ValueError("an SQL92 expression can not be null or empty")
        return cls(ExpressionType.SQL92, sql)

    def subscription(self, topic: str, version: int = 0) -> SubscriptionData:
        """FilterAPI.build: the SubscriptionData heartbeats and pulls carry."""
        return SubscriptionData.build(topic, self.expression, self.expression_type.value, version)


def selector_of(expression: str | MessageSelector | None) -> MessageSelector:
    """A subscribe() argument as a selector: a string is a tag expression."""
    if isinstance(expression, MessageSelector):
        return expression
    return MessageSelector.by_tag(expression)
