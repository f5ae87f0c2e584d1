"""AclGuard: the ACL check a RemotingServer runs on each request before dispatch (4.9.8's RPC
hook, BrokerController.initialAcl), and the account of what it refused.

A refused request is answered SYSTEM_ERROR (1) with Java's remark (the dispatcher does that;
a oneway request gets no answer), counted by reason (``failures``, on /metrics) and logged at
most once a minute per client address and access key, with the count held back since.
"""

from __future__ import annotations

from typing import Any, Final

from aiorocketmq.remoting.acl.address import remote_ip
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.passed import Passed
from aiorocketmq.remoting.acl.validator import Policy, check, check_signature
from aiorocketmq.remoting.acl.watch import AclFiles
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.signature import ACCESS_KEY
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = get_logger(__name__)

LOG_INTERVAL: Final = 60.0  # seconds between lines for one client address and access key


class AclGuard:
    """``guard(request, connection)``: None to serve it, else the remark to refuse it with."""

    __slots__ = ("_passed", "_warn", "failures", "files", "policy")

    def __init__(self, files: AclFiles, policy: Policy, *, log_interval: float = LOG_INTERVAL):
        self.files = files
        self.policy = policy
        self.failures: dict[str, int] = {}  # reason -> refusals
        self._warn = WarnLimiter(log_interval)
        self._passed = Passed()  # requests like one let through need only their signature

    def __call__(self, cmd: RemotingCommand, conn: Any) -> str | None:
        checked = self.policy.checked
        if checked is not None and cmd.code not in checked:
            return None
        peer: str = conn.peer
        rules = self.files.rules
        key = self._passed.key(cmd, peer)
        try:
            if key is not None:
                account = self._passed.get(rules, key)
                if account is not None:
                    check_signature(account, cmd)
                    return None
                if self._passed.white(key):
                    return None
            account = check(rules, self.policy, cmd, remote_ip(peer))
        except AclError as exc:
            self.refused(exc, remote_ip(peer), cmd.ext_fields.get(ACCESS_KEY), code=cmd.code)
            return exc.remark
        if key is not None:
            self._passed.put(rules, key, account)
        return None

    def refused(
        self,
        exc: AclError,
        ip: str,
        access_key: str | None,
        port: str | None = None,
        **context: Any,
    ) -> None:
        """Count a refusal and log it, unless this client (address and access key, on this
        ``port``: None for requests, "ha" for replication) was logged within the interval."""
        self.failures[exc.reason] = self.failures.get(exc.reason, 0) + 1
        held_back = self._warn.hit((ip, access_key, port))
        if port is not None:
            context["port"] = port
        if held_back is not None:
            log.warning("acl_refused", peer=ip, access_key=access_key, reason=exc.reason,
                        error=exc.message, suppressed=held_back, **context)  # fmt: skip
