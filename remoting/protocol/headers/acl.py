"""ACL management headers (codes 50-53; 4.9.8's CreateAccessConfigRequestHeader,
DeleteAccessConfigRequestHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
GetBrokerAclConfigResponseHeader)."""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, header, wire


@header
class CreateAccessConfigRequestHeader(Header):
    """UPDATE_AND_CREATE_ACL_CONFIG (50); the perms are comma-separated ``name=PERM``."""

    access_key: str = field(metadata=wire("accessKey"))
    secret_key: str | None = field(default=None, metadata=wire("secretKey"))
    white_remote_address: str | None = field(default=None, metadata=wire("whiteRemoteAddress"))
    admin: bool = field(default=False, metadata=wire("admin"))
    default_topic_perm: str | None = field(default=None, metadata=wire("defaultTopicPerm"))
    default_group_perm: str | None = field(default=None, metadata=wire("defaultGroupPerm"))
    topic_perms: str | None = field(default=None, metadata=wire("topicPerms"))
    group_perms: str | None = field(default=None, metadata=wire("groupPerms"))

    def __repr__(self) -> str:  # the secret is never shown
        return (
            f"CreateAccessConfigRequestHeader(access_key={self.access_key!r}, admin={self.admin})"
        )


@header
class DeleteAccessConfigRequestHeader(Header):
    """DELETE_ACL_CONFIG (51)."""

    access_key: str = field(metadata=wire("accessKey"))


@header
class UpdateGlobalWhiteAddrsConfigRequestHeader(Header):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).

    compat: 4.9.8 requires ``aclFileFullPath`` (@CFNotNull), yet its mqadmin sends none
    without ``-p``, so that command always fails against a 4.9.8 broker; here a missing path
    means the default file, as 4.9.8's PlainPermissionManager reads an empty one."""

    global_white_addrs: str = field(metadata=wire("globalWhiteAddrs"))
    acl_file_full_path: str | None = field(default=None, metadata=wire("aclFileFullPath"))


@header
class GetBrokerAclConfigResponseHeader(Header):
    """GET_BROKER_CLUSTER_ACL_INFO (52)'s answer: ``version`` is the default file's
    DataVersion, ``allAclFileVersion`` every file's (JSON ``{path: DataVersion}``)."""

    version: str = field(metadata=wire("version"))
    all_acl_file_version: str | None = field(default=None, metadata=wire("allAclFileVersion"))
    broker_name: str = field(metadata=wire("brokerName"))
    broker_addr: str = field(metadata=wire("brokerAddr"))
    cluster_name: str = field(metadata=wire("clusterName"))
