"""Host buffers backed by transparent huge pages (2 MiB), for the weights and activations kernels stream.

A ResNet-50 reads ~100 MB of weights per inference (more with Winograd's transformed ones); in 4 KiB
pages that is a TLB miss and a page walk every 4 KiB of every weight stream, past what the second-level
TLB covers (3,072 entries, 12 MiB, on an AMD Zen 4).  In 2 MiB pages it is one walk per 2 MiB.  Linux
hands out such pages to anonymous memory that asks for them with ``madvise(MADV_HUGEPAGE)`` (the
default ``transparent_hugepage=madvise`` of most distributions gives them to no one else), before it is
first touched.  Measured on an AMD Zen 4, one thread, the same ResNet-50 / -18 module both ways in one
process: 0.998-1.008x, at most ~1% and inside the run-to-run noise (docs/cpu_speed.md, "Zen 4, an eighth
session"); kept because it costs nothing and the outputs are bit-identical.

Where the kernel cannot (no THP support, ``enabled=never``, or not Linux) the memory is plain anonymous
memory, as fast as before: asking is only advice.
"""
from __future__ import annotations

import ctypes
import mmap
import sys
from functools import cache

import numpy as np

#: Bytes of an x86-64 / AArch64 (4 KiB granule) transparent huge page.
HUGE_PAGE = 2 << 20
#: ``MADV_HUGEPAGE`` of Linux's ``<asm-generic/mman-common.h>`` (the same on every architecture).
MADV_HUGEPAGE = 14


@cache
def _madvise() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """libc's ``madvise``, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    fn = ctypes.CDLL(None, use_errno=True).madvise
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def huge_page_zeros(nbytes: int) -> np.ndarray | None:
    """``nbytes`` zero bytes (a writable uint8 array) starting on a huge-page boundary, in fresh anonymous
    memory advised ``MADV_HUGEPAGE`` before any of it is touched, so its pages fault in 2 MiB at a time;
    None where anonymous ``mmap`` or ``madvise`` is not available (the caller allocates as before).

    The array keeps its mapping alive (NumPy holds the ``mmap`` object as the array's base); the
    mapping is released with the last array viewing it."""
    advise = _madvise()
    if advise is None or nbytes <= 0:
        return None
    # Whole huge pages, plus one so the array can start on a 2 MiB boundary (mmap gives 4 KiB ones).
    span = -(-nbytes // HUGE_PAGE) * HUGE_PAGE
    try:
        region = mmap.mmap(-1, span + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, AttributeError, ValueError):
        return None
    raw = np.frombuffer(region, np.uint8)
    start = (-raw.ctypes.data) % HUGE_PAGE
    # EINVAL: a kernel without THP.  The memory is then ordinary pages: still correct, still zero.
    advise(raw.ctypes.data + start, span, MADV_HUGEPAGE)
    return raw[start:start + nbytes]
