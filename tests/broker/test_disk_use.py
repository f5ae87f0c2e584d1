"""What a new broker takes on disk (issue 31 item 5; README "Disk"): with the default 1 GiB
CommitLog segment, a broker that has stored its first messages holds 64 MiB of CommitLog
blocks (``commitLogAllocateStepMb``), 20 MB of index slots and a chunk per ConsumeQueue --
not the whole segment (before: 1 GiB per broker at its first message). Blocks as the
filesystem counts them (``st_blocks``: what ``du`` shows)."""

from __future__ import annotations

from pathlib import Path

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.wire import create_topic, send_v2
from tests.cluster import Cluster

MIB = 1 << 20
GIB = 1 << 30


def allocated(path: Path) -> int:
    """Bytes of disk the files under ``path`` hold."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


async def test_a_new_broker_holds_a_step_of_its_first_segment(
    cluster: Cluster, client: RemotingClient
) -> None:
    broker = cluster.add_broker("broker-a", mappedFileSizeCommitLog=str(GIB))
    assert (await client.invoke(broker.addr, create_topic("Disk", 4))).code == 0
    for i in range(20):
        resp = await client.invoke(broker.addr, send_v2("Disk", b"x" * 1000, queue_id=i % 4))
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    segment = broker.store / "commitlog" / f"{0:020d}"
    assert segment.stat().st_size == GIB  # the segment's full size, as Apache's tools expect
    assert allocated(broker.store / "commitlog") == 64 * MIB
    assert allocated(broker.store) < 96 * MIB, allocated(broker.store)
