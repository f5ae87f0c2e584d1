"""The distribution as a user gets it (issue 30): ``pip wheel .`` gives a wheel whose only
top-level package is ``aiorocketmq``; installed into an empty venv with nothing but its own
dependencies, ``from aiorocketmq import Producer`` works from a directory holding its own
``client.py`` and ``spark.py``, and a console script without its extra says which to install.

The wheel is built pure (``AIOROCKETMQ_PURE=1``: no mypyc compile) from a copy of the sources,
so that an earlier build's ``build/lib`` (compiled modules included) cannot end up in it; pip
reuses its cache for the build's and the SDK's dependencies."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FOLDERS = ("aiorocketmq", "remoting", "namesrv", "broker", "client", "spark", "deploy")
BARE = ("remoting", "namesrv", "broker", "client", "spark", "deploy")
# a user's own modules named like our folders: importing one of them fails the test
SHADOW = "raise SystemExit('the user\\'s own {0}.py was imported: {0!r} shadows ours')\n"


def build_wheel(tmp: Path) -> Path:
    """``pip wheel --no-deps .`` of a clean copy of the sources; the wheel's path."""
    src = tmp / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "node_modules", "build")
    for name in FOLDERS:
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    env = {**os.environ, "AIOROCKETMQ_PURE": "1"}
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", "dist"]
    subprocess.run(argv, cwd=tmp, env=env, check=True, capture_output=True, timeout=240)
    (wheel,) = (tmp / "dist").glob("aiorocketmq-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty venv with the wheel installed as pip installs it (its dependencies resolved
    from its metadata: the SDK's alone); the venv's python."""
    home = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)],
                   check=True, timeout=120)  # fmt: skip
    python = home / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    yield python


def top_level(path: str, data: str) -> str:
    """The site-packages entry a wheel's file installs as (``<name>.data/purelib/x/...``:
    ``x``, as a wheel with a platform tag holds its pure modules)."""
    parts = path.split("/")
    if parts[0] == data and parts[1] in ("purelib", "platlib"):
        return parts[2]
    return parts[0]


def test_the_wheel_has_one_top_level_package(wheel: Path) -> None:
    stem = "-".join(wheel.name.split("-")[:2])
    info, data = f"{stem}.dist-info", f"{stem}.data"
    with zipfile.ZipFile(wheel) as zf:
        record = zf.read(f"{info}/RECORD").decode()
        listed = zf.read(f"{info}/top_level.txt").decode().split()
    tops = {top_level(row[0], data) for row in csv.reader(io.StringIO(record)) if row}
    assert tops - {info} == {"aiorocketmq"}
    assert listed == ["aiorocketmq"]


def test_it_installs_only_the_sdks_dependencies(venv: Path) -> None:
    done = subprocess.run([str(venv), "-c", LIST], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) == {"aiorocketmq", "msgpack", "mypy_extensions"}


LIST = """
from importlib import metadata
print(*sorted({d.metadata["Name"].replace("-", "_").lower() for d in metadata.distributions()}))
"""


def test_the_sdk_imports_beside_a_users_client_and_spark_modules(
    venv: Path, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    for name in BARE:
        (app / f"{name}.py").write_text(SHADOW.format(name))
    code = (
        "import sys\n"
        "from aiorocketmq import Message, Producer, PullConsumer, PushConsumer\n"
        "import aiorocketmq.client.sync\n"
        f"bare = [m for m in {BARE!r} if m in sys.modules]\n"
        "assert not bare, bare\n"
        "print(Producer.__module__, sys.modules[Producer.__module__].__file__)\n"
    )
    done = subprocess.run([str(venv), "-c", code], cwd=app, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    module, path = done.stdout.split()
    assert module == "aiorocketmq.client.producer.producer"
    assert Path(path).is_relative_to(venv.parent.parent), path  # the venv's, not the repo's
    assert not Path(path).is_relative_to(ROOT)


@pytest.mark.parametrize(("script", "extra"), [("mqadmin", "admin"), ("mqbroker", "server")])
def test_a_console_script_without_its_extra_names_it(venv: Path, script: str, extra: str) -> None:
    done = subprocess.run([str(venv.parent / script), "--help"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert f"pip install 'aiorocketmq[{extra}]'" in done.stderr
