"""The spin of the generated code's thread pool, as the user sets it (``compiler/codegen/llvm/pool.py``).

An idle pool worker spins ``VDLA_SPIN_US`` microseconds before it sleeps.  The pool reads the variable with
C's ``atoi`` in its first region, where a typo would silently mean 0 (sleep at once); so the runtime checks
it when it loads a module with parallel loops and names a bad value.
"""
from __future__ import annotations

import os

from vdla_hw.errors import UsageError

SPIN_ENV = "VDLA_SPIN_US"
"""Environment variable: microseconds an idle worker spins before it sleeps (read at the first region)."""

DEFAULT_SPIN_US = 200
"""An idle worker's spin, when ``VDLA_SPIN_US`` is not set: longer than the gap between two regions of one model
run (a ctypes call of a few microseconds plus the serial nodes in between, up to ~0.1 ms in MobileNetV2), short
against the gap between runs of a server."""


def check_spin_env() -> None:
    """Raise a :class:`UsageError` naming the fix when ``VDLA_SPIN_US`` is set to anything but a whole number
    of microseconds (0 or more)."""
    value = os.environ.get(SPIN_ENV)
    if value is not None and not value.strip().isdigit():
        raise UsageError(f"{SPIN_ENV}={value!r} is not a whole number of microseconds: set it to 0 (idle "
                         f"workers sleep at once) or more (e.g. {SPIN_ENV}={DEFAULT_SPIN_US}, the default), or "
                         f"unset it")
