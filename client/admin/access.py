"""What one mqadmin run signs with and how it connects (issue 32): ACL 1.0 credentials and TLS,
handed to every request the run sends, the SDK clients some commands start included.

Credentials, the first of these that gives any (a half pair is an error naming its source):

1. ``--access-key AK --secret-key SK`` (ours; the secret then shows in ``ps`` and the shell's
   history: prefer 2 or 3);
2. the variables ``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY`` (and
   ``ROCKETMQ_SECURITY_TOKEN``) (ours);
3. Apache's file: ``--tools-yml FILE``, else ``$ROCKETMQ_HOME/conf/tools.yml`` as Apache's
   mqadmin looks it up (MQAdminStartup, AclUtils.getAclRPCHook): ``accessKey:`` and
   ``secretKey:`` lines. A missing file means no signing, as Apache's; a blank key too, with
   a warning (Apache logs "AccessKey or secretKey is blank, the acl is not enabled.").

TLS (Apache: ``-Dtls.enable=true``): ``--tls`` encrypts without verifying the servers, as
Apache's client by default; ``--tls-ca FILE`` verifies them against that CA, names included
(``tls.client.trustCertPath`` with ``authServer``); ``--tls-cert``/``--tls-key``: a client
certificate for servers that require one (``tls.client.certPath``/``keyPath``).
"""

from __future__ import annotations

import argparse
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aiorocketmq.client import SecuritySettings, tls_context

ACCESS_KEY_ENV = "ROCKETMQ_ACCESS_KEY"
SECRET_KEY_ENV = "ROCKETMQ_SECRET_KEY"
SECURITY_TOKEN_ENV = "ROCKETMQ_SECURITY_TOKEN"
HOME_ENV = "ROCKETMQ_HOME"  # compat: MixAll.ROCKETMQ_HOME_ENV
TOOLS_FILE = "conf/tools.yml"  # compat: MixAll.ACL_CONF_TOOLS_FILE


class AccessError(ValueError):
    """Credentials or TLS settings that do not fit; the message never quotes a secret."""


@dataclass(frozen=True)
class Access:
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    tls: ssl.SSLContext | None = None
    source: str = ""  # where the credentials came from, for messages

    def keywords(self) -> SecuritySettings:
        return SecuritySettings(
            access_key=self.access_key,
            secret_key=self.secret_key,
            security_token=self.security_token,
            tls=self.tls,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The security options, in their own group of every command's help."""
    g = parser.add_argument_group("security (ACL 1.0 credentials and TLS; ours)")
    g.add_argument(
        "--access-key",
        metavar="AK",
        help=f"sign requests with this access key (else ${ACCESS_KEY_ENV}, else tools.yml)",
    )
    g.add_argument(
        "--secret-key",
        metavar="SK",
        help=f"its secret key (visible to other users in ps: prefer "
        f"${SECRET_KEY_ENV} or tools.yml)",
    )
    g.add_argument(
        "--tools-yml",
        metavar="FILE",
        type=Path,
        help=f"Apache's accessKey/secretKey file (default: ${HOME_ENV}/{TOOLS_FILE})",
    )
    g.add_argument(
        "--tls",
        action="store_true",
        help="TLS to every server, verifying nothing (Apache's -Dtls.enable=true)",
    )
    g.add_argument(
        "--tls-ca",
        metavar="FILE",
        help="TLS, the servers' certificates verified against this PEM CA (and "
        "their names: the addresses must be in the certificates)",
    )
    g.add_argument("--tls-cert", metavar="FILE", help="TLS client certificate (PEM)")
    g.add_argument("--tls-key", metavar="FILE", help="its private key (PEM)")


def resolve(args: argparse.Namespace, env: Mapping[str, str], warn: list[str]) -> Access:
    """The run's Access from its options, the environment and tools.yml; ``warn`` gets the
    lines to print on stderr."""
    tls = _tls(args)
    ak, sk = args.access_key, args.secret_key
    if ak is not None or sk is not None:
        return _pair(ak, sk, env.get(SECURITY_TOKEN_ENV), tls, "--access-key/--secret-key")
    ak, sk = env.get(ACCESS_KEY_ENV), env.get(SECRET_KEY_ENV)
    if ak or sk:
        return _pair(
            ak, sk, env.get(SECURITY_TOKEN_ENV), tls, f"${ACCESS_KEY_ENV}/${SECRET_KEY_ENV}"
        )
    path = args.tools_yml
    if path is None and env.get(HOME_ENV):
        path = Path(env[HOME_ENV]) / TOOLS_FILE
    if path is None:
        return Access(tls=tls)
    try:
        text = path.read_text()
    except FileNotFoundError:
        if args.tools_yml is not None:  # named on purpose: say so
            raise AccessError(f"{path}: no such file") from None
        return Access(tls=tls)
    except OSError as exc:
        raise AccessError(f"{path}: {exc.strerror}") from None
    values = read_tools_yml(text, str(path))
    ak, sk = values.get("accessKey", "").strip(), values.get("secretKey", "").strip()
    if not ak or not sk:  # compat: AclUtils.getAclRPCHook -- blank: not signing
        warn.append(f"{path}: accessKey or secretKey is blank: requests are not signed")
        return Access(tls=tls)
    return _pair(ak, sk, None, tls, str(path))


def read_tools_yml(text: str, where: str) -> dict[str, str]:
    """Apache's tools.yml: a flat YAML mapping of scalars (``accessKey: rocketmq2``), read as
    AclUtils.getYamlDataObject + getString does: every value a string. Comments, blank lines
    and quoted values are fine; anything nested is an AccessError naming the line."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        key, sep, value = stripped.partition(":")
        if not sep or line[0].isspace() or not key.strip():
            raise AccessError(
                f"{where}:{number}: not a 'key: value' line (tools.yml is a flat mapping)"
            )
        out[key.strip()] = _scalar(value.strip())
    return out


def _scalar(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if " #" in value:  # a comment after a plain value
        value = value[: value.index(" #")].rstrip()
    return value


def _pair(
    ak: str | None, sk: str | None, token: str | None, tls: ssl.SSLContext | None, source: str
) -> Access:
    if not ak or not sk:
        missing = "secret key" if ak else "access key"
        raise AccessError(f"{source}: the {missing} is missing (give both keys)")
    return Access(ak, sk, token or None, tls, source)


def _tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if args.tls_key is not None and args.tls_cert is None:
        raise AccessError("--tls-key needs --tls-cert")
    if not (args.tls or args.tls_ca or args.tls_cert):
        return None
    try:
        return tls_context(args.tls_ca, cert_file=args.tls_cert, key_file=args.tls_key)
    except (OSError, ssl.SSLError) as exc:
        raise AccessError(f"TLS files: {exc}") from None
