"""``bench/vdla_edge_bound.py``'s hand-scheduled resident 1x1 layer (ic-major start, oc-major end): the
program is bit-exact against NumPy on fsim and on the cycle model (equal DRAM), whatever the piece sizes,
and a shape that does not fit resident gets an error naming the buffers."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from vdla.compiler.vdla import VdlaTarget
from vdla.runtime.backends import run



@pytest.fixture(scope="module")
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("vdla_edge_bound")


@pytest.mark.parametrize("config", ["default", "tiny"])
@pytest.mark.parametrize("b1, first_piece, piece, group, late_bias", [(2, 1, 4, 1, True), (1, 2, 2, 2, False), (3, 4, 2, 4, True)])
@pytest.mark.parametrize("last_group", [None, 1])
def test_edge_schedule_bit_exact_on_fsim_and_cycle(bench: ModuleType, config: str, b1: int, first_piece: int, piece: int,
                                                   group: int, late_bias: bool, last_group: int | None) -> None:
    cfg = VdlaTarget.from_config(config).config
    m, k, n = 12, 4 * cfg.block_in, 4 * cfg.block_out
    program, want = bench.edge_schedule_program(cfg, m, k, n, b1, first_piece, group, piece=piece, late_bias=late_bias,
                                                  last_group=last_group)
    fs, cy = run(program, backend="fsim"), run(program, backend="cycle")
    assert np.array_equal(bench.read_out(fs, m, n, cfg.block_out), want)
    assert np.array_equal(fs.dram, cy.dram)
    assert cy.cycles > m * 4 * 4  # at least the GEMM iterations


@pytest.mark.parametrize("knobs", [dict(first_rows=1, last_rows=2, bias_after=1), dict(first_blocks=2, later_from=2, first_rows=2)])
def test_edge_schedule_split_knobs_bit_exact(bench: ModuleType, knobs: dict[str, int]) -> None:
    # The compiler's split knobs over the im2col input given as 3 rows of 4 pixels.
    cfg = VdlaTarget.from_config("tiny").config
    m, k, n = 12, 4 * cfg.block_in, 4 * cfg.block_out
    program, want = bench.edge_schedule_program(cfg, m, k, n, 2, 1, 2, piece=2, last_group=1, rows=3, **knobs)
    fs, cy = run(program, backend="fsim"), run(program, backend="cycle")
    assert np.array_equal(bench.read_out(fs, m, n, cfg.block_out), want)
    assert np.array_equal(fs.dram, cy.dram)


def test_edge_schedule_names_the_buffers_it_overflows(bench: ModuleType) -> None:
    cfg = VdlaTarget.from_config("default").config
    with pytest.raises(ValueError, match=r"does not fit resident .*accumulator tiles"):
        bench.edge_schedule_program(cfg, 196, 128, 256, 4, 8, 2)  # C8: 3,152 accumulator tiles of 2,048


@pytest.mark.slow
def test_c11_edge_schedule_on_rtl_matches_the_cycle_model(bench: ModuleType) -> None:
    # The program behind docs/vdla_compiler.md's 94.7% on C11: the RTL runs it bit-exactly, and its cycle
    # count is the cycle model's (measured equal: 26,494).
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.skip(why)
    cfg = VdlaTarget.from_config("default").config
    program, want = bench.edge_schedule_program(cfg, 49, 256, 512, 8, 8, 4, piece=16, last_group=1)
    rtl, cy = run(program, backend="rtl"), run(program, backend="cycle")
    assert np.array_equal(bench.read_out(rtl, 49, 512, cfg.block_out), want)
    assert np.array_equal(rtl.dram, cy.dram)
    assert rtl.cycles is not None and cy.cycles is not None and abs(rtl.cycles - cy.cycles) <= 0.003 * rtl.cycles
