"""Controller mode (issue 35): a broker group's master, epoch and SyncStateSet kept in etcd;
the brokers elect their master themselves, and a master that cannot prove its lease alive
stops acknowledging (fencing).

This package imports nothing of etcd's: aetcd (the ``failover`` extra) is loaded when a
Controller first talks to etcd, so the broker imports without it while
``enableControllerMode`` is false.

The API the broker wires (``broker/controller/controller.py``)::

    from aiorocketmq.broker.controller.controller import Controller

    ctl = Controller.from_config(config, broker_addr, on_master=..., on_slave=...)
    await ctl.start()      # keeps a lease, registers replicas/<brokerId>, campaigns, watches
    ...
    await ctl.close()      # revokes the lease: a master's key goes at once

- ``on_master(epoch)`` (async): this broker was installed as master at master epoch
  ``epoch`` (brokerId 0 in routes from now; the role switch, the epoch file and
  re-registration are the caller's). Told again only for a new epoch.
- ``on_slave(master_addr, epoch)`` (async): another broker, at ``master_addr`` (the address
  it gave: its ``broker_addr``), is master at ``epoch``. Told again when either changes.
  Callbacks are awaited in order, one at a time, from the controller's loop; one that raises
  is logged and the loop goes on.
- ``ctl.may_ack()``: ask before acknowledging a write. True only while this broker is the
  master *and* its lease is certainly alive (last successful keep-alive's send time + TTL -
  margin, on CLOCK_BOOTTIME: monotonic, and counting a suspend): it turns false before etcd
  can expire the lease, hence before anyone else can be elected. ``ctl.lease_valid()``: the
  lease part alone.
- ``await ctl.alter_sync_state_set(members)``: the master sets the SyncStateSet (5.x's
  rules: it keeps the master, only live replicas, differs from the old; compare-and-swap on
  the master, its epoch and the set's epoch). Returns the new GroupState or raises
  ``state.Refused`` (``.refusal``: 5.x's CONTROLLER_* names) or ``etcd.EtcdError``.
- Wiring notes. Ask ``may_ack()`` last, right before the answer is sent (after the wait for
  replicas), not when the request arrives: a check made earlier may be stale by the time the
  answer leaves. Count a slave in the acks before calling ``alter_sync_state_set`` to add it
  (it is caught up), and stop counting a removed one only after the call returns: until etcd
  holds the smaller set, the removed slave may still be elected, and must hold every
  acknowledged message.
- ``ctl.acks.needed(in_sync)``: replicas a message needing HA waits for (``inSyncReplicas``,
  ``minInSyncReplicas``, ``allAckInSyncStateSet``; None = IN_SYNC_REPLICAS_NOT_ENOUGH).
- ``ctl.role`` / ``ctl.epoch`` / ``ctl.master_addr``: what was told last; ``ctl.state``: the
  GroupState last read; ``await ctl.read_state()``: a fresh one. mqadmin's getSyncStateSet /
  getBrokerEpoch read without a Controller: ``view.read_groups(etcd, cluster, broker_name)``.
- TLS and etcd's user/password (``controllerTls*``, ``controllerUsername``,
  ``controllerPasswordFile``): ``from_config`` reads their files (ConfigError naming the key).
  ``ctl.denied``: the AccessDenied etcd answered last (wrong credentials or certificate), or
  None; refused, a broker is never master.
- ``ctl.release_own_stale = True``: a master key naming this broker's brokerId and address
  but held with a lease it never had (its previous incarnation's, after a crash) is released
  at once (the lease revoked) instead of living its TTL. Only where that incarnation is
  certainly gone (broker.failover: the store's lock and the listening address are this
  process's).
- ``metrics.controller_metrics(ctl)``: the Collector to add to the broker's Metrics.

Election, as 5.x's ReplicasInfoManager (state.py): the first master of a group is whoever
campaigns first; after that only a live SyncStateSet member, or with
``enableElectUncleanMaster`` any live replica while no member is alive. A new master's
SyncStateSet is ``{itself}`` and its epoch is the last + 1; it adds members as they catch up
(``alter_sync_state_set``; who is caught up, within ``haMaxTimeSlaveNotCatchup``, is the HA
side's to say).

Files, one concern each: layout.py (keys and values), state.py (state and transitions, pure),
acks.py (the ack rule, pure), fence.py (fencing, pure), access.py (TLS and credentials for
etcd), etcd.py (the etcd calls), lease.py (the lease kept alive), campaign.py (the guarded
transactions), controller.py (the loop), view.py (the state read, for mqadmin), metrics.py
(the /metrics collector).
"""
