"""Kafka's per-queue time options (issue 34 item 2), parsed and checked with no Spark session
and no cluster."""

from __future__ import annotations

import pytest

from tests.spark.test_options import BASE, read, refused


def test_by_timestamp_options_parse() -> None:
    """JSON in startingOffsets' spelling, ms per queue; the strategy is error by default."""
    times = '{"t": {"broker-a": {"0": 1700000000000, "1": 0}}}'
    opts = read(False, startingOffsetsByTimestamp=times, endingOffsetsByTimestamp=times,
                startingOffsetsByTimestampStrategy="LATEST")  # fmt: skip
    want = {"t": {"broker-a": {"0": 1_700_000_000_000, "1": 0}}}
    assert opts.starting_offsets_by_timestamp == want
    assert opts.ending_offsets_by_timestamp == want
    assert opts.starting_timestamp_strategy == "latest"
    assert read().starting_timestamp_strategy == "error"
    assert read().starting_offsets_by_timestamp is None


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"startingoffsetsbytimestamp": "earliest"}, True,
         "startingOffsetsByTimestamp must be JSON"),
        ({"startingoffsetsbytimestamp": '{"t": {"b": {"0": -1}}}'}, True, "t/b/0 must be"),
        ({"startingoffsetsbytimestamp": '{"u": {"b": {"0": 5}}}'}, True,
         "startingOffsetsByTimestamp names u/b/0, which the query does not read"),
        ({"endingoffsetsbytimestamp": '{"t": {"b": {"0": 5}}}'}, True,
         "endingOffsetsByTimestamp applies to batch queries only"),
        ({"startingoffsetsbytimestampstrategy": "earliest"}, True,
         "startingOffsetsByTimestampStrategy must be error or latest"),
    ],
)  # fmt: skip
def test_by_timestamp_options_refused(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    refused(message, BASE | options, streaming=streaming)
