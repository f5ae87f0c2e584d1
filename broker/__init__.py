"""The broker: durable store, send and pull paths, consumer groups, delay levels,
transactions and replication.

May import: remoting (reaches name servers through remoting.client, never the SDK).
Not yet built; see the broker issues.
"""
