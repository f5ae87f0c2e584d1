"""docs/compatibility.md stays true to the suite: every fidelity row D1-D19 has a row, every
row has a known state, and every test it cites exists (issue 13: "docs/compatibility.md is
true")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
CITE = re.compile(r"`([\w/]+\.py)(?:::([\w\[\]/-]+))?`")
SHORT = re.compile(r"`::(\w+)`")
STATES = ("fixed", "deliberate", "open", "works")


def rows() -> list[list[str]]:
    lines = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return [
        c for c in cells if not set(c[0]) <= {"-", " "} and c[0] not in ("row", "what", "command")
    ]


def test_every_fidelity_row_is_there() -> None:
    ids = {r[0] for r in rows()}
    assert {f"D{n}" for n in range(1, 20)} <= ids


def test_every_row_has_a_state() -> None:
    for row in rows():
        assert any(state in " ".join(row[1:]) for state in STATES), row


def test_every_cited_test_exists() -> None:
    names: dict[Path, set[str]] = {}
    for row in rows():
        last: Path | None = None
        for cell in row:
            for path, name, short in _cites(cell):
                file = ROOT / "tests" / path if path else last
                assert file is not None and file.exists(), (row[0], path)
                last = file
                wanted = name or short
                if wanted:
                    have = names.setdefault(file, _test_names(file))
                    assert wanted.split("[")[0] in have, (row[0], file.name, wanted)


def _cites(cell: str) -> list[tuple[str, str, str]]:
    found = [(m.start(), m.group(1), m.group(2) or "", "") for m in CITE.finditer(cell)]
    found += [(m.start(), "", "", m.group(1)) for m in SHORT.finditer(cell)]
    return [(path, name, short) for _, path, name, short in sorted(found)]


def _test_names(file: Path) -> set[str]:
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_every_mqadmin_command_has_a_row() -> None:
    """Issue 19 "Done when": docs/compatibility.md lists every mqadmin command with its state."""
    from aiorocketmq.client.admin.cli import load_commands

    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Our mqadmin compared with 4.9.8's", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| command"):
            first = line.strip("|").split("|")[0]
            listed |= set(re.findall(r"\b([a-z][A-Za-z]+)\b", first))
    assert set(load_commands()) <= listed, sorted(set(load_commands()) - listed)
