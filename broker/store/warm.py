"""Prefaulting and releasing: CommitLog pages mapped writable ahead of the writer, so appends
do not fault a page at a time (RocketMQ warms its mapped files for the same reason:
warmMappedFile); and cold pages of the store's mappings dropped from the process
(``release``), so its RSS tracks the working set (memory.py says which).

``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14+) does it in one call, nothing written: the
kernel allocates and zeroes page-cache pages, about 3 ms per MiB here. CPython's
``mmap.madvise`` holds the GIL all that time -- a stall of the event loop -- so a thread calls
libc's ``madvise`` through ctypes, which releases the GIL, and keeps a few MiB populated ahead
of the writer. Where ctypes cannot reach ``madvise``, the writer does it on the loop, a chunk
at a time, as before; on a kernel without MADV_POPULATE_WRITE prefaulting stops.

``madvise(MADV_DONTNEED)`` on a shared file mapping unmaps pages from this process only:
the page cache keeps them (a dirty page stays dirty and is written back as usual), and the
next access maps them again from it. Nothing is lost, and only RSS falls; the same ctypes
call does it off the loop, the mapping pinned the same way.

Only pages within ``backed`` are touched (segment.py: no write fault where the file has no
blocks). A segment may be closed (retention, a cut, shutdown) while the thread works on it:
each call pins the mapping with a buffer export, so ``mmap.close`` refuses to unmap it under
the call (Segment.close then drops it, unmapped when the call returns), and closed segments
are skipped.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import threading
from collections.abc import Callable
from typing import Final, Protocol

_MADV_POPULATE_WRITE: Final = getattr(mmap, "MADV_POPULATE_WRITE", 23)
_MADV_DONTNEED: Final = getattr(mmap, "MADV_DONTNEED", 4)
_PAGE: Final = mmap.PAGESIZE
_STEP: Final = 256 << 10  # on the loop, per call: about 0.7 ms with the GIL held
_AHEAD: Final = 4 << 20  # the thread keeps up to this much populated ahead of the writer
_CHUNK: Final = 1 << 20  # the thread's calls: the GIL is taken between them

Madvise = Callable[[int, int, int], int]


class Warmable(Protocol):
    """What the thread needs of a Segment."""

    closed: bool

    @property
    def mapping(self) -> mmap.mmap | None: ...


def _libc_madvise() -> Madvise | None:
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


def populate(madvise: Madvise, seg: Warmable, start: int, stop: int) -> int:
    """MADV_POPULATE_WRITE of ``[start, stop)`` of ``seg``'s mapping (``start`` page-aligned)
    with the GIL released; the errno, or 0 (done, or the segment is closed)."""
    mm = seg.mapping
    if mm is None or seg.closed:
        return 0
    try:
        pin = ctypes.c_char.from_buffer(mm, start)  # an export: the mapping stays mapped
    except (ValueError, BufferError):  # closed meanwhile
        return 0
    try:
        if madvise(ctypes.addressof(pin), stop - start, _MADV_POPULATE_WRITE) == 0:
            return 0
        return ctypes.get_errno()
    finally:
        del pin


class Warmer:
    """The thread, started on first use; it waits for work and never ends (a daemon)."""

    def __init__(self, madvise: Madvise) -> None:
        self.madvise = madvise
        self.works = True  # False once the kernel refused MADV_POPULATE_WRITE
        self._cond = threading.Condition()
        self._work: dict[Warmable, list[int]] = {}  # segment -> [next, stop) left to do
        self._busy = False  # a call under way
        self._thread: threading.Thread | None = None

    def ask(self, seg: Warmable, start: int, stop: int) -> None:
        """Populate ``[start, stop)`` of ``seg`` (page-aligned start) soon, off the loop."""
        with self._cond:
            span = self._work.get(seg)
            if span is None:
                self._work[seg] = [start, stop]
            else:  # what the writer passed meanwhile is no longer worth doing
                span[0], span[1] = max(span[0], start), max(span[1], stop)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="prefault", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _next(self) -> tuple[Warmable, int, int]:
        with self._cond:
            self._busy = False
            while not self._work:
                self._cond.wait()
            self._busy = True
            seg, span = next(iter(self._work.items()))
            start = span[0]
            stop = span[0] = min(span[1], start + _CHUNK)
            if stop >= span[1]:
                del self._work[seg]
            return seg, start, stop

    def _run(self) -> None:
        while True:
            seg, start, stop = self._next()
            if start < stop and populate(self.madvise, seg, start, stop) == errno.EINVAL:
                self.works = False  # an older kernel: stop trying
                with self._cond:
                    self._work.clear()

    def idle(self) -> bool:
        """Nothing under way nor left to do (for tests)."""
        with self._cond:
            return not self._work and not self._busy


_madvise = _libc_madvise()
WARMER: Final = Warmer(_madvise) if _madvise is not None else None
_on_loop_works = hasattr(mmap.mmap, "madvise")


class Prefaultable(Warmable, Protocol):
    backed: int
    faulted: int
    prefaulted: int


def prefault(seg: Prefaultable, pos: int) -> None:
    """Called by the writer when a write at ``pos`` passes ``seg.faulted``: more pages mapped
    writable from there, by the thread or (without it) on the loop; ``seg.faulted`` is set to
    where the writer is to call again."""
    global _on_loop_works
    done = seg.prefaulted  # whole pages (MADV_POPULATE_WRITE: EINVAL at an unaligned start)
    start = max(pos - pos % _PAGE, done - done % _PAGE)
    if WARMER is not None:
        stop = min(seg.backed, pos - pos % _PAGE + _AHEAD)
        seg.faulted = min(stop, pos + _AHEAD // 2)  # half of it left: ask for more
        if start < stop and WARMER.works:
            seg.prefaulted = stop
            WARMER.ask(seg, start, stop)
        return
    stop = seg.faulted = min(seg.backed, start + _STEP)
    mm = seg.mapping
    if _on_loop_works and start < stop and mm is not None:
        seg.prefaulted = stop
        try:
            mm.madvise(_MADV_POPULATE_WRITE, start, stop - start)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # an older kernel: stop trying
                _on_loop_works = False


# A span of a mapping whose pages are to leave this process: (mapping, start, stop).
Span = tuple[mmap.mmap, int, int]


def release(spans: list[Span]) -> int:
    """``MADV_DONTNEED`` each span (whole pages inside it: ``start`` rounded up, ``stop``
    down); a mapping closed meanwhile is skipped. Off the loop: the GIL is released for each
    call where ctypes reaches libc. Returns the bytes asked for."""
    asked = 0
    for mm, start, stop in spans:
        start, stop = -(-start // _PAGE) * _PAGE, stop - stop % _PAGE
        if start >= stop:
            continue
        asked += stop - start
        if _madvise is None:
            _release_here(mm, start, stop)
            continue
        try:
            pin = ctypes.c_char.from_buffer(mm, start)  # an export: the mapping stays mapped
        except (ValueError, BufferError, TypeError):  # closed meanwhile
            continue
        try:
            _madvise(ctypes.addressof(pin), stop - start, _MADV_DONTNEED)
        finally:
            del pin
    return asked


def _release_here(mm: mmap.mmap, start: int, stop: int) -> None:
    """Without ctypes: CPython's ``mmap.madvise`` (the GIL held; a zap is quick)."""
    if hasattr(mm, "madvise"):
        with contextlib.suppress(OSError, ValueError):  # closed meanwhile
            mm.madvise(_MADV_DONTNEED, start, stop - start)
