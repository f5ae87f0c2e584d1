"""The bearer token ``/metrics`` may require (``metricsBearerTokenFile``).

The token lives in a file of its own, never in the config file: a config file is shown by
GET_BROKER_CONFIG, copied into images and bug reports, and ``--set`` values show in ``ps``.
Prometheus sends the same token from a file too (``authorization: credentials_file:``), and a
compose or Kubernetes secret mounts as one. The file holds the token alone; whitespace around
it is dropped (as Prometheus drops it from its own file). It is read when the server starts (a
missing, empty or malformed file stops the start) and again whenever the file changes, so a
token is rotated by rewriting the file: until a changed file reads well, the last good token
holds. The token is never logged.

ours: neither 4.9.8 nor 5.x protects its metrics exporter.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path
from typing import Final

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.log import get_logger

log = get_logger(__name__)

KEY: Final = "metricsBearerTokenFile"
# RFC 6750's b64token: what may follow "Bearer " in an Authorization header
_TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def _digest(text: str) -> bytes:
    # both sides hashed first: compare_digest then also hides the token's length
    return hashlib.sha256(text.encode("latin-1", "replace")).digest()


def read_token(path: Path) -> str:
    """The token in ``path``; ConfigError naming the key and the file when there is none."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeError) as exc:
        why = getattr(exc, "strerror", None) or "not ASCII text"
        raise ConfigError(f"{KEY}: cannot read {path}: {why}") from None
    if not text:
        raise ConfigError(f"{KEY}: {path} is empty")
    if not _TOKEN.fullmatch(text):  # the text itself is not shown: it may be a secret
        raise ConfigError(
            f"{KEY}: {path} must hold one token of letters, digits and -._~+/ (then = signs)"
        )
    return text


class BearerToken:
    """The token of ``path``, read now (ConfigError when it cannot be) and again when the
    file changes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._stamp = self._stat()
        self._digest = _digest(read_token(self.path))

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _refresh(self) -> None:
        stamp = self._stat()
        if stamp is None or stamp == self._stamp:  # gone: the last good token holds
            return
        self._stamp = stamp
        try:
            self._digest = _digest(read_token(self.path))
        except ConfigError as exc:
            log.warning("metrics_token_not_reloaded", error=str(exc), kept="the last good token")
            return
        log.info("metrics_token_reloaded", path=str(self.path))

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the token (compared in constant
        time); None = no header."""
        self._refresh()
        if authorization is None:
            return False
        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(_digest(credentials.strip()), self._digest)
