"""vdla_gemm against fsim's GEMM semantics: random loops, reset and overwrite GEMMs, and back-to-back
micro-ops on one accumulator (the read-after-write hazard)."""

from __future__ import annotations

import cocotb
import numpy as np

from cocotb_utils import env_int, start, test_config
from sram_backdoor import load_state, random_state, read_acc, run_insn, set_uops
from vdla.simulator.semantics import execute
from vdla_hw.isa import GemmInsn, Uop

N = 32  # elements of each buffer in play


def random_gemm(rng: np.random.Generator, n_uops: int) -> GemmInsn:
    bgn = int(rng.integers(0, n_uops))
    end = int(rng.integers(bgn, n_uops + 1))
    f = lambda: int(rng.integers(0, 4))
    mode = rng.random()  # 15% reset, 15% overwrite (acc = inp @ wgt), the rest accumulate
    return GemmInsn(bool(mode < 0.15), bgn, end, int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                    f(), f(), f(), f(), f(), f(), overwrite=bool(0.15 <= mode < 0.3))


@cocotb.test()
async def random_gemms_match_fsim(dut):
    cfg = test_config()
    rng = np.random.default_rng(env_int("SEED", 7))
    dut.start.value = 0
    dut.tb_we.value = 0
    dut.tb_acc_re.value = 0
    await start(dut)
    state = random_state(cfg, rng, N)
    # Micro-ops index [0, 8); with factors < 4 and at most 3 x 3 iterations every index stays < N.
    uops = [Uop(int(rng.integers(0, 8)), int(rng.integers(0, 8)), int(rng.integers(0, 8))) for _ in range(10)]
    uops[3] = Uop(uops[2].dst, 1, 2)  # two consecutive micro-ops accumulate into one tile
    set_uops(state, cfg, uops)
    await load_state(dut, cfg, state, {"uop": len(uops), "inp": N, "wgt": N, "acc": N})
    insns = [GemmInsn(False, 2, 4, 2, 3, 0, 0, 1, 1, 0, 1)]  # same dst on every iteration
    insns += [random_gemm(rng, len(uops)) for _ in range(env_int("N_INSNS", 12))]
    for k, insn in enumerate(insns):
        cycles = await run_insn(dut, cfg.isa.encode(insn))
        execute(state, insn, k)
        n = insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)
        expect = n + cfg.timing.gemm_pipeline_depth + 1 if n else 1
        assert cycles == expect, f"GEMM {k} with {n} iterations took {cycles} cycles, expected {expect}"
        for a in range(N):
            got = await read_acc(dut, cfg, a)
            assert np.array_equal(got, state.acc[a]), f"after GEMM {k} ({insn}): acc[{a}] = {got}, fsim {state.acc[a]}"
