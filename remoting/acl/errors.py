"""AclError: a refusal, worded as 4.9.8's AclException, and the remark it is answered with.

4.9.8 throws AclException from its RPC hook; NettyRemotingAbstract answers SYSTEM_ERROR (1)
with ``RemotingHelper.exceptionSimpleDesc(e)``: the exception's ``toString()`` and its first
stack frame, ``"<class>: <message>, <frame>"``. The frame is where 4.9.8 builds the exception
(the line numbers of the rocketmq-all-4.9.8 sources), so a remark reads as Java's does.
"""

from __future__ import annotations

from typing import Final

EXCEPTION_CLASS: Final = "org.apache.rocketmq.acl.common.AclException"

_PLAIN: Final = "org.apache.rocketmq.acl.plain"
# compat: the frames of PlainPermissionManager.java / PlainAccessValidator.java at 4.9.8
NO_ACCESS_KEY_FRAME: Final = (
    f"{_PLAIN}.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
)
UNKNOWN_KEY_FRAME: Final = (
    f"{_PLAIN}.PlainPermissionManager.validate(PlainPermissionManager.java:668)"
)
SIGNATURE_FRAME: Final = (
    f"{_PLAIN}.PlainPermissionManager.validate(PlainPermissionManager.java:684)"
)
ADMIN_FRAME: Final = f"{_PLAIN}.PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)"
DEFAULT_PERM_FRAME: Final = (
    f"{_PLAIN}.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"
)
OWNED_PERM_FRAME: Final = (
    f"{_PLAIN}.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"
)
PARSE_FRAME: Final = f"{_PLAIN}.PlainAccessValidator.parse(PlainAccessValidator.java:134)"


class AclError(Exception):
    """A request refused, or an ACL file or request that cannot be used.

    ``reason`` is a short stable name for /metrics and logs (``no_access_key``,
    ``unknown_access_key``, ``signature``, ``not_admin``, ``no_permission``, ``bad_request``,
    ``config``); ``frame`` the Java frame its remark names."""

    def __init__(self, message: str | None, *, reason: str = "config", frame: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.frame = frame

    @property
    def remark(self) -> str:
        """What 4.9.8 answers: ``exceptionSimpleDesc(e)``."""
        # compat: Throwable.toString omits ": <message>" when the message is null
        text = EXCEPTION_CLASS if self.message is None else f"{EXCEPTION_CLASS}: {self.message}"
        return f"{text}, {self.frame}" if self.frame else text
