"""Controller mode's etcd client (aetcd, grpc: the ``failover`` extra) is loaded only when a
controller talks to etcd: the broker imports without it while enableControllerMode is off."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.harness import ROOT

LOADED = """
import json, sys
import aiorocketmq.broker.controller.controller
import aiorocketmq.broker.server
from aiorocketmq.broker.controller.controller import Controller
Controller(controller_addr="127.0.0.1:1", cluster="c", broker_name="b", broker_id=0,
           broker_addr="127.0.0.1:2")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("aetcd", "grpc"))))
"""


def test_the_controller_imports_without_its_etcd_client() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
