"""The compute module's cycle breakdown accounts for every cycle of a run, by its real cause."""

from __future__ import annotations

import pytest

from vdla.runtime.system_programs import build_case
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla.simulator.cycle import run_cycle
from vdla.simulator.cycle.breakdown import PARTS, compute_breakdown
from vdla_hw.config import load_config
from vdla_hw.isa import AluInsn, GemmInsn


@pytest.mark.parametrize("preset", ["tiny", "default"])
@pytest.mark.parametrize("case", ["gemm_vt2", "alu_chain", "alu_mov"])
def test_parts_sum_to_the_run_and_name_the_work(preset: str, case: str) -> None:
    cfg = load_config(preset)
    program = build_case(cfg, case)
    result = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr, timeline=True)
    parts, kinds = compute_breakdown(cfg, program.instructions, result)
    assert set(parts) == set(PARTS)
    assert sum(parts.values()) == result.stats.cycles
    assert min(parts.values()) >= 0
    gemms = [i for i in program.instructions if isinstance(i, GemmInsn)]
    alus = [i for i in program.instructions if isinstance(i, AluInsn)]
    assert sum(kinds.get(k, 0) for k in ("GEMM", "GEMM reset")) == len(gemms)
    assert sum(n for k, n in kinds.items() if k.startswith("ALU ")) == len(alus)
    iters = [(i.reset, i.iter_out * i.iter_in * (i.uop_end - i.uop_bgn)) for i in gemms]
    assert parts["gemm_iters"] == sum(n for reset, n in iters if not reset)
    assert parts["gemm_reset"] == sum(n for reset, n in iters if reset)
    # each GEMM's pipeline fill + done cycle, beyond its iterations
    assert parts["gemm_pipeline"] == len(gemms) * (cfg.timing.gemm_pipeline_depth + 2)
    assert result.stats.units["compute"].wait_token == parts["wait_token"]


def test_gemm_iterations_are_the_macs() -> None:
    cfg = load_config("default")
    program, _ = tiled_gemm_program(cfg, 64, 256, 64, virtual_threads=2, tiling=GemmTiling(16, 4, 4))
    result = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr, timeline=True)
    parts, _ = compute_breakdown(cfg, program.instructions, result)
    assert parts["gemm_iters"] * cfg.macs_per_cycle == result.stats.macs
    assert parts["gemm_reset"] > 0  # its tiles start from a GEMM reset, booked apart from the MACs
