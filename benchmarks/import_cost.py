"""Import cost of the SDK's face: ``import aiorocketmq`` and its public names, beyond the
standard-library modules they load (issue 30: under 50 ms).

Run ``python -m benchmarks.import_cost [--runs N] [--python PATH]`` (``--python``: another
environment's interpreter, e.g. a venv with the compiled wheel installed; default: this one).

Each run is a new interpreter that first imports every standard-library module the SDK loads
(listed by a first run) and then times ``import aiorocketmq`` plus ``from aiorocketmq import
*``: what it measures is our modules and the third-party ones (msgpack, mypy_extensions), the
cost the 50 ms target is about. The same-run baseline is those standard-library modules
themselves, timed the same way in a fresh interpreter. Wall-clock (``perf_counter``) and CPU
(``process_time``: less disturbed by other work on the machine) time, median and minimum of
the runs; then ``-X importtime``'s self times summed by owner, median of the runs.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import subprocess
import sys

FACE = "import aiorocketmq\nfrom aiorocketmq import *\n"
# prints the standard-library modules loaded by the face (stdlib: sys.stdlib_module_names)
LIST_STDLIB = (
    "import sys\nbefore = set(sys.modules)\n" + FACE + "std = sys.stdlib_module_names\n"
    "print(' '.join(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in std)))"
)
# times the import of argv[1] (code) after importing the modules in argv[2:]
TIMED = """
import importlib, sys, time
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
t0, c0 = time.perf_counter(), time.process_time()
exec(sys.argv[1], {})
print(time.perf_counter() - t0, time.process_time() - c0)
"""
IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def run(python: str, argv: list[str]) -> str:
    done = subprocess.run([python, *argv], capture_output=True, text=True, check=True, cwd="/")
    return done.stdout if argv[0] != "-X" else done.stderr


def timed(python: str, code: str, preload: list[str]) -> tuple[float, float]:
    wall, cpu = run(python, ["-c", TIMED, code, *preload]).split()
    return float(wall) * 1000, float(cpu) * 1000


def owners(python: str) -> dict[str, float]:
    """``-X importtime``'s self times (ms) of the face, summed: stdlib / ours / third-party."""
    sums: dict[str, float] = collections.defaultdict(float)
    std = sys.stdlib_module_names
    for name_us in IMPORTTIME.finditer(run(python, ["-X", "importtime", "-c", FACE])):
        top = name_us[2].split(".")[0]
        owner = "stdlib" if top in std else "ours" if top == "aiorocketmq" else "third-party"
        sums[owner] += int(name_us[1]) / 1000
    return sums


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    stdlib = run(args.python, ["-c", LIST_STDLIB]).split()
    face: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    split: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(args.runs):  # interleaved: both see the same load
        face.append(timed(args.python, FACE, stdlib))
        base.append(timed(args.python, "\n".join(f"import {m}" for m in stdlib), []))
        for owner, ms in owners(args.python).items():
            split[owner].append(ms)
    print(f"{args.python}: {len(stdlib)} standard-library modules preloaded, {args.runs} runs")
    print(f"{'ms':<44}{'wall med':>10}{'wall min':>10}{'cpu med':>10}{'cpu min':>10}")
    figures = {}
    for label, rows in (("the face, beyond the stdlib (target < 50)", face),
                        ("baseline: those stdlib modules", base)):  # fmt: skip
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        row = [statistics.median(walls), min(walls), statistics.median(cpus), min(cpus)]
        figures[label] = row
        print(f"{label:<44}" + "".join(f"{v:>10.1f}" for v in row))
    medians = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in sorted(split.items()))
    print(f"-X importtime self ms, median: {medians}")
    cpu_med = figures["the face, beyond the stdlib (target < 50)"][2]
    verdict = "meets" if cpu_med < 50 else "misses"
    print(f"the face costs {cpu_med:.1f} ms of CPU beyond the stdlib: {verdict} the < 50 ms target")
    print(json.dumps({"face_cpu_ms": cpu_med, "stdlib_cpu_ms": figures[label][2]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
