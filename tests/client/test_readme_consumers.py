"""Issue 15 "Done when": the README's consumer examples run as written against a cluster
(only the name-server address is this test cluster's, not make run's :9876)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from tests.cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]


def test_readme_consumer_examples_run_as_written(two_brokers: Cluster) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python consumers", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 4
    with Producer("pg_readme", namesrv_addr=two_brokers.namesrv_addr) as p:
        p.send(Message("ExampleTopic", b"first"))  # the topic exists before anyone consumes
    for code in blocks:
        assert '"127.0.0.1:9876"' in code
        code = code.replace('"127.0.0.1:9876"', repr(two_brokers.namesrv_addr))
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=90)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "b'" in done.stdout, done.stdout  # each printed at least one body
        assert "rebalance_no_consumer_list" not in done.stderr, done.stderr  # issue 31 item 7
