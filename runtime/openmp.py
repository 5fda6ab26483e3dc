"""libgomp, loaded with a wait policy that suits a shared host.

Parallel loops of modules compiled since the thread pool (``compiler/codegen/llvm/pool.py``) run on
it, not on libgomp; modules compiled before call libgomp's ``GOMP_parallel``, and PyTorch runs its
own parallel work on the same ``libgomp.so.1`` when this runtime loads it first.  By default
libgomp's idle threads spin (``GOMP_SPINCOUNT`` 300,000 pauses, milliseconds on current CPUs) before they sleep, and the
caller spins likewise at the barrier closing every parallel region.  On a host whose cores are
shared with other processes (every laptop, CI runners, this project's 2-core machines) a spinning
thread takes the core from the thread it waits for: measured here, ResNet-50 on two threads at
load ~4-6 took 0.7-1.3 s with the default policy and 0.1-0.2 s with ``OMP_WAIT_POLICY=passive``
(``docs/cpu_speed.md``, "Two threads on a loaded host").

libgomp reads its environment once, in its constructor, when it is loaded.  So we load it
ourselves, before any module that needs it, with ``OMP_WAIT_POLICY=passive`` set for the duration
of the load (the process environment is restored at once: other OpenMP runtimes loaded later, such
as PyTorch's own copy, and subprocesses keep the user's settings).  A user who sets
``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` (e.g. ``active`` on a dedicated, quiet machine) is obeyed.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import cache

#: The wait policy libgomp gets when the user sets none.
DEFAULT_WAIT_POLICY = "passive"

_USER_KNOBS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def libgomp_loaded() -> bool:
    """Whether a libgomp (the system's ``libgomp.so.1``) is mapped in this process already."""
    try:
        with open("/proc/self/maps") as f:
            return any(line.rstrip().endswith("/libgomp.so.1") or "/libgomp.so.1." in line for line in f)
    except OSError:
        return False


@cache
def load_openmp_runtime() -> str | None:
    """Load libgomp globally (its symbols visible to JIT-compiled and later-loaded code) with the
    wait policy above; returns the library's name, or None when it cannot be loaded (a module
    without parallel loops does not need it; one with them then fails to load with the loader's
    own message).  Loading twice is a no-op."""
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    set_here = not any(k in os.environ for k in _USER_KNOBS) and not libgomp_loaded()
    if set_here:
        os.environ["OMP_WAIT_POLICY"] = DEFAULT_WAIT_POLICY
    try:
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    finally:
        if set_here:
            del os.environ["OMP_WAIT_POLICY"]
    return name
