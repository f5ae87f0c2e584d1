"""How a server's ACL keys become the objects of this package: where the ACL files are
(``aclFile``, ``aclDir``), and the inner credentials a broker signs its own requests with
(``innerClientAuthenticationCredentials``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from aiorocketmq.remoting.acl.files import Location
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.signature import Credentials

INNER_CREDENTIALS_KEY = "innerClientAuthenticationCredentials"


def location(acl_file: str, acl_dir: str, env: Mapping[str, str] = os.environ) -> Location:
    """``aclFile`` and ``aclDir``, or 4.9.8's places under ROCKETMQ_HOME:
    ``${ROCKETMQ_HOME}/conf/plain_acl.yml`` (``-Drocketmq.acl.plain.file`` names another,
    relative to ROCKETMQ_HOME) and ``${ROCKETMQ_HOME}/conf/acl``; without ROCKETMQ_HOME, under
    the current directory."""
    home = Path(env.get("ROCKETMQ_HOME") or ".").expanduser()
    default_file = Path(acl_file).expanduser() if acl_file else home / "conf" / "plain_acl.yml"
    directory = Path(acl_dir).expanduser() if acl_dir else home / "conf" / "acl"
    return Location(default_file.absolute(), directory.absolute())


def inner_credentials(text: str) -> Credentials | None:
    """``{"accessKey": "...", "secretKey": "..."}`` (5.x's AuthConfig value), or None when
    unset. Raises ConfigError, never naming the secret."""
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        raise ConfigError(
            f'{INNER_CREDENTIALS_KEY}: expected JSON {{"accessKey": "...", "secretKey": "..."}}'
        ) from None
    access_key = obj.get("accessKey") if isinstance(obj, dict) else None
    secret_key = obj.get("secretKey") if isinstance(obj, dict) else None
    if not (
        isinstance(access_key, str) and access_key and isinstance(secret_key, str) and secret_key
    ):
        raise ConfigError(f"{INNER_CREDENTIALS_KEY}: both accessKey and secretKey are needed")
    return Credentials(access_key, secret_key)
