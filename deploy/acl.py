"""``mqcluster --acl`` (``make run ARGS="--acl"``): a demo ACL 1.0 setup, its brokers started
with ``aclEnable=true``.

Under ``<data>/acl``, laid out as Apache's ROCKETMQ_HOME (so ``ROCKETMQ_HOME=data/acl
mqadmin ...`` finds its tools.yml the way Apache's mqadmin does):

- ``conf/plain_acl.yml``: an admin account (all codes, every topic and group) and an
  application account (publish and subscribe on every topic and group, no admin codes), no
  white-listed address: every request must be signed;
- ``conf/tools.yml``: the admin account, for mqadmin;
- ``conf/acl/``: the brokers' directory of further ACL files (empty);
- ``keys.json``: the two accounts, which the launcher prints each time it starts;
- ``<broker>.conf``: the broker's installed conf file plus ``aclEnable``, ``aclFile``,
  ``aclDir`` and ``innerClientAuthenticationCredentials`` (the admin account, which the
  brokers sign their own requests with: to the name servers and, as a slave, to the master),
  so no secret is on a command line.

The files are written once, readable by their owner only (0600), and kept: a restart keeps
the accounts, and edits (by hand or ``updateAclConfig``); without ``keys.json`` new accounts
are made and every file is written again. ``--reset`` removes them with the data.
Keys are 24 random letters and digits (Apache refuses keys of 6 characters or fewer).
"""

from __future__ import annotations

import json
import os
import secrets
import string
from dataclasses import dataclass, field
from pathlib import Path

ACL_DIR = "acl"  # under the data directory
KEY_ALPHABET = string.ascii_letters + string.digits
KEY_LENGTH = 24


@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str = field(repr=False)


@dataclass(frozen=True)
class DemoAcl:
    home: Path  # <data>/acl, an Apache ROCKETMQ_HOME
    admin: Account
    app: Account

    @property
    def plain_acl(self) -> Path:
        return self.home / "conf" / "plain_acl.yml"

    @property
    def tools_yml(self) -> Path:
        return self.home / "conf" / "tools.yml"

    @property
    def acl_dir(self) -> Path:
        return self.home / "conf" / "acl"

    def broker_keys(self) -> dict[str, str]:
        """What each broker's conf file gets."""
        inner = {"accessKey": self.admin.access_key, "secretKey": self.admin.secret_key}
        return {
            "aclEnable": "true",
            "aclFile": str(self.plain_acl),
            "aclDir": str(self.acl_dir),
            "innerClientAuthenticationCredentials": json.dumps(inner, separators=(",", ":")),
        }

    def broker_conf(self, installed: Path, name: str) -> Path:
        """``installed`` with the ACL keys appended, as ``<home>/<name>.conf`` (0600)."""
        lines = [installed.read_text().rstrip("\n"), "", "# mqcluster --acl (deploy/acl.py)"]
        lines += [f"{key}={value}" for key, value in self.broker_keys().items()]
        path = self.home / f"{name}.conf"
        _write_private(path, "\n".join(lines) + "\n")
        return path


def new_key(prefix: str = "") -> str:
    return prefix + "".join(secrets.choice(KEY_ALPHABET) for _ in range(KEY_LENGTH))


def prepare(data: Path) -> DemoAcl:
    """The data directory's demo accounts: read from ``keys.json``, else made and written."""
    home = data / ACL_DIR
    keys = home / "keys.json"
    if keys.exists():
        saved = json.loads(keys.read_text())
        return DemoAcl(home, Account(**saved["admin"]), Account(**saved["app"]))
    acl = DemoAcl(
        home,
        Account(new_key("rmqAdmin"), new_key()),
        Account(new_key("rmqApp"), new_key()),
    )
    acl.acl_dir.mkdir(parents=True, exist_ok=True)
    _write_private(acl.plain_acl, plain_acl_yml(acl))  # new keys: a new file
    _write_private(
        acl.tools_yml,
        f"# mqadmin's account (Apache's tools.yml)\naccessKey: {acl.admin.access_key}\n"
        f"secretKey: {acl.admin.secret_key}\n",
    )
    saved = {
        "admin": {"access_key": acl.admin.access_key, "secret_key": acl.admin.secret_key},
        "app": {"access_key": acl.app.access_key, "secret_key": acl.app.secret_key},
    }
    _write_private(keys, json.dumps(saved, indent=2) + "\n")
    return acl


def plain_acl_yml(acl: DemoAcl) -> str:
    """Apache 4.9.8's plain_acl.yml format (distribution/conf/plain_acl.yml)."""
    return (
        "# written by mqcluster --acl: a demo. No address is white-listed: every request\n"
        "# must be signed by one of these accounts.\n"
        "accounts:\n"
        f"  - accessKey: {acl.admin.access_key}\n"
        f"    secretKey: {acl.admin.secret_key}\n"
        "    admin: true\n"
        "    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: PUB|SUB\n"
        f"  - accessKey: {acl.app.access_key}\n"
        f"    secretKey: {acl.app.secret_key}\n"
        "    admin: false\n"
        "    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: PUB|SUB\n"
    )


def usage(acl: DemoAcl, namesrv: str, shown_home: str) -> list[str]:
    """The lines the launcher prints: the accounts and how to use them."""
    app = acl.app
    return [
        f"ACL is on (brokers: aclEnable=true): accounts in {shown_home}/conf/plain_acl.yml;"
        " every request must be signed",
        f"  admin account: accessKey={acl.admin.access_key} secretKey={acl.admin.secret_key}",
        f"  app account:   accessKey={app.access_key} secretKey={app.secret_key}",
        f"  mqadmin signs with the admin account given ROCKETMQ_HOME={shown_home} (Apache's"
        f" conf/tools.yml) or --tools-yml {shown_home}/conf/tools.yml",
        f'  SDK: Producer("my_group", namesrv_addr="{namesrv}", access_key="{app.access_key}",'
        f' secret_key="{app.secret_key}")',
    ]


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT
