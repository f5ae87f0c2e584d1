"""Process-wide settings a server wants, applied once when its first RemotingServer starts.

- Open files: the soft RLIMIT_NOFILE (often 1,024) is raised to the hard limit, and both are
  logged: every connection is a descriptor.
- Memory: glibc serves large allocations with their own mappings, returned on free, but
  raises that threshold to the size of each such block freed (up to 32 MiB): after one 4 MiB
  response every later one comes from the heap, which rarely shrinks, so memory a
  misbehaving peer made us take would stay after its connection closed. Fixing the threshold
  (mallopt M_MMAP_THRESHOLD) turns that adjustment off. Elsewhere (musl, macOS) it does
  nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
from typing import Final

from aiorocketmq.remoting.log import get_logger

log = get_logger(__name__)

_M_MMAP_THRESHOLD: Final = -3
LARGE: Final = 128 * 1024  # glibc's own starting threshold
_prepared = False


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
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
