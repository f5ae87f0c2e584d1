"""Process runtime: logging set-up, common command-line flags, and ``run(serve)`` under uvloop.

Only entry points call this module; ``client`` and ``spark`` never configure logging.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TextIO

import structlog
import uvloop

from aiorocketmq.remoting.config import Value, build, dump, load_values, warn_unknown
from aiorocketmq.remoting.errors import ConfigError

log = structlog.get_logger(__name__)

Serve = Callable[[asyncio.Event], Awaitable[None]]

# SIGHUP too: closing the terminal of `make run` must stop the servers, not orphan them
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class LogOutput:
    """Where log lines go: a text stream whose failures never reach the code that logged.

    At the first failed write (a broken pipe, a hung-up terminal, a closed file) logging stops
    for good and the stream's descriptor is pointed at /dev/null, so that neither later writes
    nor the interpreter's exit-time flush can fail: a lost reader must never stop a server
    from serving or from stopping.
    """

    def __init__(self, file: TextIO | None) -> None:
        self.file = file  # None when the process started with fd 1 closed
        self.broken = False
        self._lock = threading.Lock()  # store threads log too; keep lines whole

    def write_line(self, line: str) -> None:
        with self._lock:
            if self.broken or self.file is None:
                return
            try:
                try:
                    self.file.write(line + "\n")
                except UnicodeError:  # not in the stream's encoding: escape it, carry on
                    self.file.write(line.encode("ascii", "backslashreplace").decode() + "\n")
                self.file.flush()
            except (OSError, ValueError):
                self.broken = True
                _discard(self.file)


def _discard(file: TextIO) -> None:
    """Point ``file``'s descriptor (and stderr's, when it is the same pipe or terminal) at
    /dev/null, then flush what the failed write left buffered into it."""
    try:
        fd = file.fileno()
    except (OSError, ValueError):
        return  # closed: nothing is buffered, and the interpreter skips it at exit
    fds = [fd]
    with contextlib.suppress(OSError):  # OSError: one of them is not open
        if fd != 2 and os.path.sameopenfile(fd, 2):
            fds.append(2)
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            for target in fds:
                os.dup2(devnull, target)
        finally:
            os.close(devnull)
    with contextlib.suppress(OSError, ValueError):
        file.flush()


class SafePrintLogger:
    """structlog's ``PrintLogger`` with a ``LogOutput`` underneath: logging never raises."""

    def __init__(self, output: LogOutput) -> None:
        self._output = output

    def msg(self, message: str) -> None:
        self._output.write_line(message)

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def configure_logging(level: str = "info", json: bool | None = None) -> None:
    """structlog to stdout: JSON when stdout is not a terminal (or ``json=True``), else console.

    Writing a log line never raises: once stdout is gone, log lines are dropped (``LogOutput``).
    """
    if json is None:
        json = not _isatty(sys.stdout)
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json:
        processors.append(structlog.processors.format_exc_info)
    logger = SafePrintLogger(LogOutput(sys.stdout))  # one for all: it has no state of its own
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=lambda *_: logger,
        cache_logger_on_first_use=True,
    )


def _isatty(file: TextIO | None) -> bool:
    try:
        return file is not None and file.isatty()
    except (OSError, ValueError):
        return False


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``-c FILE``, ``--set key=value``, ``--listen-port N``, ``-p``, ``--log-level``,
    ``--log-format``."""
    parser.add_argument("-c", "--config", metavar="FILE", help="RocketMQ-style key=value file")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument(
        "-p", "--print-config", action="store_true", help="print the effective config and exit"
    )
    parser.add_argument(
        "--listen-port", type=int, metavar="N", help="overrides listenPort; 0 = any free port"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument("--log-format", choices=["json", "console"], default=None)


def load_configs(
    args: argparse.Namespace, classes: Sequence[type], defaults: Mapping[str, str] | None = None
) -> list[Any]:
    """Build one object per class from ``defaults`` < ``-c`` < ``--set`` < ``--listen-port``;
    unknown keys are warned about."""
    values = {k: Value(v, "default") for k, v in (defaults or {}).items()}
    values.update(load_values(args.config, args.set))
    if args.listen_port is not None:
        values["listenPort"] = Value(str(args.listen_port), "--listen-port")
    objects: list[Any] = [build(cls, values) for cls in classes]
    if not args.print_config:
        warn_unknown(values, classes)
    return objects


def print_config(*objects: Any) -> None:
    sys.stdout.write(dump(*objects))


def run(serve: Serve, *, log_level: str = "info", log_format: str | None = None) -> int:
    """Run ``serve(stop)`` under uvloop until it returns; SIGINT/SIGTERM/SIGHUP set ``stop``.

    A second signal forces exit. Returns the process exit code: 0 after a clean stop, 1 when
    start-up or serving failed (logged).
    """
    configure_logging(log_level, None if log_format is None else log_format == "json")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(_serve(serve))


async def _serve(serve: Serve) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            log.warning("forced_exit", signal=signal.Signals(signum).name)
            os._exit(128 + signum)
        stop.set()
        log.info("stopping", signal=signal.Signals(signum).name)

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await serve(stop)
    except ConfigError as exc:
        log.error("config_error", error=str(exc))
        return 1
    except OSError as exc:
        log.error("start_failed", error=str(exc))
        return 1
    except Exception:  # broad catch 3 of 3: the last resort, log it and exit 1
        log.exception("fatal")
        return 1
    log.info("stopped")
    return 0


def config_error_exit(exc: ConfigError) -> int:
    """Report a configuration error as one line on stderr; the exit code is 1."""
    sys.stderr.write(f"config error: {exc}\n")
    return 1
