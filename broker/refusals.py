"""EdgeRefusals: requests refused at the edge for a value the cluster cannot carry (issue 29;
the rules are remoting.protocol.bounds'). Each is answered with its remark, and logged at
most once a minute per kind, with the count of those left out: a client repeating a bad
request cannot flood the log."""

from __future__ import annotations

import structlog

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.throttle import Throttle

log = structlog.get_logger(__name__)


class EdgeRefusals:
    def __init__(self) -> None:
        self._throttle = Throttle()

    def refuse(
        self,
        req: RemotingCommand,
        ch: Channel,
        remark: str,
        code: int = ResponseCode.SYSTEM_ERROR,
        ext: dict[str, str] | None = None,
    ) -> RemotingCommand:
        """The answer refusing ``req`` with ``remark``; a warning (rate-limited) says so."""
        left_out = self._throttle.allow(req.code)
        if left_out is not None:
            log.warning("request_refused_at_edge", code=req.code, peer=ch.peer,
                        reason=remark[:512], left_out=left_out)  # fmt: skip
        return response_to(req, code, remark, ext)
