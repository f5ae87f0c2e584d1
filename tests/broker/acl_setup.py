"""A broker with ACL 1.0 on, for the ACL tests: its files, accounts and signed clients."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.signature import Credentials

ADMIN: Final = Credentials("adminKey01", "adminSecret1")
USER: Final = Credentials("userKey01", "userSecret1")
WHITE: Final = Credentials("whiteKey01", "whiteSecret1")  # whiteRemoteAddress 127.0.0.1
FAR: Final = Credentials("farKey0001", "farSecret01")  # whiteRemoteAddress 192.168.1.*

PLAIN_ACL: Final = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: adminKey01
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - allowed=PUB|SUB
      - readonly=SUB
    groupPerms:
      - denied=DENY
  - accessKey: whiteKey01
    secretKey: whiteSecret1
    whiteRemoteAddress: 127.0.0.1
    defaultTopicPerm: DENY
  - accessKey: farKey0001
    secretKey: farSecret01
    whiteRemoteAddress: 192.168.1.*
    defaultTopicPerm: PUB
"""

_PLAIN: Final = "org.apache.rocketmq.acl.plain."


def remark(message: str, frame: str) -> str:
    """What 4.9.8 answers a refused request: the AclException and its first stack frame."""
    return f"org.apache.rocketmq.acl.common.AclException: {message}, {_PLAIN}{frame}"


def inner(credentials: Credentials) -> str:
    """The innerClientAuthenticationCredentials value (5.x's AuthConfig JSON)."""
    return json.dumps({"accessKey": credentials.access_key, "secretKey": credentials.secret_key})


def acl_files(root: Path, text: str = PLAIN_ACL) -> dict[str, str]:
    """Write ``plain_acl.yml`` (and an empty ACL directory) under ``root``; the broker keys
    that point at them."""
    conf = root / "conf"
    (conf / "acl").mkdir(parents=True, exist_ok=True)
    (conf / "plain_acl.yml").write_text(text)
    return {"aclEnable": "true", "aclFile": str(conf / "plain_acl.yml"),
            "aclDir": str(conf / "acl")}  # fmt: skip


@asynccontextmanager
async def client(credentials: Credentials | None = None) -> AsyncIterator[RemotingClient]:
    """A client speaking JSON headers (a Java client's), signing with ``credentials``."""
    cli = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON), credentials=credentials)
    try:
        yield cli
    finally:
        await cli.close()


def events(lines: Iterator[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [e for e in lines if e.get("event") == name]
