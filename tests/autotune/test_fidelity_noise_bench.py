"""The judging side of ``bench/fidelity_noise.py`` (A/A of one kernel on both sides of the fidelity benchmark):
one ratio per disjoint group of rounds, the fastest of each build's over the other's, as
``tune_fidelity.py --predict-rounds G`` would predict a kernel's "speed-up" over itself; and the flushes it
compares.  The benchmark itself times whole models; these tests check its arithmetic on made-up rounds."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from vdla.compiler.autotune.measure import FULL_FLUSH_BYTES


@pytest.fixture(scope="module")
def fn(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("fidelity_noise")


def test_an_aa_ratio_is_the_fastest_of_each_build_per_disjoint_group(fn: ModuleType) -> None:
    a = [5.0, 2.0, 4.0, 3.0, 9.0, 6.0, 7.0]
    b = [4.0, 4.0, 1.0, 6.0, 3.0, 8.0, 2.0]
    # Groups of 3 rounds: [0, 3) and [3, 6); the seventh round starts no full group and is left out.
    assert fn.aa_ratios(a, b, 3) == [2.0 / 1.0, 3.0 / 3.0]
    assert fn.aa_ratios(a, b, 1) == [x / y for x, y in zip(a, b)]
    assert fn.aa_ratios(a, a, 2) == [1.0, 1.0, 1.0]  # a build against itself: exactly 1 in every group
    s = fn.spread([0.9, 1.0, 1.2])
    assert s["max"] == pytest.approx(0.2) and s["rms"] == pytest.approx(((0.01 + 0.04) / 3) ** 0.5)


def test_the_flushes_compared_are_the_models_the_full_or_a_size_in_mib(fn: ModuleType) -> None:
    assert fn.flush_sizes("model,full,8,0.5", 13 << 20) == {
        "model": 13 << 20, "full": FULL_FLUSH_BYTES, "8MiB": 8 << 20, "0.5MiB": 1 << 19}
    with pytest.raises(SystemExit, match="not model, full or a size in MiB"):
        fn.flush_sizes("model,huge", 1)
    with pytest.raises(SystemExit, match=">= 0"):
        fn.flush_sizes("-1", 1)
