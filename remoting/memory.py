"""Give large freed blocks back to the system at once (glibc), so memory a misbehaving peer
made a server take -- big responses it never read, frames it never finished -- leaves the
process once those connections are closed.

glibc serves large allocations with their own mappings, returned on free, but raises that
threshold to the size of each such block freed, up to 32 MiB: after one 4 MiB response, every
later one comes from the heap, and the heap rarely shrinks. Fixing the threshold (mallopt
M_MMAP_THRESHOLD) turns that adjustment off. Elsewhere (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Final

_M_MMAP_THRESHOLD: Final = -3
LARGE: Final = 128 * 1024  # glibc's own starting threshold


def return_large_frees(threshold: int = LARGE) -> bool:
    """Fix glibc's mmap threshold for this process; False where there is no mallopt."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
