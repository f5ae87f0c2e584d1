"""aiorocketmq: a RocketMQ-compatible broker cluster, its asyncio SDK and a PySpark connector.

The SDK's public names are here, as ``aiokafka`` offers its own::

    from aiorocketmq import Message, Producer, PushConsumer

The packages: ``aiorocketmq.client`` (the SDK; ``aiorocketmq.client.sync`` without asyncio,
``aiorocketmq.client.admin`` is mqadmin), ``aiorocketmq.spark`` (the data source),
``aiorocketmq.namesrv`` and ``aiorocketmq.broker`` (the servers), ``aiorocketmq.remoting``
(the wire protocol) and ``aiorocketmq.deploy`` (mqcluster). In the repository each is a
top-level folder of the same name (pyproject.toml's package-dir).
"""

from aiorocketmq.client import *  # noqa: F403 -- the SDK's face is the root's
from aiorocketmq.client import __all__ as __all__
