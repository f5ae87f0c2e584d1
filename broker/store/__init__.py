"""The broker's durable store -- CommitLog, ConsumeQueues, index, flush, recovery, retention
(DefaultMessageStore). Pure storage: no networking. ``MessageStore`` is in ``store``; this
package's own module stays uncompiled (mypyc would derive a compiled package's ``__path__``
from its shared library's place, which package-dir moves).

May import: remoting.protocol, remoting.files, remoting.errors, remoting.tasks.
"""

from aiorocketmq.broker.store.results import GetResult, GetStatus, PutResult, PutStatus
from aiorocketmq.broker.store.store import MessageStore

__all__ = ["GetResult", "GetStatus", "MessageStore", "PutResult", "PutStatus"]
