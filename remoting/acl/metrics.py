"""The ACL's metrics, for a server's /metrics: refusals by reason, reloads that kept the
previous rules, looks at the files (ours: 4.9.8 has no metrics endpoint)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.metrics import PREFIX

REASONS = ("no_access_key", "unknown_access_key", "signature", "not_admin", "no_permission",
           "bad_request")  # fmt: skip


class AclCollector(Collector):
    def __init__(self, guard: AclGuard) -> None:
        self.guard = guard

    def collect(self) -> Iterable[Metric]:
        refused = CounterMetricFamily(
            PREFIX + "acl_auth_failures", "Requests (and HA connections) the ACL refused, by "
            "reason", labels=["reason"],
        )  # fmt: skip
        counts = self.guard.failures
        for reason in sorted(set(REASONS) | counts.keys()):
            refused.add_metric([reason], counts.get(reason, 0))
        yield refused
        yield CounterMetricFamily(
            PREFIX + "acl_reload_failures", "Reloads of changed ACL files that failed and kept "
            "the previous rules", value=self.guard.files.reload_failures,
        )  # fmt: skip
        yield CounterMetricFamily(
            PREFIX + "acl_file_checks", "Looks at the ACL files for a change (every "
            "aclFileWatchInterval)", value=self.guard.files.checks,
        )  # fmt: skip
