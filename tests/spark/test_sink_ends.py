"""How the exactly-once sink sizes its batch ENDs (spark/sink_ends.py) and what its commit
log keeps for that (spark/sink_txlog.py): pure, no Spark, no broker. A request whose halves
each hold 128 rows once ended 1,024 of them -- 131,072 messages for the broker to append in
one request, which took longer than the 3 s send timeout on a busy machine (seen in
benchmarks/spark_write.py), so the commit counted every END of it as failed."""

from __future__ import annotations

from aiorocketmq.spark.sink_ends import END_MESSAGES, PART, part_size
from aiorocketmq.spark.sink_txlog import MOST_ROWS, Record


def test_a_request_commits_about_one_append_of_messages() -> None:
    assert part_size(1) == PART == 1024  # a half a row: 1,024 ENDs a request
    assert part_size(128) * 128 == END_MESSAGES == 4096  # the sink's default batchSize
    assert part_size(100) == 40
    assert part_size(MOST_ROWS) == part_size(10_000) == 1  # never none
    assert part_size(0) == PART


def test_a_record_keeps_its_rows_and_one_written_before_assumes_the_most() -> None:
    halves = tuple(("T", "b", -1, i, f"off{i}", f"id{i}") for i in range(3))
    record = Record(("w1",), halves, "host 1 2", rows=300)
    again = Record.from_json(record.to_json())
    assert again == record and again.per_half() == 100
    assert Record(("w1",), halves, "host 1 2", rows=301).per_half() == 101  # rounded up
    old = b'{"writers": ["w1"], "halves": [["T", "b", -1, 0, "o", "u"]], "committer": "h 1 2"}'
    assert Record.from_json(old).per_half() == MOST_ROWS  # not known: the worst case
