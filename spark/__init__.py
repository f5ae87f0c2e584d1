"""A PySpark data source named ``rocketmq``: batch and Structured Streaming reads of
queues into DataFrames, and batch and streaming writes of DataFrames to topics.

    import aiorocketmq.spark
    aiorocketmq.spark.register(session)
    df = session.read.format("rocketmq").option("nameServer", "127.0.0.1:9876") \
        .option("subscribe", "TopicA").load()

May import: client (plus pyspark and pyarrow), never remoting, namesrv or broker directly.
"""

from __future__ import annotations

from typing import Any


def register(session: Any) -> None:
    """Make ``format("rocketmq")`` known to ``session`` (spark.dataSource.register), with
    Python filter pushdown on (``spark.sql.python.filterPushdown.enabled``, off by default):
    Spark refuses a reader that pushes filters without it, and the ``pushFilters=true``
    option's reader does."""
    from aiorocketmq.spark.source import RocketMQDataSource

    session.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    session.dataSource.register(RocketMQDataSource)


__all__ = ["register"]
