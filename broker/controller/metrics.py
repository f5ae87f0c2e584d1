"""A broker's controller on its ``/metrics``: what it was told and whether it may acknowledge.

``controller_metrics(ctl)`` is a Collector the broker registers with its Metrics (beside
BrokerCollector) when controller mode is on; it reads the Controller at each scrape:

- ``rocketmq_controller_elections_won_total``: campaigns this broker won (each made it
  master at a new epoch);
- ``rocketmq_controller_master_epoch``: the master epoch of the role last told;
- ``rocketmq_controller_role{role=MASTER|SLAVE|NONE}``: 1 for the role last told, 0 for the
  others (NONE: not yet told, or a master whose key is gone);
- ``rocketmq_controller_sync_state_set_size``: members of the group's SyncStateSet, as
  last read from etcd;
- ``rocketmq_controller_fenced``: 1 while this broker is master but may not acknowledge
  (its lease is not certainly alive: fence.py) -- a master refusing writes;
- ``rocketmq_controller_access_denied``: 1 while etcd refuses this broker's TLS or
  credentials (access.py).

# compat: 5.x's controller exports ``role`` and ``election_total`` for the controller
# process (ControllerMetricsConstant); ours is each broker's own view, with no controller
# process, so the names are ours beside them.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aiorocketmq.broker.controller.controller import Controller, Role
from aiorocketmq.remoting.metrics import PREFIX


class ControllerCollector(Collector):
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def collect(self) -> Iterable[Metric]:
        ctl = self.ctl
        yield CounterMetricFamily(
            PREFIX + "controller_elections_won", "Campaigns this broker won (each made it "
            "master at a new master epoch)", value=ctl.elections,
        )  # fmt: skip
        yield GaugeMetricFamily(
            PREFIX + "controller_master_epoch", "The master epoch of the role this broker was "
            "last told", value=ctl.epoch,
        )  # fmt: skip
        role = GaugeMetricFamily(
            PREFIX + "controller_role", "1 for the role this broker was last told (NONE: not "
            "yet, or a master whose key is gone)", labels=["role"],
        )  # fmt: skip
        for r in Role:
            role.add_metric([r.value], 1 if ctl.role is r else 0)
        yield role
        yield GaugeMetricFamily(
            PREFIX + "controller_sync_state_set_size", "Members of the group's SyncStateSet, "
            "as last read from etcd", value=len(ctl.state.sync_state_set),
        )  # fmt: skip
        yield GaugeMetricFamily(
            PREFIX + "controller_fenced", "1 while this broker is master but may not "
            "acknowledge writes (its lease is not certainly alive)",
            value=1 if ctl.role is Role.MASTER and not ctl.may_ack() else 0,
        )  # fmt: skip
        yield GaugeMetricFamily(
            PREFIX + "controller_access_denied", "1 while etcd refuses this broker's TLS or "
            "credentials", value=0 if ctl.denied is None else 1,
        )  # fmt: skip


def controller_metrics(ctl: Controller) -> Collector:
    """The collector the broker adds to its Metrics' collectors for ``ctl``."""
    return ControllerCollector(ctl)
