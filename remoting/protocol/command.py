"""RemotingCommand, its flag bits, response building and the per-process opaque counter."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.remoting.protocol.codes import CURRENT_VERSION, LanguageCode, SerializeType

RESPONSE_FLAG: Final = 0x1
ONEWAY_FLAG: Final = 0x2

_INT32_MIN: Final = -(2**31)


@dataclass(slots=True)
class RemotingCommand:
    """One request or response: a header (code ... ext_fields) plus an opaque body.

    ``code`` stays an ``int`` because peers send codes we do not know. ``serialize_type`` is the
    header encoding this command arrived in, or will be sent in.
    """

    code: int
    language: int = LanguageCode.PYTHON
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: int = SerializeType.MSGPACK
    # set when the header decoded but cannot be served as sent (text that is not valid
    # UTF-8): the request is answered with this remark and never reaches a handler
    refusal: str | None = None

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        """A new request; the channel that sends it assigns the opaque."""
        return cls(
            code=code,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
            flag=ONEWAY_FLAG if oneway else 0,
        )


def response_to(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    """A response to ``request``: same opaque and header encoding, response flag set."""
    return RemotingCommand(
        code=code,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        ext_fields=ext_fields if ext_fields is not None else {},
        body=body,
        serialize_type=request.serialize_type,
    )


# compat: Java's RemotingCommand.requestId is an AtomicInteger starting at 0 that wraps to
# negative values; ours does the same within int32.
_opaques = itertools.count()


def next_opaque() -> int:
    """The next request id of this process, wrapping within int32."""
    return ((next(_opaques) - _INT32_MIN) & 0xFFFFFFFF) + _INT32_MIN
