"""A controller refused round after round logs it once a minute per cause, not every round
(issue 35: a broker whose etcd refuses its credentials logged two warnings every 0.75 s):
controller_round_failed and controller_lease_failed come once for each distinct error, with
the count left out since in the next line (remoting.throttle, as the other repeated
warnings). Against a real etcd with TLS and auth on, a wrong password."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from tests.controller.conftest import Node, access
from tests.etcd import EtcdMember, EtcdTls
from tests.util import wait_until

UP = 30.0
EVENTS = ("controller_round_failed", "controller_lease_failed")


def lines(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == event]


async def test_a_refusal_every_round_is_logged_once_per_cause(
    tmp_path: Path, tls: EtcdTls, secured: EtcdMember, nodes: list[Node]
) -> None:
    wrong = access(tmp_path, tls.ca.path, cert=tls.ca, username="broker", password="not-it")
    a = Node(secured.endpoint, 0, access=wrong)
    nodes.append(a)
    with capture_logs() as logs:
        await a.ctl.start()
        # refused round after round: many of each (every 0.75 s with a 3 s TTL)
        await wait_until(lambda: a.ctl.failed_rounds >= 6 and a.ctl.keeper.failures >= 6, UP)
        for event in EVENTS:
            seen = lines(logs, event)
            errors = [e["error"] for e in seen]
            assert seen and len(errors) == len(set(errors)), (event, errors)  # once per cause
            # (the first call may time out in the TLS handshake: a cause of its own)
            assert any("refused the controller's access" in e for e in errors), errors
            assert all(e["left_out"] == 0 for e in seen), seen
        assert len(lines(logs, "controller_round_failed")) < a.ctl.failed_rounds
        assert len(lines(logs, "controller_lease_failed")) < a.ctl.keeper.failures

        # a period later the same cause is logged again, with the count left out meanwhile
        a.ctl.throttle.period = 1.0
        await wait_until(
            lambda: all(any(e["left_out"] > 0 for e in lines(logs, ev)) for ev in EVENTS), UP
        )
