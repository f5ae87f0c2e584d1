"""The ACL files on disk (4.9.8's PlainPermissionManager.getAllAclFiles and load,
AclUtils.getYamlDataObject / writeDataObject): which files, their content and its MD5, the
rules they give, and their atomic rewrite.

The files are every ``*.yml`` / ``*.yaml`` under the ACL directory (recursively, in name
order; a file named ``tools.yml`` -- mqadmin's own credentials, conf/tools.yml -- is never
one), then the default file (``plain_acl.yml``) unless it is among them. That is 4.9.8's
order (the default file last), so an access key in the directory wins over the same key in
``plain_acl.yml``. Blocking I/O: callers on the event loop run these in a thread.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from aiorocketmq.remoting.acl.errors import AclError
from aiorocketmq.remoting.acl.rules import Rules, build
from aiorocketmq.remoting.files import atomic_write

TOOLS_FILE: Final = "tools.yml"  # MixAll.ACL_CONF_TOOLS_FILE: a client's keys, not rules
_SUFFIXES: Final = (".yml", ".yaml")

Fingerprint = tuple[tuple[str, str], ...]  # (path, MD5 of its content), in load order


@dataclass(frozen=True, slots=True)
class Location:
    """Where a server's ACL files are: the default file and the directory (either may be
    missing)."""

    default_file: Path
    directory: Path


def _walk(directory: Path) -> list[Path]:
    try:
        entries = sorted(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[Path] = []
    for entry in entries:
        if entry.name == TOOLS_FILE:
            continue
        if entry.name.endswith(_SUFFIXES):
            found.append(entry)
        elif entry.is_dir():
            found.extend(_walk(entry))
    return found


def acl_files(where: Location) -> list[Path]:
    """The ACL files, in load order, as absolute paths."""
    files = [p.absolute() for p in _walk(where.directory)]
    default = where.default_file.absolute()
    if default.is_file() and default not in files:
        files.append(default)
    return files


def read(where: Location) -> list[tuple[str, bytes]]:
    """Each ACL file's path and content (a file gone between listing and reading is left
    out: it is gone)."""
    out = []
    for path in acl_files(where):
        try:
            out.append((str(path), path.read_bytes()))
        except (FileNotFoundError, IsADirectoryError):
            continue
        except OSError as exc:
            raise AclError(f"{path}: {exc.strerror or exc}") from None
    return out


def fingerprint(contents: list[tuple[str, bytes]]) -> Fingerprint:
    return tuple((path, hashlib.md5(data).hexdigest()) for path, data in contents)


def parse_yaml(path: str, data: bytes) -> Any:
    """AclUtils.getYamlDataObject: the file's YAML (safe: no tags); AclError if malformed."""
    try:
        return yaml.load(data, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise AclError(f"{path}: {' '.join(str(exc).split())}") from None


def load(contents: list[tuple[str, bytes]], now_ms: int) -> tuple[Rules, list[str]]:
    """The rules of these files, and the warnings to log; AclError naming a file if one
    cannot be used."""
    return build([(path, parse_yaml(path, data)) for path, data in contents], now_ms)


def dump(doc: dict[str, Any]) -> bytes:
    """AclUtils.writeDataObject's text (``yaml.dumpAsMap``: block style, keys in the map's
    order; the file's comments are not kept, as in 4.9.8)."""
    text = yaml.dump(doc, Dumper=_DUMPER, default_flow_style=False, sort_keys=False,
                     allow_unicode=True)  # fmt: skip
    return text.encode()


def write(path: str, doc: dict[str, Any]) -> None:
    """Replace the file atomically (a crash leaves the old or the new file, whole)."""
    atomic_write(path, dump(doc))


_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Final[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
