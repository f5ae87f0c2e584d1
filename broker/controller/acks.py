"""How many replicas must hold a message before a controller-mode master acknowledges it.

# compat: CommitLog.asyncPutMessage of 5.x (rocketmq-all-5.3.3, store module), its controller
mode branch -- the rule, not the code. A message that needs HA (a SYNC_MASTER's, or one whose
``WAIT`` property asks for the store) is refused with IN_SYNC_REPLICAS_NOT_ENOUGH while fewer
than ``minInSyncReplicas`` replicas (the master counted) are in sync; else it waits for
``inSyncReplicas`` of them, or for every member of the SyncStateSet with
``allAckInSyncStateSet`` (which makes ``inSyncReplicas`` moot). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AckRule:
    in_sync_replicas: int = 1
    min_in_sync_replicas: int = 1
    all_ack_in_sync_state_set: bool = False

    def needed(self, in_sync: int) -> int | None:
        """The replicas (the master counted) that must hold a message before it is
        acknowledged, with ``in_sync`` members in the SyncStateSet now; None: refuse it
        (IN_SYNC_REPLICAS_NOT_ENOUGH)."""
        if in_sync < self.min_in_sync_replicas:
            return None
        if self.all_ack_in_sync_state_set:
            return in_sync
        return self.in_sync_replicas
