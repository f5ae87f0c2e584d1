"""The one error a selector raises: its text is the remark the broker sends back."""

from __future__ import annotations


class SelectorError(ValueError):
    """A selector that does not compile: a syntax error, a type rule, or one of our limits.

    ``str(e)`` is the remark of the SUBSCRIPTION_PARSE_FAILED (23) answer.
    """


def java_remark(java_class: str, message: str | None) -> str:
    """What Java's broker sends for a compile error: ``MQFilterException.getMessage()``.

    compat: MQFilterException(String, Throwable) -- super(cause) makes the message the cause's
    toString(): its class name, then ": " and its message when it has one.
    """
    return java_class if message is None else f"{java_class}: {message}"


RUNTIME = "java.lang.RuntimeException"
PARSE = "org.apache.rocketmq.filter.parser.ParseException"
NUMBER_FORMAT = "java.lang.NumberFormatException"
