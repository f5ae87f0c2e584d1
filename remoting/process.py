"""Process-wide settings a server wants, applied once when its first RemotingServer starts.

- Open files: the soft RLIMIT_NOFILE (often 1,024) is raised to the hard limit, and both are
  logged: every connection is a descriptor.
- Memory: glibc serves large allocations with their own mappings, returned on free, but
  raises that threshold to the size of each such block freed (up to 32 MiB): after one 4 MiB
  response every later one comes from the heap, which rarely shrinks, so memory a
  misbehaving peer made us take would stay after its connection closed. Fixing the threshold
  (mallopt M_MMAP_THRESHOLD) turns that adjustment off. It is fixed at 512 KiB, above a
  pull's answer (maxTransferBytesOnMessageInMemory, 256 KiB, copied out once per pull): at
  glibc's starting 128 KiB each answer was a mapping of its own, made, faulted in page by
  page and unmapped, a quarter of a broker's CPU serving bulk reads. What the heap keeps of
  blocks below it is given back by ``trim_heap`` (malloc_trim) once connections have let go
  of enough (remoting.limits). Elsewhere (musl, macOS) both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
from typing import Final

from aiorocketmq.remoting.log import get_logger

log = get_logger(__name__)

_M_MMAP_THRESHOLD: Final = -3
LARGE: Final = 512 * 1024
_prepared = False
_libc: list[ctypes.CDLL] = []  # loaded once


def prepare_server_process() -> None:
    """Raise the open-files limit and fix the malloc threshold, once per process."""
    global _prepared
    if not _prepared:
        _prepared = True
        raise_open_files_limit()
        return_large_frees()


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns (soft, hard) now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    raised = soft
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            raised = target
        except (ValueError, OSError) as exc:
            log.warning("open_files_limit_not_raised", soft=soft, hard=hard, error=str(exc))
    log.info("open_files_limit", soft=raised, hard=hard, was=soft)
    return raised, hard


def return_large_frees(threshold: int = LARGE) -> bool:
    """Fix glibc's mmap threshold for this process; False where there is no mallopt."""
    try:
        mallopt = _c().mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def trim_heap() -> bool:
    """Give the heap's free pages back to the system (glibc's malloc_trim); False where
    there is no malloc_trim or nothing was given back."""
    try:
        trim = _c().malloc_trim
    except (OSError, AttributeError, TypeError):
        return False
    return bool(trim(0))


def _c() -> ctypes.CDLL:
    if not _libc:
        _libc.append(ctypes.CDLL(ctypes.util.find_library("c")))
    return _libc[0]
