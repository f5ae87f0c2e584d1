"""benchmarks/fuzz.py keeps working: a few hundred seeded requests of every kind against a real
name server and broker (processes), and neither crashes nor logs at error level.

Findings of other kinds (a request accepted that should be refused, a lasting outage) are the
fuzzer's results, not this test's business: the full run (``python -m benchmarks.fuzz``)
reports them. This test keeps the harness honest: it must really send what it claims to.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.fuzz import Options, fuzz
from benchmarks.fuzz_cases import HEADERS
from benchmarks.fuzz_run import Finding


def shown(findings: list[Finding]) -> str:
    return "\n".join(f"{f.kind} {f.server}: {f.summary}\n{f.reproducer()}" for f in findings)


async def test_fuzz_smoke_neither_server_crashes_nor_logs_errors(tmp_path: Path) -> None:
    opts = Options(requests=250, seed=29, workers=4, verify=0, quick=True, restarts=False,
                   config_probe=False, lasting=False)  # fmt: skip
    report = await fuzz(opts, tmp_path)

    bad = [f for f in report.findings if f.kind in ("crash", "error_log", "stray_output")]
    assert not report.crashed, shown(bad)
    assert report.errors == 0 and not bad, shown(bad)
    assert report.exit_codes == {"broker": 0, "namesrv": 0}
    # the harness did what it says: both servers, many codes, all three header formats, and
    # answers of more than one kind (so requests were understood and refused alike)
    assert all(n >= 250 for n in report.requests.values()), report.requests
    assert report.codes_tried["broker"] >= 40 and report.codes_tried["namesrv"] >= 15
    for kind in ("broker", "namesrv"):
        assert set(report.formats[kind]) == {"json", "rocketmq", "msgpack"}, report.formats
        assert {"0", "1"} <= set(report.responses[kind]), report.responses
    assert report.bystander["rounds"] > 0, report.bystander
    assert len(HEADERS) > 30
