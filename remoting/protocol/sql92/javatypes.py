"""Java's value rules the selector mirrors: parsing numbers from text, comparing, printing.

A selector value is one of Java's ``Boolean`` (bool), ``Integer`` or ``Long`` (int, the kind
kept apart: each parses text its own way), ``Double`` (float) or ``String`` (str); ``None`` is
Java's null. A raised ``EvalError`` is Java's exception during evaluation: the message is not
delivered.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Final

# the Java class of a value (ComparisonExpression.__compare switches on it)
K_NULL: Final = 0
K_BOOL: Final = 1
K_INT: Final = 2
K_LONG: Final = 3
K_DOUBLE: Final = 4
K_STR: Final = 5

INT_MIN: Final = -(2**31)
INT_MAX: Final = 2**31 - 1
LONG_MIN: Final = -(2**63)
LONG_MAX: Final = 2**63 - 1

# compat: Integer.parseInt -- a sign, then digits (Character.digit: any Unicode decimal digit)
_INTEGER = re.compile(r"[+-]?\d+")
# compat: FloatingDecimal.readJavaFormatString -- what Double.valueOf accepts after trim()
_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)",
    re.ASCII,
)

_PLAIN_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class EvalError(Exception):
    """Java threw while evaluating (a number that does not parse, a bad cast); the text is
    the Java exception's toString(), which a compile-time check may quote."""


def _input_error(text: str) -> EvalError:
    return EvalError(f'java.lang.NumberFormatException: For input string: "{text}"')


def parse_int(text: str) -> int:
    """``Integer.valueOf(text)``; EvalError where Java throws NumberFormatException."""
    if len(text) < 10 and text.isascii() and text.isdigit():
        return int(text)  # the common case: a few ASCII digits, always in range
    if _INTEGER.fullmatch(text) is None:
        raise _input_error(text)
    value = int(text)
    if value < INT_MIN or value > INT_MAX:
        raise _input_error(text)
    return value


def parse_long(text: str) -> int:
    """``Long.valueOf(text)``."""
    if len(text) < 19 and text.isascii() and text.isdigit():
        return int(text)
    if _INTEGER.fullmatch(text) is None:
        raise _input_error(text)
    value = int(text)
    if value < LONG_MIN or value > LONG_MAX:
        raise _input_error(text)
    return value


def parse_double(text: str) -> float:
    """``Double.valueOf(text)``: trims characters up to U+0020 first, as String.trim."""
    if _PLAIN_DOUBLE.fullmatch(text) is not None:
        return float(text)  # the common case: Python reads these digits as Java does
    start = 0
    end = len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    body = text[start:end]
    if not body:
        raise EvalError("java.lang.NumberFormatException: empty String")
    if _DOUBLE.fullmatch(body) is None:
        raise _input_error(body)
    if body[-1] in "fFdD":  # both forms end in a decimal digit (or "."), then the suffix
        body = body[:-1]
    if "NaN" in body:
        return math.nan
    if "Infinity" in body:
        return -math.inf if body[0] == "-" else math.inf
    if "x" in body or "X" in body:
        return float.fromhex(body)
    return float(body)


def parse_boolean(text: str) -> bool:
    """``Boolean.valueOf(text)``: "true" in any case, anything else is false (never throws)."""
    return len(text) == 4 and text.lower() == "true"


def compare_double(left: float, right: float) -> int:
    """``Double.compare``: NaN above everything and equal to itself, -0.0 below 0.0."""
    if left < right:
        return -1
    if left > right:
        return 1
    if left == right:
        if left == 0.0:
            return int(math.copysign(1.0, left) > 0) - int(math.copysign(1.0, right) > 0)
        return 0
    left_nan = math.isnan(left)
    right_nan = math.isnan(right)
    if left_nan and right_nan:
        return 0
    return 1 if left_nan else -1


def kind_of(value: object) -> int:
    """The Java class of a value computed at run time: a property (String) or a Boolean."""
    if value is None:
        return K_NULL
    if isinstance(value, str):
        return K_STR
    if isinstance(value, bool):
        return K_BOOL
    if isinstance(value, float):
        return K_DOUBLE
    return K_INT


def java_double_str(value: float) -> str:
    """``Double.toString``: shortest digits, ``1.0E10`` outside [1e-3, 1e7)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    digits, exponent = _shortest(magnitude)
    if 1e-3 <= magnitude < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    fraction = digits[1:] or "0"
    return f"{sign}{digits[0]}.{fraction}E{exponent}"


def _shortest(magnitude: float) -> tuple[str, int]:
    """The shortest round-trip digits of a positive finite float (repr's), and the exponent
    of the first one."""
    _, digit_tuple, exp = Decimal(repr(magnitude)).normalize().as_tuple()
    assert isinstance(exp, int)
    digits = "".join(str(d) for d in digit_tuple)
    return digits, exp + len(digits) - 1


def java_str(value: object) -> str:
    """``String.valueOf`` of a selector value (String.format's ``%s``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    return str(value)


def java_string_hash(text: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | (data[i + 1] << 8))) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_hashset_order(items: list[str]) -> list[str]:
    """The iteration order of ``new HashSet<>(items)``: buckets by spread hash, then insertion.

    compat: UnaryExpression.createInExpression -- an IN list of 5 or more is a HashSet, and
    its toString (in a "cannot be compared" remark) lists the elements in that order.
    """
    capacity = 1
    wanted = max(int(len(items) / 0.75) + 1, 16)
    while capacity < wanted:
        capacity <<= 1
    buckets: dict[int, list[str]] = {}
    seen: set[str] = set()
    for item in items:
        if item in seen:
            continue
        seen.add(item)
        h = java_string_hash(item) & 0xFFFFFFFF
        spread = h ^ (h >> 16)
        buckets.setdefault(spread & (capacity - 1), []).append(item)
    return [item for index in sorted(buckets) for item in buckets[index]]


_CLASS_CAST = (
    "java.lang.ClassCastException: class java.lang.Boolean cannot be cast to class "
    "java.lang.String (java.lang.Boolean and java.lang.String are in module java.base of "
    "loader 'bootstrap')"
)


def java_compare(left: object, left_kind: int, right: object, right_kind: int) -> int:
    """``ComparisonExpression.__compare`` with CONVERT_STRING_EXPRESSIONS on: the sign of
    ``left.compareTo(right)`` after Java's conversions; EvalError where Java throws.

    Neither value is null. Mixed classes: Integer < Long < Double widen; a String beside a
    number or a Boolean is parsed as that type; any other mix compares as -1 (not equal).
    """
    if left_kind != right_kind:
        if left_kind == K_BOOL:
            if right_kind == K_STR:
                # compat: __compare casts the Boolean itself to String: ClassCastException
                raise EvalError(_CLASS_CAST)
            return -1
        if left_kind in (K_INT, K_LONG):
            if right_kind in (K_INT, K_LONG):
                pass
            elif right_kind == K_DOUBLE:
                left = float(left)  # type: ignore[arg-type]
            elif right_kind == K_STR:
                assert isinstance(right, str)
                right = parse_int(right) if left_kind == K_INT else parse_long(right)
            else:
                return -1
        elif left_kind == K_DOUBLE:
            if right_kind in (K_INT, K_LONG):
                right = float(right)  # type: ignore[arg-type]
            elif right_kind == K_STR:
                assert isinstance(right, str)
                right = parse_double(right)
            else:
                return -1
        elif left_kind == K_STR:
            assert isinstance(left, str)
            if right_kind == K_BOOL:
                left = parse_boolean(left)
            elif right_kind == K_INT:
                left = parse_int(left)
            elif right_kind == K_LONG:
                left = parse_long(left)
            elif right_kind == K_DOUBLE:
                left = parse_double(left)
            else:
                return -1
        else:
            return -1
    return compare_same(left, right)


def compare_same(left: object, right: object) -> int:
    """``compareTo`` of two values of one Java class (ints of Integer or Long alike)."""
    if isinstance(left, float) or isinstance(right, float):
        assert isinstance(left, float) and isinstance(right, float)
        return compare_double(left, right)
    if isinstance(left, str):
        assert isinstance(right, str)
        if left == right:
            return 0
        # String.compareTo orders UTF-16 code units
        return (
            -1
            if left.encode("utf-16-be", "surrogatepass")
            < right.encode("utf-16-be", "surrogatepass")
            else 1
        )
    assert isinstance(left, int) and isinstance(right, int)  # bool is an int: False < True
    return (left > right) - (left < right)
