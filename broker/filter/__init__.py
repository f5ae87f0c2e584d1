"""SQL92 message filtering on the broker (4.9.8's broker/filter): the filters consumer groups
registered with their heartbeats, persisted to consumerFilter.json; compiled expressions
shared by pulls; the property match a pull hands the store. No bloom filter and no
ConsumeQueueExt: every candidate message is evaluated on its stored properties.

May import: remoting.protocol (the SQL92 language is remoting.protocol.sql92), broker.
"""
