"""What a command returns, and its two renderings: rich tables for people, JSON for scripts.

A command fills ``Output.data`` with plain JSON values (what ``--json`` prints, one document)
and ``tables`` / ``lines`` with what a person reads. ``failed`` makes mqadmin exit 1 after
printing (e.g. one broker of several did not answer: the others' rows are still shown).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text


@dataclass(slots=True)
class Table:
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str | None = None

    @classmethod
    def of(
        cls, columns: Mapping[str, str], records: Iterable[Mapping[str, Any]], title: str = ""
    ) -> Table:
        """A table of ``records``: ``columns`` maps each header to its record key."""
        rows = [[rec.get(key, "") for key in columns.values()] for rec in records]
        return cls(list(columns), rows, title or None)

    @classmethod
    def pairs(cls, items: Iterable[tuple[str, Any]], title: str = "") -> Table:
        """A two-column key / value table."""
        return cls(["Key", "Value"], [[k, v] for k, v in items], title or None)


@dataclass(slots=True)
class Output:
    data: Any = None
    tables: list[Table] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    failed: bool = False

    @classmethod
    def message(cls, text: str, data: Any = None, *, failed: bool = False) -> Output:
        """A one-line result (e.g. "create topic to 127.0.0.1:10911 success.")."""
        return cls(data=data if data is not None else {"message": text}, lines=[text],
                   failed=failed)  # fmt: skip


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def render_json(out: Output, stream: TextIO) -> None:
    json.dump(out.data, stream, ensure_ascii=False, indent=2, sort_keys=False, default=str)
    stream.write("\n")


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away: mqadmin's ``main`` ends quietly, as for ``--json`` (rich's own
        handler would exit 1, which reads as a failed command)."""
        self.quiet = True
        raise BrokenPipeError


def _console(stream: TextIO) -> Console:
    """A terminal gets its own width; a pipe or file gets wide lines, never wrapped cells."""
    tty = stream.isatty()
    width = shutil.get_terminal_size((120, 24)).columns if tty else 100_000
    return _Console(file=stream, width=width, highlight=False, soft_wrap=not tty,
                   color_system="auto" if tty else None)  # fmt: skip


def render_tables(out: Output, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    console = _console(stream)
    for table in out.tables:
        console.print(_rich(table))
    for line in out.lines:
        console.print(line, markup=False)


def _rich(table: Table) -> RichTable:
    """Titles and cells are plain text: brackets in them ("[TagA]") are not rich markup."""
    title = Text(table.title) if table.title else None
    rich = RichTable(title=title, box=box.SIMPLE_HEAD, title_justify="left",
                      show_edge=False, pad_edge=False)  # fmt: skip
    for name in table.columns:
        rich.add_column(Text(name), overflow="fold")
    for row in table.rows:
        rich.add_row(*(Text(cell(v)) for v in row))
    return rich


def records(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in rows]
