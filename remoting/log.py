"""Loggers for code that programs import (remoting, the SDK).

A library must not print or configure logging on import. structlog, left unconfigured,
prints every call (debug included) to stdout, so these loggers ask at each call: when the
program configured structlog (our servers do, in
``aiorocketmq.remoting.runtime.configure_logging``), the call goes to structlog as before;
otherwise it goes to the standard ``logging`` logger of the same name, as ``event key=value ...``,
where the program's logging configuration decides (none: Python prints warnings and errors to
stderr, nothing else).

structlog is not imported here (it is no dependency of the SDK; importing it brings
``structlog.dev`` and, when installed, rich: tens of milliseconds): a program that configured
structlog has imported it, so a structlog absent from ``sys.modules`` is one nobody configured.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Protocol, cast


class _Structlog(Protocol):
    """The two functions of the ``structlog`` module used here."""

    def is_configured(self) -> bool: ...

    def get_logger(self, *args: Any, **initial_values: Any) -> Any: ...


class LibraryLogger:
    """``debug``/``info``/``warning``/``error``/``exception`` and ``bind``, as structlog's."""

    __slots__ = ("_context", "_name", "_std")

    def __init__(self, name: str, context: dict[str, Any] | None = None) -> None:
        self._name = name
        self._context = context or {}
        self._std = logging.getLogger(name)

    def bind(self, **values: Any) -> LibraryLogger:
        return LibraryLogger(self._name, {**self._context, **values})

    def debug(self, event: str, **values: Any) -> None:
        self._emit(logging.DEBUG, "debug", event, values)

    def info(self, event: str, **values: Any) -> None:
        self._emit(logging.INFO, "info", event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._emit(logging.WARNING, "warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._emit(logging.ERROR, "error", event, values)

    def exception(self, event: str, **values: Any) -> None:
        """Inside an ``except`` block: the event with the exception's traceback."""
        self._emit(logging.ERROR, "exception", event, values)

    def _emit(self, level: int, method: str, event: str, values: dict[str, Any]) -> None:
        configured = _configured_structlog()
        if configured is not None:
            getattr(configured.get_logger(self._name), method)(event, **self._context, **values)
            return
        if not self._std.isEnabledFor(level):
            return
        exc_info = values.pop("exc_info", method == "exception")
        fields = {**self._context, **values}
        text = " ".join([event, *(f"{k}={v!r}" for k, v in fields.items())])
        self._std.log(level, "%s", text, exc_info=exc_info)


def _configured_structlog() -> _Structlog | None:
    """structlog when the program imported and configured it, else None (never imports it)."""
    module = cast("_Structlog | None", sys.modules.get("structlog"))
    return module if module is not None and module.is_configured() else None


def get_logger(name: str) -> LibraryLogger:
    return LibraryLogger(name)
