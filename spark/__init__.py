"""A PySpark data source: batch and streaming reads of queues into DataFrames, and a sink.

May import: client (plus pyspark and pyarrow), never remoting, namesrv or broker directly.
Not yet built; see the Spark connector issue.
"""
