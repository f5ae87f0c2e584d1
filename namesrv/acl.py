"""What the name server's ACL checks (ours: 4.9.8's name server has no ACL; issue 32).

With ``aclEnable=true`` the requests that change the name server's state must come from a
white-listed address or be signed by an **admin** account of the ACL files (same format as
the broker's): a registration decides where every client of a topic sends, a KV put changes
the order-topic config, a permission wipe stops a broker's writes -- each is cluster-wide, so
no per-topic account may do them. The read codes stay open to anyone, as Apache's name
server is (clients look routes up before they have a broker to sign for): route lookups,
cluster info, topic lists, KV reads. Codes the name server does not serve are not checked.
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.acl.validator import Policy
from aiorocketmq.remoting.protocol.codes import RequestCode as C

WRITE_CODES: Final = frozenset({
    C.PUT_KV_CONFIG,  # 100
    C.DELETE_KV_CONFIG,  # 102
    C.REGISTER_BROKER,  # 103
    C.UNREGISTER_BROKER,  # 104
    C.WIPE_WRITE_PERM_OF_BROKER,  # 205
    C.DELETE_TOPIC_IN_NAMESRV,  # 216
    C.UPDATE_NAMESRV_CONFIG,  # 318 (not served: answered 3 once signed)
    C.QUERY_DATA_VERSION,  # 322: keeps a registered broker alive
    C.ADD_WRITE_PERM_OF_BROKER,  # 327
})  # fmt: skip

POLICY: Final = Policy(checked=WRITE_CODES, admin_codes=WRITE_CODES, resources=False)
