"""The sink's pure parts without Spark (issue 16 item 6; spark-connector.md §10 "Sink"):
record batches into messages, batch cutting, option parsing."""

from __future__ import annotations

import pickle

import pytest

pa = pytest.importorskip("pyarrow")

from aiorocketmq.client import Message  # noqa: E402
from aiorocketmq.spark.options import write_options  # noqa: E402
from aiorocketmq.spark.sink_rows import Columns, chunks, route  # noqa: E402


def batch(**columns: object) -> object:
    return pa.RecordBatch.from_pydict(columns)


def test_route_sorts_rows_by_how_they_are_sent() -> None:
    """Item 6: rows with a queueId by (topic, queueId) in row order; a DELAY property alone
    (a delayed message cannot be in a batch); the rest by topic."""
    rb = pa.RecordBatch.from_pydict(
        {
            "body": ["a", "b", "c", "d", "é"],
            "topic": ["T", "U", "T", "T", "U"],
            "queueId": [None, 1, None, 1, None],
            "properties": pa.array(
                [None, [("x", "1")], [("DELAY", "3")], None, [("y", None)]],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )
    routed = route(rb, Columns("body", "topic", properties="properties", queue_id="queueId"), None)
    assert routed.rows == 5
    assert {k: [m.body for m in v] for k, v in routed.batchable.items()} == {
        "T": [b"a"],
        "U": ["é".encode()],
    }
    assert routed.batchable["U"][0].properties == {}  # a null value means no property
    assert {k: [m.body for m in v] for k, v in routed.pinned.items()} == {("U", 1): [b"b"]} | {
        ("T", 1): [b"d"]
    }
    assert [(m.body, m.properties) for m in routed.singles] == [(b"c", {"DELAY": "3"})]


def test_route_keys_tags_and_the_topic_option() -> None:
    """Item 6: the topic option wins; array keys drop nulls and empties; empty tags are none."""
    rb = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([b"1", b"2", b"3"], pa.binary()),
            "topic": ["A", "B", None],
            "tags": ["t", "", None],
            "keys": pa.array([["k", None, ""], [], None], pa.list_(pa.string())),
        }
    )
    routed = route(rb, Columns("body", "topic", "tags", "keys"), "Opt")
    assert [(m.topic, m.tags, m.keys) for m in routed.batchable["Opt"]] == [
        ("Opt", "t", ["k"]),
        ("Opt", None, None),
        ("Opt", None, None),
    ]


@pytest.mark.parametrize(
    ("columns", "message"),
    [({"body": [b"x", None]}, "row 1 of a batch has a null body"),
     ({"body": [b"x"], "topic": [None]}, "row 0 of a batch has a null topic")],
)  # fmt: skip
def test_route_refuses_null_body_and_topic(columns: dict[str, list[object]], message: str) -> None:
    """Item 6: a null body or topic names the row."""
    rb = pa.RecordBatch.from_pydict(columns)
    with pytest.raises(ValueError, match=message):
        route(
            rb,
            Columns("body", "topic" if "topic" in columns else None),
            None if "topic" in columns else "T",
        )


def test_chunks_cut_by_count_and_bytes() -> None:
    """Item 6: batches of at most batchSize messages and about max_bytes, never empty."""
    small = [Message("T", b"x" * 72) for _ in range(10)]  # 200 bytes each, by _cost
    assert [len(c) for c in chunks(small, 4, 1 << 20)] == [4, 4, 2]
    assert [len(c) for c in chunks(small, 100, 1000)] == [5, 5]
    big = [Message("T", b"x" * 5000), Message("T", b"y")]
    assert [len(c) for c in chunks(big, 100, 1000)] == [1, 1]


def test_options_lower_cased_keys_and_defaults() -> None:
    """Item 6 / issue 16 item 3: keys arrive lower-cased from Spark; checkpointLocation is
    Spark's own, passed to a stream's sink only."""
    opts = write_options({"nameserver": "h:1", "batchsize": "7", "topic": " T "}, streaming=False)
    assert (opts.name_server, opts.batch_size, opts.topic) == ("h:1", 7, "T")
    assert opts.send_timeout_ms == 3000
    streamed = write_options({"nameServer": "h:1", "checkpointlocation": "/c"}, streaming=True)
    assert streamed.topic is None
    with pytest.raises(ValueError, match=r"unknown option.*checkpointlocation"):
        write_options({"nameServer": "h:1", "checkpointlocation": "/c"}, streaming=False)
    with pytest.raises(ValueError, match="not a valid topic name"):
        write_options({"nameServer": "h:1", "topic": " "}, streaming=False)


def test_writers_pickle_without_clients() -> None:
    """Item 6 / spark-connector.md §4: what Spark pickles holds options and column names
    only; clients are made in ``write()`` on the executor."""
    types = pytest.importorskip("pyspark.sql.types")
    from aiorocketmq.spark.sink import BatchWriter, StreamWriter, make_writer

    schema = types.StructType([types.StructField("Body", types.StringType())])
    for streaming, cls in ((False, BatchWriter), (True, StreamWriter)):
        writer = make_writer(
            {"nameserver": "h:1", "topic": "T"}, schema, False, streaming=streaming
        )
        copy = pickle.loads(pickle.dumps(writer))
        assert type(copy) is cls
        assert (copy.options, copy.columns) == (writer.options, Columns("Body"))
