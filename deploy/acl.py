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
import sys
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
    home: Path  # <data>/acl, an Apache ROCKETMQ_HOME (compose: deploy/secrets)
    admin: Account
    app: Account
    conf: Path  # where plain_acl.yml and tools.yml are: <home>/conf (compose: home)

    @property
    def plain_acl(self) -> Path:
        return self.conf / "plain_acl.yml"

    @property
    def tools_yml(self) -> Path:
        return self.conf / "tools.yml"

    @property
    def acl_dir(self) -> Path:
        return self.conf / "acl"

    def broker_keys(self, acl_file: str, acl_dir: str) -> dict[str, str]:
        """What each broker's conf file gets (the ACL files where the broker sees them)."""
        inner = {"accessKey": self.admin.access_key, "secretKey": self.admin.secret_key}
        return {
            "aclEnable": "true",
            "aclFile": acl_file,
            "aclDir": acl_dir,
            "innerClientAuthenticationCredentials": json.dumps(inner, separators=(",", ":")),
        }

    def broker_conf(
        self, installed: Path, name: str, *, out: Path | None = None, mode: int = 0o600,
        acl_file: str | None = None, acl_dir: str | None = None,
    ) -> Path:  # fmt: skip
        """``installed`` with the ACL keys appended, as ``<out>/<name>.conf`` (default: the
        launcher's, under home, 0600)."""
        keys = self.broker_keys(acl_file or str(self.plain_acl), acl_dir or str(self.acl_dir))
        lines = [installed.read_text().rstrip("\n"), "", "# ACL 1.0 (deploy/acl.py)"]
        lines += [f"{key}={value}" for key, value in keys.items()]
        path = (out or self.home) / f"{name}.conf"
        _write_private(path, "\n".join(lines) + "\n", mode)
        return path


def new_key(prefix: str = "") -> str:
    return prefix + "".join(secrets.choice(KEY_ALPHABET) for _ in range(KEY_LENGTH))


def prepare(data: Path) -> DemoAcl:
    """The data directory's demo accounts: read from ``keys.json``, else made and written."""
    home = data / ACL_DIR
    return prepare_in(home, home / "conf", 0o600)


def prepare_in(home: Path, conf: Path, mode: int) -> DemoAcl:
    """The accounts of ``home/keys.json``, else new ones, with plain_acl.yml and tools.yml
    written in ``conf`` (``mode``: their permissions)."""
    keys = home / "keys.json"
    if keys.exists():
        saved = json.loads(keys.read_text())
        return DemoAcl(home, Account(**saved["admin"]), Account(**saved["app"]), conf)
    acl = DemoAcl(
        home,
        Account(new_key("rmqAdmin"), new_key()),
        Account(new_key("rmqApp"), new_key()),
        conf,
    )
    if conf == home / "conf":
        acl.acl_dir.mkdir(parents=True, exist_ok=True)
    _write_private(acl.plain_acl, plain_acl_yml(acl), mode)  # new keys: a new file
    _write_private(
        acl.tools_yml,
        f"# mqadmin's account (Apache's tools.yml)\naccessKey: {acl.admin.access_key}\n"
        f"secretKey: {acl.admin.secret_key}\n",
        mode,
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


def _write_private(path: Path, text: str, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(mode)  # an existing file keeps its mode through O_CREAT


# ------------------------------------------------------------------ compose's secrets

COMPOSE_CONF = Path(__file__).resolve().parent / "conf" / "compose"
COMPOSE_BROKERS = ("broker-a", "broker-a-s", "broker-b")
SECRETS = "/run/secrets"  # where Compose mounts a service's secrets


def compose_secrets(out: Path) -> DemoAcl:
    """The files deploy/docker-compose.acl.yml mounts as secrets, made on the host under
    ``out`` (deploy/secrets; never in the image: .dockerignore leaves it out): the demo
    accounts (kept when ``out`` already has them), plain_acl.yml, tools.yml and each broker's
    compose conf file plus the ACL keys, pointing at the secrets' paths in the containers.

    ``out`` is 0700, so no other user of the host reads them; the files are 0644, since
    Compose (without swarm) mounts a secret with the host file's owner and mode and the
    image's user (uid 10001) must read it."""
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o700)
    acl = prepare_in(out, out, 0o644)
    where = {"acl_file": f"{SECRETS}/plain_acl.yml", "acl_dir": f"{SECRETS}/acl.d"}
    for name in COMPOSE_BROKERS:
        acl.broker_conf(COMPOSE_CONF / f"{name}.conf", name, out=out, mode=0o644, **where)
    return acl


def main(argv: list[str] | None = None) -> int:
    """``python -m aiorocketmq.deploy.acl [DIR]``: compose_secrets(DIR, default
    deploy/secrets), then the accounts and how to start compose with them."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path("deploy/secrets")
    acl = compose_secrets(out)
    print(f"ACL files for deploy/docker-compose.acl.yml in {out} (0700; never in the image)")
    for line in usage(acl, "127.0.0.1:9876", str(out))[1:3]:
        print(line)
    print('start: make compose ARGS="-f deploy/docker-compose.acl.yml up -d --build"')
    print(f"mqadmin: .venv/bin/mqadmin clusterList --tools-yml {out}/tools.yml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
