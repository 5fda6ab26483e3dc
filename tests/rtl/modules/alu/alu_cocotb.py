"""vdla_alu against fsim's ALU semantics: every op with an immediate and a tensor operand,
shift amounts across the whole range, micro-ops reading what the previous one wrote, and copies
(MOV, one iteration per cycle) of resident rows onto others, as a bias initialisation."""

from __future__ import annotations

import cocotb
import numpy as np

from cocotb_utils import env_int, start, test_config
from sram_backdoor import load_state, random_state, read_acc, run_insn, set_uops
from vdla.simulator.access import copy_forwarding_hazard
from vdla.simulator.semantics import execute
from vdla_hw.isa import AluInsn, AluOp, Uop

N = 32
RANDOM_UOPS = 10  # the random loops use micro-ops [0, 10); the copy's own follow


@cocotb.test()
async def every_op_matches_fsim(dut):
    cfg = test_config()
    rng = np.random.default_rng(env_int("SEED", 11))
    dut.start.value = 0
    dut.tb_we.value = 0
    dut.tb_acc_re.value = 0
    await start(dut)
    state = random_state(cfg, rng, N)
    # Micro-op 1 reads the accumulator micro-op 0 writes; micro-op 2 rewrites it.
    uops = [Uop(3, 5, 0), Uop(6, 3, 0), Uop(3, 6, 0)]
    uops += [Uop(int(rng.integers(0, 8)), int(rng.integers(0, 8)), 0) for _ in range(7)]
    uops += [Uop(d, 20 + d, 0) for d in range(4)]  # a copy of rows 20-23 onto 0-3, as a bias initialisation
    set_uops(state, cfg, uops)
    await load_state(dut, cfg, state, {"uop": len(uops), "acc": N})
    imms = [0, 1, -1, 5, -7, 31, 32, 40, -32, -40, 32767, -32768]
    insns = []
    for op in AluOp:
        for use_imm in (True, False):
            for _ in range(env_int("PER_OP", 2)):
                bgn = int(rng.integers(0, RANDOM_UOPS))
                end = int(rng.integers(bgn, RANDOM_UOPS + 1))
                f = lambda: int(rng.integers(0, 4))
                imm = int(rng.choice(imms)) if use_imm else 0
                insn = AluInsn(op, use_imm, imm, bgn, end, int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                               f(), f(), f(), f())
                if op != AluOp.MOV or use_imm or not _copy_reads_own_write(insn, uops):
                    insns.append(insn)  # (a MOV reading its own earlier write is illegal: fsim rejects it)
    insns.append(AluInsn(AluOp.ADD, False, 0, 0, 3, 2, 2, 1, 0, 0, 1))  # the hazard chain, repeated
    insns.append(AluInsn(AluOp.MOV, False, 0, 10, 14, 2, 2, 4, 8, 1, 2))  # rows 20-26 onto 0-15, back to back
    for k, insn in enumerate(insns):
        cycles = await run_insn(dut, cfg.isa.encode(insn))
        execute(state, insn, k)
        n = insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)
        t = cfg.timing
        ii = t.alu_op_ii(reads_dst=insn.alu_op != AluOp.MOV)
        expect = (n - 1) * ii + t.alu_pipeline_depth + 2 if n else 1
        assert cycles == expect, f"ALU {k} with {n} iterations took {cycles} cycles, expected {expect}"
        for a in range(N):
            got = await read_acc(dut, cfg, a)
            assert np.array_equal(got, state.acc[a]), f"after ALU {k} ({insn}): acc[{a}] = {got}, fsim {state.acc[a]}"


def _copy_reads_own_write(insn: AluInsn, uops: list[Uop]) -> bool:
    """True when the tensor MOV ``insn`` reads an accumulator an earlier iteration of it writes."""
    used = uops[insn.uop_bgn:insn.uop_end]
    if not used:
        return False

    def idx(field: str, f_out: int, f_in: int) -> np.ndarray:
        return np.array([getattr(u, field) + i * f_out + j * f_in for i in range(insn.iter_out)
                         for j in range(insn.iter_in) for u in used], dtype=np.int64)

    dst = idx("dst", insn.dst_factor_out, insn.dst_factor_in)
    return copy_forwarding_hazard(dst, idx("src", insn.src_factor_out, insn.src_factor_in)) is not None
