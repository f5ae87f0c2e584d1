"""The failover checkers on synthetic histories: each verdict holds on a clean history and
names the violation on one built to break it (a checker that cannot fail is a defect)."""

from __future__ import annotations

from pathlib import Path

from tests.failover.checkers import (
    acked_readable,
    offsets_never_back,
    recoveries,
    single_master,
    time_to_new_master,
)
from tests.failover.history import (
    Commit,
    Delivery,
    Fault,
    Query,
    Recorder,
    Send,
    Stored,
    history_of,
    read_records,
)
from tests.failover.run import on_survivors

A, B = "198.18.35.3:10911", "198.18.35.4:10911"


def ack(key: str, start: float, end: float, offset: int, host: str = A, queue: int = 0) -> Send:
    return Send(key, start, end, "ok", "broker-a", queue, offset, host)


def stored(*sends: Send) -> list[Stored]:
    return [Stored(s.broker, s.queue, s.offset, s.key, s.host) for s in sends]


def test_every_acknowledged_message_read_back_holds() -> None:
    sends = [ack("k0", 0, 1, 0), ack("k1", 1, 2, 1), Send("k2", 2, 5, "unknown")]
    v = acked_readable(sends, stored(*sends[:2]))
    assert v.ok, v
    assert v.figures["acknowledged"] == 2 and v.figures["lost"] == 0


def test_an_acknowledged_message_missing_is_lost() -> None:
    sends = [ack("k0", 0, 1, 0), ack("k1", 1, 2, 1)]
    v = acked_readable(sends, stored(sends[0]))
    assert not v.ok and v.figures["lost"] == 1
    assert v.problems[0].startswith("lost: k1 acked at broker-a/0@1")


def test_an_unconfirmed_or_unknown_send_missing_is_not_lost() -> None:
    sends = [Send("k0", 0, 1, "unconfirmed", "broker-a", 0, 0, A), Send("k1", 0, 3, "unknown")]
    assert acked_readable(sends, []).ok


def test_an_acknowledged_offset_holding_another_message_is_a_rewrite() -> None:
    sends = [ack("k0", 0, 1, 0)]
    moved = [Stored("broker-a", 0, 0, "other", A), Stored("broker-a", 0, 7, "k0", A)]
    v = acked_readable(sends, moved)
    assert not v.ok and v.figures["lost"] == 0
    assert "moved: k0" in v.problems[0] and "'other'" in v.problems[0]


def test_a_log_growing_in_real_time_has_one_master() -> None:
    # overlapping sends may be acked in any order; a master change (A, then B) is fine
    sends = [ack("k0", 0, 2, 1), ack("k1", 0.5, 1, 0), ack("k2", 3, 4, 2),
             ack("k3", 10, 11, 3, host=B), ack("k4", 12, 13, 4, host=B)]  # fmt: skip
    v = single_master(sends)
    assert v.ok, v
    assert v.figures["acking hosts in order"] == {"broker-a": f"{A} -> {B}"}


def test_one_offset_acknowledged_for_two_messages_is_a_fork() -> None:
    sends = [ack("k0", 0, 1, 0, host=A), ack("k1", 0.2, 0.8, 0, host=B)]
    v = single_master(sends)
    assert not v.ok
    assert any(p.startswith("fork: broker-a/0@0") for p in v.problems), v


def test_an_offset_below_one_acknowledged_earlier_is_a_second_log() -> None:
    """B, on a log without A's ack, hands out offset 1 after A had acked offset 2."""
    sends = [ack("k0", 0, 1, 1), ack("k1", 1, 2, 2), ack("k2", 3, 4, 1, host=B)]
    v = single_master(sends)
    assert not v.ok
    assert any("went back: broker-a/0: k2 acked at offset 1" in p for p in v.problems), v


def test_queues_are_checked_apart() -> None:
    sends = [ack("k0", 0, 1, 5, queue=0), ack("k1", 2, 3, 0, queue=1)]
    assert single_master(sends).ok


def test_offsets_that_only_grow_hold() -> None:
    commits = [Commit("broker-a", 0, 10, 0, 1, True), Commit("broker-a", 0, 20, 2, 3, True)]
    queries = [Query("broker-a", 0, 10, 1.5, 1.6, True), Query("broker-a", 0, 25, 4, 5, True)]
    deliveries = [Delivery("broker-a", 0, 20, 24, 3.5)]
    v = offsets_never_back(commits, queries, deliveries)
    assert v.ok, v
    assert v.figures == {"commits_acked": 2, "queries": 2}


def test_a_query_below_an_acknowledged_commit_went_back() -> None:
    """What a slave answers from its 10 s old copy after its master died (r#9804)."""
    commits = [Commit("broker-a", 0, 20, 2, 3, True)]
    queries = [Query("broker-a", 0, 12, 5, 6, True, host=B)]
    v = offsets_never_back(commits, queries, [])
    assert not v.ok and "query went back: broker-a/0 answered 12" in v.problems[0]


def test_a_failed_commit_or_query_binds_nothing() -> None:
    commits = [Commit("broker-a", 0, 50, 0, 1, False)]
    queries = [Query("broker-a", 0, 10, 2, 3, True), Query("broker-a", 0, -1, 2, 3, False)]
    assert offsets_never_back(commits, queries, []).ok


def test_a_query_overlapping_its_commit_may_see_the_older_value() -> None:
    commits = [Commit("broker-a", 0, 20, 2, 3, True)]
    queries = [Query("broker-a", 0, 10, 2.5, 3.5, True)]  # sent before the commit's ack
    assert offsets_never_back(commits, queries, []).ok


def test_a_delivery_below_an_acknowledged_commit_went_back() -> None:
    commits = [Commit("broker-a", 1, 40, 0, 1, True)]
    v = offsets_never_back(commits, [], [Delivery("broker-a", 1, 30, 39, 2)])
    assert not v.ok and v.problems[0].startswith("redelivered: broker-a/1 offsets 30..39")


def test_no_new_master_after_a_kill_is_unbounded() -> None:
    """Static roles: the killed master's return is the only way writes come back."""
    kill = Fault("kill", "broker-a", A, 10, 13)
    sends = [ack("k0", 9, 9.5, 0), Send("k1", 10.5, 13.5, "unknown"), ack("k2", 14, 14.2, 1)]
    recs = recoveries(sends, [kill], until=20)
    assert recs[0].new_master is None
    assert recs[0].writes_back is not None and abs(recs[0].writes_back - 4.2) < 1e-9
    v = time_to_new_master(recs)
    assert v.figures["unbounded"] == 1 and v.figures["p50"] == "never (unbounded)"
    assert v.figures["max"] == "never (unbounded)"


def test_a_new_master_ack_after_the_loss_is_timed() -> None:
    kill = Fault("kill", "broker-a", A, 10, 30)
    pause = Fault("pause", "broker-a", B, 40, 42)
    sends = [ack("k0", 10.2, 10.5, 0), ack("k1", 11, 13, 1, host=B),  # k0: sent after, acked by A
             ack("k2", 43, 46, 2, host=A)]  # fmt: skip
    recs = recoveries(sends, [kill, pause], until=50)
    assert [r.new_master for r in recs] == [3, 6]
    v = time_to_new_master(recs)
    assert v.figures["unbounded"] == 0 and v.figures["max"] == "6.00 s"
    assert v.figures["p50"] == "3.00 s"


def test_faults_that_keep_the_master_are_not_losses() -> None:
    cut = Fault("cut-clients", "broker-a", A, 0, 2)
    v = time_to_new_master(recoveries([ack("k0", 3, 4, 0)], [cut], until=5))
    assert v.figures["losses"] == 0 and v.ok


def test_records_round_trip_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    rec = Recorder(path)
    records = [ack("k0", 0, 1, 0), Commit("broker-a", 0, 1, 0, 1, True),
               Query("broker-a", 0, 1, 2, 3, True, A), Delivery("broker-a", 0, 0, 3, 1.0),
               Fault("kill", "broker-a", A, 1, 2)]  # fmt: skip
    for r in records:
        rec(r)
    rec.close()
    with path.open("a") as f:
        f.write('{"type": "send", "key": "cut sh')  # a writer killed mid-line
    h = history_of(read_records(path))
    assert (h.sends, h.commits, h.queries, h.deliveries, h.faults) == tuple([r] for r in records)


def test_at_a_kill_one_survivor_holding_each_acknowledged_message_is_enough() -> None:
    """run.on_survivors: the survivors' union. A survivor outside the SyncStateSet may hold
    an unacknowledged message of its own at an acknowledged place (a 21-round run flagged
    74 such, the other survivor holding every acknowledged one); none holding it is a loss,
    and one holding it only at another place a rewrite."""
    sends = [ack("k0", 0, 1, 0), ack("k1", 1, 2, 1), ack("late", 5, 6, 2)]
    kept = [*stored(*sends[:2]), Stored("broker-a", 0, 1, "stray", B)]
    v = on_survivors(sends, [(3.0, kept)])
    assert v.ok, v
    assert v.figures["acknowledged_summed_over_kills"] == 2  # "late" came after the kill
    missing = on_survivors(sends, [(3.0, [Stored("broker-a", 0, 1, "stray", B)])])
    assert missing.count == 2 and missing.figures["lost"] == 2
    assert missing.problems[0].startswith("kill 1: lost: k0 acked at broker-a/0@0")
    elsewhere = on_survivors(sends, [(3.0, [*stored(sends[0]), Stored("broker-a", 0, 9, "k1", B)])])
    assert elsewhere.count == 1 and elsewhere.figures["lost"] == 0
    assert "moved: k1" in elsewhere.problems[0]
