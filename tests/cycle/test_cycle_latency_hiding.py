"""Latency hiding: two virtual threads (ping-pong SRAM regions) beat one on the same GEMM."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla.simulator.cycle import run_cycle
from vdla_hw.config import load_config

# (preset, m, k, n, tiling): several chunks per output tile, so there is something to overlap.
CASES = [
    ("tiny", 32, 64, 32, GemmTiling(8, 4, 4)),
    ("default", 64, 256, 64, GemmTiling(16, 4, 4)),
    ("wide", 64, 256, 128, GemmTiling(16, 4, 4)),
]


@pytest.mark.parametrize("preset, m, k, n, tiling", CASES, ids=[c[0] for c in CASES])
def test_two_virtual_threads_reach_higher_gemm_utilization(preset, m, k, n, tiling):
    cfg = load_config(preset)
    runs = {}
    for vt in (1, 2):
        program, expected = tiled_gemm_program(cfg, m, k, n, virtual_threads=vt, tiling=tiling)
        result = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr)
        runs[vt] = (program.read("out", result.dram), expected, result.stats)
    (out1, ref1, s1), (out2, ref2, s2) = runs[1], runs[2]
    np.testing.assert_array_equal(ref1, ref2)
    np.testing.assert_array_equal(out1, ref1)
    np.testing.assert_array_equal(out2, out1)
    assert s1.macs == s2.macs
    assert s2.gemm_utilization > s1.gemm_utilization
    assert s2.cycles < s1.cycles
    # The overlap shows up where it should: load no longer waits for compute to free a buffer.
    assert s2.units["load"].wait_token < s1.units["load"].wait_token
