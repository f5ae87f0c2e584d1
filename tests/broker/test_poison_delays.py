"""No poison pill in delayed delivery (issue 29, N2): a due delayed message the store refuses
for good -- a send-back for a 300-character group, whose ``%RETRY%`` topic no store keeps --
used to be tried every 100 ms for ever, ten warnings a second, holding back every later
message of its delay level (other groups' retries included), and again after a restart.
It is now skipped once, counted, and the level moves on; a refusal that can pass backs off.
The bad message gets in by other means than the request (which the edge now refuses):
written through the store API, before the broker starts or into a running one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from structlog.testing import capture_logs

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.schedule import RETRY_FIRST_SECONDS, ScheduleService
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.broker.poison import (
    LONG_GROUP,
    delayed,
    in_process,
    queue_counts,
    registered,
    retried,
    send_back,
    store_config,
    write_delayed,
)
from tests.broker.wire import create_topic, max_offset
from tests.cluster import Cluster
from tests.scrape import scrape, value

SKIPPED = "rocketmq_delayed_messages_skipped_total"


async def until_retried(cli: RemotingClient, addr: str, group: str, count: int) -> None:
    """Wait (20 s at most: level 1 is 1 s) until ``%RETRY%<group>`` holds ``count`` messages."""
    try:
        async with asyncio.timeout(20):
            while await retried(cli, addr, group) < count:  # noqa: ASYNC110 -- another process
                await asyncio.sleep(0.1)
    except TimeoutError:
        got = await retried(cli, addr, group)
        raise AssertionError(f"%RETRY%{group} holds {got} after 20 s, not {count}") from None


async def test_an_undeliverable_delayed_message_holds_back_no_other_retry(
    cluster: Cluster, client: RemotingClient
) -> None:
    """N2 end to end: a level-1 message for ``%RETRY%`` + 300 characters waits first in line
    (written through the store API before broker-a starts). A send-back of group normal_g at
    level 1 behind it is delivered; the bad one is skipped once (counted on /metrics, one
    warning, no ``delayed_delivery_failed``). After a restart it does not come back: a
    second send-back is delivered and nothing is skipped again."""
    await write_delayed(cluster.root / "broker-a", delayed(f"%RETRY%{LONG_GROUP}"))
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("GoodT", 1))).code == 0
    await send_back(client, b.addr, "GoodT", "normal_g", 1)
    await until_retried(client, b.addr, "normal_g", 1)
    metrics = await scrape(b.proc.metrics_port() if b.proc else 0)
    assert value(metrics, SKIPPED, reason="MESSAGE_ILLEGAL") == 1
    assert b.proc is not None
    events = [e.get("event") for e in b.proc.events]
    assert events.count("delayed_message_skipped") == 1
    assert events.count("delayed_delivery_failed") == 0
    (skip,) = [e for e in b.proc.events if e.get("event") == "delayed_message_skipped"]
    assert skip["topic"] == f"%RETRY%{LONG_GROUP}"[:200] and skip["delay_level"] == 1

    assert cluster.stop_broker("broker-a") == 0  # saves the level's offset, past the bad one
    cluster.start_broker("broker-a")
    client.close_channel(b.addr)  # the old broker's connection is gone
    await send_back(client, b.addr, "GoodT", "normal_g", 1)
    await until_retried(client, b.addr, "normal_g", 2)
    assert b.proc is not None
    assert [e for e in b.proc.events if e.get("event") == "delayed_message_skipped"] == []
    assert value(await scrape(b.proc.metrics_port()), SKIPPED, reason="MESSAGE_ILLEGAL") == 0


async def test_a_refusal_that_can_pass_backs_off_and_then_delivers(tmp_path: Path) -> None:
    """A due message the store refuses for now (a slave's store: SERVICE_NOT_AVAILABLE) stays
    first in line and is tried again after 0.1 s, 0.2 s, 0.4 s...: over the time watched, at
    most one try per doubling step (not one every 100 ms), and one warning; once the store
    takes puts again it is delivered."""
    store = MessageStore(store_config(tmp_path), store_host="127.0.0.1:10911")
    await store.start()
    schedule = ScheduleService(store, ConfigFile(tmp_path / "delayOffset.json"))
    try:
        due_ms = (await store.put(delayed("RealT"))).store_timestamp + store.delays[0]
        store.set_slave(True)  # every put refused, for as long as it lasts
        with capture_logs() as logs:
            task = asyncio.get_running_loop().create_task(schedule.run())
            await asyncio.sleep(2.6)  # the window watched: due after 1 s, then refused
            tries = sum(getattr(schedule, "failures", {}).values())
            watched = time.time() - due_ms / 1000
            store.set_slave(False)
            async with asyncio.timeout(20):
                while store.max_offset("RealT", 0) < 1:  # noqa: ASYNC110 -- another task's work
                    await asyncio.sleep(0.05)
            task.cancel()
    finally:
        await store.shutdown()
    failed = [e for e in logs if e["event"] == "delayed_delivery_failed"]
    print(f"tries={tries} warnings={len(failed)} watched={watched:.2f}s")
    assert len(failed) == 1 and failed[0]["status"] == "SERVICE_NOT_AVAILABLE", failed
    # waits of 0.1, 0.2, 0.4, 0.8 s...: try k comes 0.1 * (2**(k-1) - 1) s after the first
    bound = 1
    while RETRY_FIRST_SECONDS * (2**bound - 1) <= watched:
        bound += 1
    assert 1 <= tries <= bound, (tries, watched, bound)
    assert schedule.skipped == {}


def tried(schedule: ScheduleService) -> int:
    """Rounds of level 1 that raised ValueError (none counted before issue 29)."""
    failures: dict[str, int] = getattr(schedule, "failures", {})
    return failures.get("ValueError", 0)


async def test_an_error_in_one_level_backs_it_off_and_ends_nothing(tmp_path: Path) -> None:
    """A level whose round raises (here: its queue file closed under it, as a bug could)
    backs that level off and logs it once; the service keeps running (it used to end, and
    with it every delayed delivery of the broker until a restart)."""
    store = MessageStore(store_config(tmp_path), store_host="127.0.0.1:10911")
    await store.start()
    schedule = ScheduleService(store, ConfigFile(tmp_path / "delayOffset.json"))
    await store.put(delayed("RealT"))
    await store.shutdown()  # level 1's queue file is closed: reading it raises ValueError
    with capture_logs() as logs:
        task = asyncio.get_running_loop().create_task(schedule.run())
        try:
            async with asyncio.timeout(10):
                while not task.done() and tried(schedule) < 3:  # noqa: ASYNC110 -- a task's work
                    await asyncio.sleep(0.02)
            assert not task.done(), task.exception()
        finally:
            task.cancel()
    crashed = [e for e in logs if e["event"] == "delayed_delivery_crashed"]
    assert len(crashed) == 1 and crashed[0]["delay_level"] == 1, crashed


async def test_every_other_route_and_retry_flows_past_both_poisons(tmp_path: Path) -> None:
    """Build item 3's joint test, in one running broker: an unroutable topic put in its table
    and an undeliverable level-1 message stored in front of two groups' retries. Every other
    topic (GoodT, both groups' retry topics) has its route; both groups' retries arrive, as
    does a DELAY send to GoodT at the same level; the bad message is skipped once and the
    bad topic left out once."""
    with capture_logs() as logs:
        async with in_process(tmp_path) as (ns, broker), RemotingClient() as cli:
            addr, namesrv = f"127.0.0.1:{broker.port}", f"127.0.0.1:{ns.port}"
            evil = TopicConfig(topic_name="%RETRY%evilg", read_queue_nums=2**40)
            await broker.ctx.topics.put(evil)
            await broker.ctx.store.put(delayed(f"%RETRY%{LONG_GROUP}"))
            assert (await cli.invoke(addr, create_topic("GoodT", 1))).code == 0
            for group in ("normal_g", "other_g"):
                await send_back(cli, addr, "GoodT", group, 1)
            for group in ("normal_g", "other_g"):
                await until_retried(cli, addr, group, 1)
            await broker.ctx.store.put(delayed("GoodT", uniq="7F000001000000000000000000DD"))
            async with asyncio.timeout(20):
                while await max_offset(cli, addr, "GoodT", 0) < 3:  # noqa: ASYNC110 -- 2 sent, 1 delayed
                    await asyncio.sleep(0.1)
            await registered(broker)
            for topic in ("GoodT", "%RETRY%normal_g", "%RETRY%other_g"):
                code, queues = await queue_counts(cli, namesrv, topic)
                assert code == 0 and queues, topic
            assert (await queue_counts(cli, namesrv, evil.topic_name))[0] == 17
            assert broker.consumers.schedule.skipped == {"MESSAGE_ILLEGAL": 1}
            assert broker.namesrv.left_out.count == 1
    events = [e["event"] for e in logs]
    assert events.count("delayed_message_skipped") == 1
    assert events.count("topic_not_registered") == 1
    assert events.count("delayed_delivery_failed") == 0
