"""A JSON body's fields read as fastjson reads them into a Java object, with errors that name
the field: ``retryQueueNums: expected an integer, got 'x'`` rather than what Python's
``int()`` says. Every function raises ValueError, as any malformed body does.

compat: fastjson converts numeric text to a number field and leaves a primitive field at its
default when the value is null (FieldDeserializer.setValue); it refuses anything else.
"""

from __future__ import annotations

from typing import Any

_SHOWN = 40  # characters of a bad value a remark shows


def shown(value: Any) -> str:
    """A bad value as a remark names it: its kind for an object or array, else a short repr."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def as_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what}: expected an object, got {shown(value)}")
    return value


def integer(obj: dict[str, Any], key: str, default: int | None = None) -> int:
    """The field as an int; without ``default`` it must be there."""
    value = obj.get(key)
    if value is None:
        if default is None:
            raise ValueError(f"{key} is missing")
        return default
    return as_int(value, key)


def as_int(value: Any, what: str) -> int:
    """``value`` (a number, or numeric text) as an int."""
    if not isinstance(value, bool | dict | list):
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError(f"{what}: expected an integer, got {shown(value)}")


def text(obj: dict[str, Any], key: str, default: str | None = None) -> str:
    """The field as text; without ``default`` it must be there (Java's required fields)."""
    value = obj.get(key)
    if value is None:
        if default is None:
            raise ValueError(f"{key} is missing")
        return default
    if isinstance(value, dict | list):
        raise ValueError(f"{key}: expected text, got {shown(value)}")
    return str(value)


def array(obj: dict[str, Any], key: str) -> list[Any]:
    """The field as a list; null or absent is empty."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected an array, got {shown(value)}")
    return value
