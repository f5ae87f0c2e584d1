"""What importing the SDK and each console script brings in (issue 30): the SDK loads no
third-party module but its own dependencies (``pip install aiorocketmq``), and each command
none beyond its extra's. Counted, not timed, so that a busy machine cannot fail it:
``benchmarks/import_cost.py`` has the milliseconds. Each check runs in a new interpreter."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from importlib.metadata import packages_distributions

import pytest

from aiorocketmq.scripts import SCRIPTS
from tests.harness import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# the third-party top-level modules a new interpreter holds after importing these modules
LOADED = """
import importlib, json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
std = sys.stdlib_module_names
print(json.dumps(sorted({m.split(".")[0] for m in set(sys.modules) - before} - set(std))))
"""


def distribution(requirement: str) -> str:
    """``"prometheus-client>=0.20"`` -> ``"prometheus_client"`` (PEP 503, then _ for -)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name is not None, requirement
    return re.sub(r"[-_.]+", "_", name[0]).lower()


def distributions(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` name and, installed, what they require in turn
    (rich brings pygments, pyspark py4j), optional extras' requirements left out."""
    found: set[str] = set()
    todo = [distribution(r) for r in requirements]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            needs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [distribution(r) for r in needs if "extra ==" not in r.partition(";")[2]]
    return found


def third_party(modules: list[str]) -> dict[str, set[str]]:
    """The distributions of the third-party modules that importing ``modules`` loads:
    top-level module -> its distributions (normalized). Modules no installed distribution
    declares (Cython's runtime, the editable install's finder) are left out."""
    done = subprocess.run([sys.executable, "-c", LOADED, *modules],
                          cwd=ROOT, capture_output=True, text=True, check=True)  # fmt: skip
    owners = packages_distributions()
    return {
        top: {distribution(d) for d in owners[top]}
        for top in json.loads(done.stdout)
        if top in owners and top != "aiorocketmq"
    }


def outside(loaded: dict[str, set[str]], allowed: set[str]) -> dict[str, set[str]]:
    return {top: dists for top, dists in loaded.items() if not dists & allowed}


SDK = distributions(PROJECT["dependencies"])
FACE = ["aiorocketmq", "aiorocketmq.client", "aiorocketmq.client.sync"]


def test_the_sdk_loads_only_its_own_dependencies() -> None:
    """Fails with structlog (and rich and pygments through ``structlog.dev``) when the SDK's
    logger imports structlog."""
    loaded = third_party(FACE)
    assert not outside(loaded, SDK), f"the SDK loads {loaded}; its dependencies: {SDK}"
    for heavy in ("structlog", "rich", "pygments", "prometheus_client", "pyspark", "uvloop"):
        assert heavy not in loaded


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_console_script_loads_only_its_extra(name: str) -> None:
    """Each command's module imports nothing beyond the SDK's dependencies and its extra,
    and the modules it checks for (``aiorocketmq.scripts``) are that extra's."""
    script = SCRIPTS[name]
    assert PROJECT["scripts"][name] == f"aiorocketmq.scripts:{name}"
    extra = distributions(PROJECT["optional-dependencies"][script.extra])
    owners = packages_distributions()
    for module in script.needs:
        assert {distribution(d) for d in owners[module]} & extra, (module, script.extra)
    loaded = third_party([script.target.split(":")[0]])
    assert not outside(loaded, SDK | extra), f"{name} loads {loaded}; allowed {SDK | extra}"


def test_the_spark_connector_loads_only_its_extra() -> None:
    extra = distributions(PROJECT["optional-dependencies"]["spark"])
    modules = sorted(
        "aiorocketmq.spark." + p.stem for p in (ROOT / "spark").glob("*.py") if p.stem[0] != "_"
    )
    loaded = third_party(["aiorocketmq.spark", *modules])
    assert not outside(loaded, SDK | extra), f"the connector loads {loaded}"
