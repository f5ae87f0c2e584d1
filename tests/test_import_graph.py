"""No import circle anywhere in the product tree (issue 30): the six folders read as
``aiorocketmq.<folder>`` and the root package, every import counted -- ``if TYPE_CHECKING:``
ones and imports inside functions too, as grimp (import-linter's graph) counts them. A circle
is reported as its chain of modules, ``a -> b -> a``.

The graph is read with ``ast`` from the source files, not by importing them: an import
that only the type checker follows is still an arrow a reader has to walk back up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("remoting", "namesrv", "broker", "client", "spark", "deploy")
PACKAGE = "aiorocketmq"


def modules(root: Path, folders: Iterable[str], package: str) -> dict[str, Path]:
    """Every module of ``folders`` (under ``root``) by its installed name (package-dir:
    ``broker/store/store.py`` is ``aiorocketmq.broker.store.store``), and the root's own
    ``aiorocketmq/__init__.py`` (the SDK's face)."""
    found: dict[str, Path] = {}
    if (face := root / package / "__init__.py").exists():
        found[package] = face
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its text. ``from
    p import x`` is an arrow to ``p.x`` when that is a module, else to ``p`` (grimp's rule)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package this module is in (or is)
                here = name.split(".")
                keep = len(here) - node.level + (1 if is_package else 0)
                base = ".".join(here[:keep] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in known else base for t in targets]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import a.b.c`` of a name inside c
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(root: Path, folders: Iterable[str], package: str) -> dict[str, set[str]]:
    known = modules(root, folders, package)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def circles(arrows: Mapping[str, set[str]]) -> list[list[str]]:
    """One chain per strongly connected group of modules (Tarjan): the shortest circle
    through its first module, ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:  # iterative: no recursion limit on a deep tree
        work = [(start, iter(sorted(arrows.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            for nxt in todo:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(arrows.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return sorted(_chain(group, arrows) for group in groups)


def _chain(group: set[str], arrows: Mapping[str, set[str]]) -> list[str]:
    """The shortest path from the group's first module back to itself, inside the group."""
    first = min(group)
    came: dict[str, str] = {}
    frontier = [first]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(arrows[node] & group):
                if nxt == first:
                    chain = [node]
                    while chain[-1] != first:
                        chain.append(came[chain[-1]])
                    return [*reversed(chain), first]
                if nxt not in came:
                    came[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no circle through {first}")  # a strongly connected group has one


def test_no_import_circle_in_the_product_tree() -> None:
    found = circles(graph(ROOT, FOLDERS, PACKAGE))
    assert found == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_a_circle_is_found_and_shown_as_its_chain(tmp_path: Path) -> None:
    """The check can fail: a type-only import back up, a relative one and a lazy one close
    circles of a small tree; a plain layered import does not."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from aiorocketmq.pkg.b import B\n",
        "pkg/b.py": "from aiorocketmq.pkg import c\n",
        "pkg/c.py": "import aiorocketmq.pkg.a\n",
        "pkg/sub/__init__.py": "from .d import D\n",
        "pkg/sub/d.py": "def f():\n    from aiorocketmq.pkg.sub import e\n",
        "pkg/sub/e.py": "from .. import sub\nfrom aiorocketmq.pkg.b import x\n",
        "other/__init__.py": "",
        "other/f.py": "from aiorocketmq.pkg.a import A\nimport os\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert circles(graph(tmp_path, ["pkg", "other"], PACKAGE)) == [
        ["aiorocketmq.pkg.a", "aiorocketmq.pkg.b", "aiorocketmq.pkg.c", "aiorocketmq.pkg.a"],
        [
            "aiorocketmq.pkg.sub",
            "aiorocketmq.pkg.sub.d",
            "aiorocketmq.pkg.sub.e",
            "aiorocketmq.pkg.sub",
        ],
    ]
