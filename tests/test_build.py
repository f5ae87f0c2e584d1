"""The build of the compiled modules (setup.py, the Makefile's install step) says what it does
while it does it, and a rebuild compiles only the C files that changed (issue 31).

The make test builds into an empty venv from a copy of the sources with ``CC=/bin/false``:
mypyc writes the C, every compile fails at once and the install falls back to pure Python,
so the suite compiles no C for it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.harness import ROOT
from tests.test_compiled import compiled_modules, have_compiler

FOLDERS = ("aiorocketmq", "remoting", "namesrv", "broker", "client", "spark", "deploy")


def setup_script() -> ModuleType:
    """setup.py as a module (it calls setup() only when run as setuptools runs it)."""
    spec = importlib.util.spec_from_file_location("aiorocketmq_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_make_setup_says_each_step_of_the_compile(tmp_path: Path) -> None:
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "node_modules", "build")
    for name in FOLDERS:
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md", "Makefile"):
        shutil.copy2(ROOT / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # the SDK's two dependencies, for the last line's import; the Makefile's first step
    # (every dependency, pyspark's hundreds of MB) counts as done
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "msgpack", "mypy-extensions"],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    (venv / ".dependencies").touch()
    env = {k: v for k, v in os.environ.items() if k not in ("AIOROCKETMQ_PURE", "MYPYC")}
    env |= {"CC": "/bin/false", "MAKEFLAGS": ""}
    done = subprocess.run(
        ["make", "--no-print-directory", "setup", f"VENV={venv}"],
        cwd=src, env=env, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    lines = out.splitlines()
    modules = len(compiled_modules())
    assert lines[0].startswith("== installing aiorocketmq into"), out
    # pip's and the compilers' own output stays in the log; setup.py's lines are shown
    assert all(line.startswith(("==", "  aiorocketmq: ")) for line in lines), out
    assert "Running command" in (src / "build" / "install.log").read_text()
    said = [line.removeprefix("  aiorocketmq: ") for line in lines[1:-2]]
    # mypyc runs for the build alone, not again for each of pip's metadata questions
    assert said[0] == f"mypyc: type-checking the {modules} hot modules and writing their C", out
    assert re.fullmatch(r"mypyc: wrote the C in \d+ s", said[1]), out
    plan = re.fullmatch(
        r"compiling (\d+) C files \(\d+\.\d MB\) on (\d+) cores, about \d+ (s|min \d\d s) if idle",
        said[2],
    )
    assert plan, out
    assert int(plan[1]) > modules  # a file per module, the group's, the runtime's, the shims
    assert said[3].startswith("WARNING: compiling failed (CompileError"), out
    assert len(said) == 4, out
    assert lines[-2] == f"== {venv} is ready"
    assert lines[-1].startswith("== hot modules: pure Python"), out


def test_a_rebuild_compiles_only_the_c_files_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not have_compiler(tmp_path):
        pytest.skip("no working C compiler")
    build = setup_script()
    # setuptools' own distutils: the standard library's warns (and is gone after 3.11)
    ccompiler = importlib.import_module("setuptools._distutils.ccompiler")
    sysconfig = importlib.import_module("setuptools._distutils.sysconfig")

    monkeypatch.chdir(tmp_path)
    generated = Path("build", "mypyc")  # where setup.py has mypyc write its C and headers
    generated.mkdir(parents=True)
    header = generated / "group.h"
    header.write_text("#define ANSWER 42\n")
    sources = []
    for name in ("a", "b", "c"):
        code = f'#include "group.h"\nint {name}(void) {{ return ANSWER; }}\n'
        (generated / f"{name}.c").write_text(code)
        sources.append(str(generated / f"{name}.c"))
    compiler = ccompiler.new_compiler()
    sysconfig.customize_compiler(compiler)
    compiled: list[str] = []
    real = compiler.compile

    def recording(srcs: list[str], *args: Any, **kwargs: Any) -> list[str]:
        compiled.extend(srcs)
        objects: list[str] = real(srcs, *args, **kwargs)
        return objects

    compiler.compile = recording

    def run() -> list[str]:
        """What a build compiles."""
        compiled.clear()
        objects = build.Compiler(compiler, 2)(sources, "obj", include_dirs=[str(generated)])
        assert all(Path(o).exists() for o in objects)
        return sorted(compiled)

    # mypyc dates what it writes a second ahead (so that a build in the same second sees it)
    ahead = time.time() + 1
    for path in [*map(Path, sources), header]:
        os.utime(path, (ahead, ahead))
    assert run() == sources
    assert run() == []  # at once: the objects are not older than their sources

    t0 = time.time()

    def rebuild() -> list[str]:
        """run(), then every object is newer than every source and header (set, not waited
        for: a file system may keep whole seconds)."""
        compiled = run()
        for path in [*map(Path, sources), header]:
            os.utime(path, (t0 - 100, t0 - 100))
        for path in Path("obj").rglob("*.o"):
            os.utime(path, (t0 - 50, t0 - 50))
        return compiled

    def edit(path: Path) -> None:
        os.utime(path, (t0 - 10, t0 - 10))

    assert rebuild() == []
    edit(generated / "b.c")
    assert rebuild() == [str(generated / "b.c")]
    edit(header)  # a class's layout changed: every module's C sees it
    assert rebuild() == sources
    assert capsys.readouterr().out.count("aiorocketmq: [") == 3 + 1 + 3  # a line per file


@pytest.mark.parametrize("switch", ["MYPYC", "AIOROCKETMQ_PURE"])
def test_either_switch_skips_mypyc_with_one_line(
    switch: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MYPYC", raising=False)
    monkeypatch.delenv("AIOROCKETMQ_PURE", raising=False)
    monkeypatch.setenv(switch, "0" if switch == "MYPYC" else "1")
    assert setup_script().mypyc_extensions() == ()
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert f"aiorocketmq: WARNING: {switch}" in err
