"""topics.json's and subscriptionGroup.json's journal (broker.journal, broker.tablefile) on
real files: a change is one appended line; loading replays the lines after the snapshot,
drops a tail cut short by a crash, refuses damage in the middle, and folds the journal into
the file; replaying segments over a snapshot that already holds them (a crash between
writing topics.json and deleting them) changes nothing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.groups import SubscriptionGroups
from aiorocketmq.broker.topics import TopicTable
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.register import TopicConfigWrapper
from aiorocketmq.remoting.protocol.topic import TopicConfig


def table(tmp: Path) -> TopicTable:
    t = TopicTable(ConfigFile(tmp / "topics.json"), {}, auto_create=True)
    t.load()
    return t


def segments(tmp: Path, file: str = "topics.json") -> list[Path]:
    return sorted(tmp.glob(f"{file}.journal.*"))


def topic(name: str, queues: int = 4) -> TopicConfig:
    return TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues)


async def test_changes_are_lines_replayed_at_load_then_folded_into_topics_json(
    tmp_path: Path,
) -> None:
    t = table(tmp_path)
    await asyncio.gather(*(t.put(topic(f"T{i}")) for i in range(40)))  # one batch or a few
    await t.put(topic("T3", 8))
    assert await t.delete("T5")
    assert not (tmp_path / "topics.json").exists(), "no whole-table write per change"
    lines = b"".join(p.read_bytes() for p in segments(tmp_path)).splitlines()
    assert len(lines) == 42
    again = table(tmp_path)  # as after a SIGKILL: the journal is all there is
    assert again.topics == t.topics and again.data_version == t.data_version
    assert segments(tmp_path) == []
    saved = TopicConfigWrapper.from_json(json.loads((tmp_path / "topics.json").read_text()))
    assert saved.topic_config_table == t.topics and saved.data_version == t.data_version
    assert table(tmp_path).topics == t.topics
    await t.file.close()


async def test_a_tail_cut_short_is_dropped_and_damage_before_good_lines_is_refused(
    tmp_path: Path,
) -> None:
    t = table(tmp_path)
    for name in ("A", "B", "C"):
        await t.put(topic(name))
    await t.file.journal.close()
    (segment,) = segments(tmp_path)
    whole = segment.read_bytes()
    segment.write_bytes(whole[:-7])  # the last append cut short by a crash
    assert set(table(tmp_path).topics) == {"A", "B"}
    t = table(tmp_path)
    await t.put(topic("D"))
    await t.put(topic("E"))
    await t.file.journal.close()
    (segment,) = segments(tmp_path)
    lines = segment.read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b'"D"', b'"X"')  # checksum no longer matches
    segment.write_bytes(b"\n".join(lines))
    with pytest.raises(ConfigError, match="damaged record at line 1"):
        table(tmp_path)


async def test_segments_replayed_over_a_snapshot_that_holds_them_change_nothing(
    tmp_path: Path,
) -> None:
    """A crash after topics.json was written and before the sealed segments were deleted."""
    t = table(tmp_path)
    await t.put(topic("Kept", 2))
    await t.put(topic("Gone"))
    await t.put(topic("Changed", 2))
    assert await t.delete("Gone")
    await t.put(topic("Changed", 6))
    kept = tmp_path / "kept"
    kept.mkdir()
    for p in segments(tmp_path):
        shutil.copy(p, kept / p.name)
    assert await t.file.compact()
    assert segments(tmp_path) == []
    await t.put(topic("Later"))  # after the snapshot, in a later segment
    for p in kept.iterdir():
        shutil.copy(p, tmp_path / p.name)
    await t.file.journal.close()
    again = table(tmp_path)
    assert again.topics == t.topics
    assert "Gone" not in again.topics and again.topics["Changed"].write_queue_nums == 6


async def test_subscription_groups_use_the_same_journal_in_the_order_of_the_changes(
    tmp_path: Path,
) -> None:
    """A group auto-created by a heartbeat (journaled in the background) then updated at
    once: the update is the later line, so it wins at load."""
    groups = SubscriptionGroups(ConfigFile(tmp_path / "subscriptionGroup.json"), auto_create=True)
    groups.load()
    assert groups.find("auto") is not None  # its line is queued now, written in the background
    await groups.put(SubscriptionGroupConfig(group_name="auto", retry_max_times=3))
    await groups.put(SubscriptionGroupConfig(group_name="gone"))
    assert await groups.delete("gone")
    await groups.flush()
    assert not (tmp_path / "subscriptionGroup.json").exists()
    again = SubscriptionGroups(ConfigFile(tmp_path / "subscriptionGroup.json"), auto_create=True)
    again.load()
    assert again.groups == groups.groups and again.data_version == groups.data_version
    assert again.groups["auto"].retry_max_times == 3 and "gone" not in again.groups
    saved = json.loads((tmp_path / "subscriptionGroup.json").read_text())
    assert saved["subscriptionGroupTable"]["auto"]["retryMaxTimes"] == 3
    assert segments(tmp_path, "subscriptionGroup.json") == []
    await groups.file.close()


async def test_a_change_is_answered_only_once_its_line_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create is durable when it is answered: ``put`` returns only after the journal's
    fdatasync has (the SIGKILL test in test_topic_create cannot tell, as the page cache
    outlives a killed process; this one fails with the fdatasync left out). ``os.fdatasync``
    is the fault seam, held until the test lets it go."""
    t = table(tmp_path)
    entered, release = threading.Event(), threading.Event()
    real = os.fdatasync

    def held(fd: int) -> None:
        entered.set()
        release.wait(30)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", held)
    task = asyncio.ensure_future(t.put(topic("Synced")))
    assert await asyncio.to_thread(entered.wait, 30), "no fdatasync for the journal line"
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()
    release.set()
    await task
    assert "Synced" in table(tmp_path).topics
