"""The hot modules run compiled (mypyc, setup.py) wherever a C compiler is, and their
pure-Python sources -- what runs without one -- pass a lean subset of the suite too."""

from __future__ import annotations

import ast
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXT = sysconfig.get_config_var("EXT_SUFFIX")

# protocol codec, store (put, get, index, fsync failures, recovery's tail check), a broker's
# sends and pulls, the SDK producer over two brokers; ~20 s on an idle machine
SUBSET = [
    "tests/protocol/test_frame.py",
    "tests/protocol/test_message.py",
    "tests/protocol/test_msgid.py",
    "tests/protocol/test_serialize.py",
    "tests/store/test_batch_atomic.py",
    "tests/store/test_get.py",
    "tests/store/test_index_query.py",
    "tests/store/test_io_errors.py",
    "tests/store/test_recovery.py::test_a_clean_start_leaves_the_rest_of_the_log_unread",
    "tests/broker/test_pull.py::test_every_pull_outcome",
    "tests/client/test_producer.py::test_sends_spread_over_every_queue_of_both_brokers[json]",
]


def compiled_modules() -> list[str]:
    """setup.py's COMPILED, as module names: the folders install as aiorocketmq.<folder>."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    paths = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "COMPILED"
    )
    return [
        "aiorocketmq." + p.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for p in paths
    ]


def origins(modules: list[str], root: Path = ROOT) -> dict[str, str]:
    """Where each module is imported from, ``root`` first on the path (in a new process)."""
    code = "import importlib.util as u, sys\nfor m in sys.argv[1:]: print(u.find_spec(m).origin)"
    out = subprocess.run([sys.executable, "-c", code, *modules],
                         cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    return dict(zip(modules, out.stdout.split(), strict=True))


def have_compiler(tmp: Path) -> bool:
    """Whether the C compiler a build would use compiles a file."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    src = tmp / "probe.c"
    src.write_text("int probe(void) { return 0; }\n")
    try:
        done = subprocess.run([*shlex.split(cc), "-c", str(src), "-o", str(tmp / "probe.o")],
                              capture_output=True, timeout=60)  # fmt: skip
    except OSError:
        return False
    return done.returncode == 0


def test_the_hot_modules_run_compiled_where_a_compiler_is(tmp_path: Path) -> None:
    if os.environ.get("AIOROCKETMQ_PURE", "") not in ("", "0"):
        pytest.skip("AIOROCKETMQ_PURE is set: the build compiles nothing")
    if not have_compiler(tmp_path):
        pytest.skip("no working C compiler: the pure-Python modules are what runs")
    modules = compiled_modules()
    assert "aiorocketmq.broker.store.segment" in modules
    pure = [m for m, path in origins(modules).items() if not path.endswith(EXT)]
    assert not pure, (
        f"not compiled: {pure}; reinstall: touch setup.py && make setup "
        "(.venv/bin/pip install -v -e . says why a build fell back)"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_pure_python_modules_pass_a_lean_subset(tmp_path: Path) -> None:
    store = "aiorocketmq.broker.store.store"
    if not origins([store])[store].endswith(EXT):
        pytest.skip("the suite itself runs the pure-Python modules here")
    copy = tmp_path / "src"
    skip = shutil.ignore_patterns("*.so", "__pycache__", "node_modules", ".hypothesis")
    # laid out as installed (aiorocketmq/<folder>), so the copy's folders are found before the
    # editable install's mapping to the compiled ones
    shutil.copytree(ROOT / "aiorocketmq", copy / "aiorocketmq", ignore=skip)
    for name in ("remoting", "broker", "client", "namesrv", "spark"):
        shutil.copytree(ROOT / name, copy / "aiorocketmq" / name, ignore=skip)
    shutil.copytree(ROOT / "tests", copy / "tests", ignore=skip)
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy2(ROOT / name, copy / name)
    found = origins(compiled_modules(), copy)
    compiled = [
        m for m, path in found.items() if not path.startswith(f"{copy}/") or path.endswith(EXT)
    ]
    assert not compiled, f"the copy still imports compiled modules: {compiled}"
    # the brokers the subset starts run from the copy too (tests/harness.py: cwd=ROOT)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
