"""The connector on a Spark standalone cluster from an installed wheel, not from the source
tree (issue 30 item 5; the README's "Shipping the connector to a Spark cluster").

A master and one worker started with pyspark's own launcher (``bin/spark-class``) on
127.0.0.1; the executors' Python gets the wheel and what the connector needs on an executor
(pyarrow, uvloop, msgpack, mypy-extensions), nothing of the repository, two ways: (a) a venv
on the worker holding them, ``PYSPARK_PYTHON`` pointing at it; (b) that venv's site-packages
packed as an archive that Spark ships to each executor (``spark.archives``), put on the
executors' PYTHONPATH, the base interpreter running it. The driver is a separate process (one
SparkContext per process; the suite's local session may be running): it reads messages from a
real name server and brokers and reports where the executors imported ``aiorocketmq`` from.
Every JVM is stopped by PID."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.harness import ROOT
from tests.spark.test_read import produce
from tests.test_wheel import build_wheel

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]

# what an executor imports besides the connector (pyspark itself comes with the worker: Spark
# puts its pyspark.zip and py4j on the Python workers' path)
EXECUTOR_NEEDS = ("pyarrow", "uvloop", "msgpack", "mypy-extensions")

DRIVER = r"""
import json, sys
from pyspark.sql import SparkSession
master, namesrv, topic, conf = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
builder = SparkSession.builder.master(master).appName("aiorocketmq-standalone")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
try:
    import aiorocketmq.spark
    aiorocketmq.spark.register(spark)
    rows = spark.read.format("rocketmq").option("nameServer", namesrv) \
        .option("subscribe", topic).load().collect()

    def where(_):
        import sys, aiorocketmq.spark.source
        yield aiorocketmq.spark.source.__file__, sys.executable, sys.path

    seen = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    print(json.dumps({"bodies": sorted(r.body.decode() for r in rows), "seen": seen}))
finally:
    spark.stop()
"""


def pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def jvm_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHON"))}
    env |= {"SPARK_HOME": str(pyspark_home()), "SPARK_LOCAL_IP": "127.0.0.1"}
    env |= {"SPARK_LOG_DIR": str(tmp), "SPARK_WORKER_DIR": str(tmp / "work")}
    return env


def wait_for(path: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The first match of ``pattern`` in the log ``path`` (polled; the process must live)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(errors="replace"))
        if found:
            return found[1] if found.groups() else found[0]
        assert proc.poll() is None, path.read_text(errors="replace")[-4000:]
        time.sleep(0.2)
    raise TimeoutError(f"{pattern!r} not in {path}: {path.read_text(errors='replace')[-4000:]}")


def group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (from /proc): a process started with
    ``start_new_session`` and what it started, the JVMs and executors included, even those
    whose parent has exited."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM ``proc``, then SIGKILL whatever of its process group is left, each by PID."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    for pid in group(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def spark_class(tmp: Path, name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(pyspark_home() / "bin" / "spark-class"), *args],
                                cwd=tmp, env=jvm_env(tmp), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    return proc, log


class Standalone(NamedTuple):
    url: str  # the master's
    work: Path  # the worker's work dir: executors run in <work>/<app>/<id>


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A Spark master and one worker (1 core) on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("standalone")
    (tmp / "work").mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        argv = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
        master, log = spark_class(tmp, "master", ["org.apache.spark.deploy.master.Master", *argv])
        procs.append(master)
        url = wait_for(log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master, 180)
        argv += ["--cores", "1", "--memory", "1g", "--work-dir", str(tmp / "work"), url]
        worker, log = spark_class(tmp, "worker", ["org.apache.spark.deploy.worker.Worker", *argv])
        procs.append(worker)
        wait_for(log, r"Successfully registered with master", worker, 180)
        yield Standalone(url, tmp / "work")
    finally:
        for proc in reversed(procs):
            stop(proc)


@pytest.fixture(scope="module")
def executor_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel (pure, from a clean copy) and the executors' needs: its root."""
    tmp = tmp_path_factory.mktemp("executor-env")
    wheel = build_wheel(tmp)
    home = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)],
                   check=True, timeout=120)  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install", "-q",
         "--no-deps", str(wheel), *EXECUTOR_NEEDS],
        check=True, capture_output=True, timeout=400,
    )  # fmt: skip
    return home


def drive(
    cluster: Cluster,
    master: str,
    topic: str,
    python: str,
    conf: dict[str, str],
    cwd: Path,
    pythonpath: str | None = None,
) -> dict[str, Any]:
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "512m",
        "spark.cores.max": "1",
        **conf,
    }
    # a driver started as a Python program (not through spark-submit) takes the executors'
    # Python from its PYSPARK_PYTHON: spark.pyspark.python is read by spark-submit only
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env |= {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": python}
    env |= {"PYSPARK_DRIVER_PYTHON": sys.executable}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, master, cluster.namesrv_addr, topic, json.dumps(conf)],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=400)
    finally:
        stop(proc)
    text = err.decode(errors="replace")
    assert proc.returncode == 0, text[:3000] + "\n...\n" + text[-3000:]
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


def check(result: dict[str, Any], expected: list[str], inside: Path) -> None:
    """Every message read; the executor imported the connector from under ``inside``, and
    nothing of the repository was on its path (Spark's own pyspark.zip, from the venv the
    worker was started from, may be)."""
    assert result["bodies"] == expected
    ((module, executable, path),) = result["seen"]
    assert Path(module).is_relative_to(inside), (module, executable)
    sources = [
        entry
        for entry in filter(None, path)
        if Path(entry).is_relative_to(ROOT) and not Path(entry).is_relative_to(ROOT / ".venv")
    ]
    assert not sources, sources


def test_the_wheel_installed_on_the_worker(
    standalone: Standalone, executor_env: Path, cluster: Cluster, tmp_path: Path
) -> None:
    """(a) the worker's Python holds the wheel; the driver's ``PYSPARK_PYTHON`` names it."""
    asyncio.run(create_everywhere(cluster, "SparkStandaloneA", 2))
    produce(cluster, "SparkStandaloneA", 6, prefix="a")
    python = str(executor_env / "bin" / "python")
    result = drive(cluster, standalone.url, "SparkStandaloneA", python, {}, tmp_path)
    check(result, [f"a{i}" for i in range(6)], executor_env)


def test_packed_packages_through_spark_archives(
    standalone: Standalone, executor_env: Path, cluster: Cluster, tmp_path: Path
) -> None:
    """(b) the venv's site-packages packed as a tar that ``spark.archives`` unpacks as
    ``./deps`` beside each executor, on the executors' PYTHONPATH; their Python is the base
    interpreter the venv was made with. (The venv whole, ``./env/bin/python`` as the
    executors' Python, does not work: Spark unpacks archives without their modes, so
    ``bin/python`` is not executable -- "error=13, Permission denied" -- and refuses the
    venv's symlinks to the interpreter outside it.)"""
    site = next((executor_env / "lib").glob("python3*/site-packages"))
    archive = tmp_path / "deps.tar"
    with tarfile.open(archive, "w") as tar:  # the packages at the top, no "./" entry
        for child in site.iterdir():
            tar.add(child, arcname=child.name)
    asyncio.run(create_everywhere(cluster, "SparkStandaloneB", 2))
    produce(cluster, "SparkStandaloneB", 6, prefix="b")
    # a driver in client mode plans the data source (its schema, its partitions) in a Python
    # worker of its own, PYSPARK_PYTHON with the driver's PYTHONPATH: its own copy of deps
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "deps", filter="tar")
    conf = {"spark.archives": f"{archive}#deps", "spark.executorEnv.PYTHONPATH": "./deps"}
    base = str(Path(sys.executable).resolve())  # the interpreter this venv was made with
    result = drive(cluster, standalone.url, "SparkStandaloneB", base, conf, tmp_path,
                   pythonpath=str(tmp_path / "deps"))  # fmt: skip
    # unpacked into the executor's directory under the worker's work dir
    check(result, [f"b{i}" for i in range(6)], standalone.work)
