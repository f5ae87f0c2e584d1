"""AclProcessor: the ACL management codes (AdminBrokerProcessor.updateAndCreateAccessConfig,
deleteAccessConfig, getBrokerAclConfigVersion, updateGlobalWhiteAddrsConfig).

50 UPDATE_AND_CREATE_ACL_CONFIG, 51 DELETE_ACL_CONFIG and 53 UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
rewrite an ACL file atomically, its dataVersion bumped, and the rules are reloaded at once;
their failures are 209, 210 and 211 (4.x's ACL codes), with 4.9.8's remarks. 52
GET_BROKER_CLUSTER_ACL_INFO answers the files' data versions. 54 (GET_BROKER_CLUSTER_ACL_CONFIG,
which listed every secret) was removed in 4.9.8 and is answered 3, as by 4.9.8.

compat: with aclEnable=false 4.9.8 meets a NullPointerException here (50, 51, 53 answer their
failure code with no remark; 52 does not answer at all); here each says ACL is off.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import structlog

from aiorocketmq.remoting.acl.edit import (
    AccessConfig,
    delete_account,
    java_split,
    update_account,
    update_global_white,
)
from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.files import Location, acl_files, parse_yaml, write
from aiorocketmq.remoting.acl.watch import AclFiles
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.register import DataVersion

log = structlog.get_logger(__name__)

# compat: ResponseCode (4.x) -- 5.x gave these numbers other meanings
UPDATE_AND_CREATE_ACL_CONFIG_FAILED: Final = 209
DELETE_ACL_CONFIG_FAILED: Final = 210
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED: Final = 211
ACL_OFF: Final = "ACL is not enabled on this broker (aclEnable=false)"

Identity = Callable[[], tuple[str, str, str]]  # () -> (cluster, broker name, broker addr)


def _read_doc(path: str) -> dict[str, Any] | None:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    doc = parse_yaml(path, data)
    if doc is not None and not isinstance(doc, dict):
        raise AclError(f"{path}: expected a mapping at the top")
    return doc


def _our_file(where: Location, given: str | None) -> str | None:
    """The ACL file code 53 names (none: the default file), if it is one of this server's;
    ours: 4.9.8 takes any existing file under ROCKETMQ_HOME."""
    path = Path(given).absolute() if given else where.default_file
    return str(path) if path in acl_files(where) else None


class AclProcessor:
    def __init__(self, files: AclFiles | None, identity: Identity) -> None:
        self.files = files  # None: aclEnable=false
        self.identity = identity
        self._started_ms = now_ms()  # the default file's version when it has none

    async def _rewrite(self, path: str, edit: Callable[[dict[str, Any] | None], Any]) -> Any:
        """Read ``path``, ``edit`` it, write the result (unless None) and reload the rules."""
        assert self.files is not None
        doc = await asyncio.to_thread(_read_doc, path)
        new = edit(doc)
        if new is not None:
            await asyncio.to_thread(write, path, new)
            await self.files.reload()
        return new

    async def update(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = CreateAccessConfigRequestHeader.from_ext(req.ext_fields)
        failed = UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        if self.files is None:
            return response_to(req, failed, ACL_OFF)
        config = AccessConfig(
            access_key=hdr.access_key,
            secret_key=hdr.secret_key,
            white_remote_address=hdr.white_remote_address,
            admin=hdr.admin,
            default_topic_perm=hdr.default_topic_perm,
            default_group_perm=hdr.default_group_perm,
            topic_perms=java_split(hdr.topic_perms),
            group_perms=java_split(hdr.group_perms),
        )
        async with self.files.lock:
            # an account updates in the file that defines it; a new one goes to the default
            rules = self.files.rules
            path = rules.owner.get(hdr.access_key, str(self.files.where.default_file))
            try:
                await self._rewrite(path, lambda doc: update_account(doc, config, now_ms()))
            except (AclError, OSError) as exc:
                return self._failed(req, failed, exc, access_key=hdr.access_key,
                                    secret=hdr.secret_key)  # fmt: skip
        log.info("acl_account_updated", access_key=hdr.access_key, file=path, peer=ch.peer)
        return response_to(req, ResponseCode.SUCCESS)

    async def delete(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = DeleteAccessConfigRequestHeader.from_ext(req.ext_fields)
        failed = DELETE_ACL_CONFIG_FAILED
        if self.files is None:
            return response_to(req, failed, ACL_OFF)
        remark = (
            f"The accesskey[{hdr.access_key}] corresponding to accessConfig has been deleted "
            "failed."
        )
        async with self.files.lock:
            path = self.files.rules.owner.get(hdr.access_key) if hdr.access_key else None
            if path is None:
                return response_to(req, failed, remark)
            try:
                doc = await asyncio.to_thread(_read_doc, path)
                if not doc:  # compat: "No data found in <file>": success, nothing written
                    return response_to(req, ResponseCode.SUCCESS)
                new = await self._rewrite(
                    path, lambda d: delete_account(d, hdr.access_key, now_ms())
                )
            except (AclError, OSError) as exc:
                return self._failed(req, failed, exc, access_key=hdr.access_key)
        if new is None:
            return response_to(req, failed, remark)
        log.info("acl_account_deleted", access_key=hdr.access_key, file=path, peer=ch.peer)
        return response_to(req, ResponseCode.SUCCESS)

    async def update_global_white(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext(req.ext_fields)
        failed = UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        if self.files is None:
            return response_to(req, failed, ACL_OFF)
        remark = f"The globalWhiteAddresses[{hdr.global_white_addrs}] has been updated failed."
        addresses = java_split(hdr.global_white_addrs) or []
        async with self.files.lock:
            path = await asyncio.to_thread(_our_file, self.files.where, hdr.acl_file_full_path)
            if path is None:
                log.warning("acl_file_not_ours", file=hdr.acl_file_full_path, peer=ch.peer)
                return response_to(req, failed, remark)
            try:
                await self._rewrite(path, lambda d: update_global_white(d, addresses, now_ms()))
            except (AclError, OSError) as exc:
                return self._failed(req, failed, exc, file=path)
        log.info("acl_global_white_updated", addresses=addresses, file=path, peer=ch.peer)
        return response_to(req, ResponseCode.SUCCESS)

    def version_info(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        if self.files is None:
            return response_to(req, ResponseCode.SYSTEM_ERROR, ACL_OFF)
        rules = self.files.rules
        default = rules.versions.get(str(self.files.where.default_file))
        version = default or DataVersion(0, self._started_ms)
        cluster, name, addr = self.identity()
        header = GetBrokerAclConfigResponseHeader(
            version=json.dumps(version.to_json(), separators=(",", ":")),
            all_acl_file_version=json.dumps(
                {path: v.to_json() for path, v in rules.versions.items()}, separators=(",", ":")
            ),
            broker_name=name,
            broker_addr=addr,
            cluster_name=cluster,
        )
        return response_to(req, ResponseCode.SUCCESS, ext_fields=header.to_ext())

    @staticmethod
    def _failed(
        req: RemotingCommand,
        code: int,
        exc: Exception,
        *,
        secret: str | None = None,
        **context: Any,
    ) -> RemotingCommand:
        """The failure answer: 4.9.8's remark (the caller may see the secret it sent, as in
        4.9.8), the log line without it."""
        message = (exc.message if isinstance(exc, AclError) else str(exc)) or ""
        logged = message.replace(secret, "***") if secret else message
        log.warning("acl_update_failed", code=req.code, error=logged, **context)
        return response_to(req, code, message or None)
