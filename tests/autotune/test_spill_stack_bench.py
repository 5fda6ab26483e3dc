"""``bench/spill_stack.py`` times a kernel from inside nested ctypes callbacks, so that the C stack at the call
is deeper by one callback frame per level: the nesting is real (one re-entry into Python through C per
level) and the timed function runs once and its value comes back, at every depth."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Callable

import pytest


@pytest.fixture(scope="module")
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("spill_stack")


@pytest.mark.parametrize("depth", [0, 1, 2, 5])
def test_at_depth_nests_callbacks_and_returns_the_value(bench: ModuleType, depth: int) -> None:
    calls = []

    def timed() -> float:
        # Each level is a ctypes callback: the Python stack holds one `level` frame per callback entered.
        calls.append(sum(1 for f in inspect.stack() if f.function == "level"))
        return 0.25 + depth

    assert bench.at_depth(depth, timed) == 0.25 + depth
    assert calls == [depth + 1]
