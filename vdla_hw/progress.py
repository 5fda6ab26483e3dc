"""Progress bars for long work (RTL builds, synthesis, compiles, simulations), quiet when unwanted.

Bars go to stderr and only when it is a terminal, and never when ``$VDLA_QUIET`` is set (the
``vdla --quiet`` option sets it, so the tools' subprocesses are quiet too). :func:`bar` is a
``tqdm`` with those defaults; :func:`ticking` shows the elapsed time of one blocking call (a
yosys run, a ``make``) that reports no progress of its own.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

QUIET_ENV = "VDLA_QUIET"
TICK_SECONDS = 0.5


def progress_enabled() -> bool:
    """True when bars should be drawn: stderr is a terminal and ``$VDLA_QUIET`` is unset."""
    return not os.environ.get(QUIET_ENV) and sys.stderr.isatty()


def set_quiet(quiet: bool = True) -> None:
    """Silence (or re-enable) every bar of this process and of the tools it starts."""
    if quiet:
        os.environ[QUIET_ENV] = "1"
    else:
        os.environ.pop(QUIET_ENV, None)


def bar(**kwargs: Any) -> tqdm:
    """A ``tqdm`` bar on stderr, disabled by :func:`progress_enabled`, cleared when done."""
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(disable=not progress_enabled(), file=sys.stderr, **kwargs)


@contextmanager
def ticking(desc: str) -> Iterator[tqdm]:
    """A bar showing ``desc`` and the elapsed time while the body runs (refreshed by a thread)."""
    with bar(desc=desc, total=None, bar_format="{desc}: {elapsed}") as b:
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(TICK_SECONDS):
                b.refresh()

        thread = threading.Thread(target=tick, daemon=True)
        if not b.disable:
            thread.start()
        try:
            yield b
        finally:
            stop.set()
            if thread.is_alive():
                thread.join()


__all__ = ["QUIET_ENV", "bar", "progress_enabled", "set_quiet", "ticking"]
