"""Replays (a repeated instruction run from what its first run resolved) and the tiled GEMM loop
as one matrix product give exactly what the plain integer semantics give, and follow every
change a replay must see: DRAM written between two LOADs, new micro-ops, direct SRAM writes."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.simulator import MachineState, execute
from vdla.simulator.replay import factor_gemm
from vdla_hw.config import HwConfig, load_config
from vdla_hw.isa import AluInsn, AluOp, DepFlags, GemmInsn, MemInsn, MemType, Opcode, Uop


def _uops(state: MachineState, uops: list[Uop], at: int = 0) -> None:
    words = state.cfg.isa.encode_uops(uops)
    state.uop[at : at + len(words)] = words
    fields = state.cfg.isa.decode_uop_fields(words)
    state.uop_dst[at : at + len(words)], state.uop_src[at : at + len(words)], state.uop_wgt[at : at + len(words)] = fields


def _reference_gemm(state: MachineState, insn: GemmInsn, acc: np.ndarray) -> np.ndarray:
    """acc after ``insn``, iteration by iteration in int64, wrapped to the accumulator width."""
    out = acc.astype(np.int64)
    inp, wgt = state.inp_sram.astype(np.int64), state.wgt_sram.astype(np.int64)
    for o in range(insn.iter_out):
        for i in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                d = int(state.uop_dst[u]) + o * insn.dst_factor_out + i * insn.dst_factor_in
                s = int(state.uop_src[u]) + o * insn.src_factor_out + i * insn.src_factor_in
                w = int(state.uop_wgt[u]) + o * insn.wgt_factor_out + i * insn.wgt_factor_in
                out[d] += inp[s] @ wgt[w].T
    bits = 8 * state.acc.dtype.itemsize
    half = 1 << (bits - 1)
    return (out + half) % (1 << bits) - half


def _extreme_state(cfg: HwConfig, seed: int, dram: np.ndarray | None = None) -> MachineState:
    state = MachineState(cfg, np.zeros(16, np.uint8) if dram is None else dram, zeroed_sram=True)
    rng = np.random.default_rng(seed)
    lo_i, hi_i = -(1 << (cfg.inp_width - 1)), (1 << (cfg.inp_width - 1)) - 1
    lo_w, hi_w = -(1 << (cfg.wgt_width - 1)), (1 << (cfg.wgt_width - 1)) - 1
    state.inp[:64] = rng.choice([lo_i, hi_i, 0, 1], size=state.inp[:64].shape)
    state.wgt[:64] = rng.choice([lo_w, hi_w, 0, -1], size=state.wgt[:64].shape)
    state.acc[:128] = rng.integers(-(1 << 30), 1 << 30, size=state.acc[:128].shape)
    return state


CASES = [
    # (uops (dst, src, wgt), iter_out, iter_in, dst factors, src factors, wgt factors)
    ([(0, 0, 0), (0, 1, 1), (0, 2, 2), (0, 3, 3)], 8, 4, (4, 1), (4, 0), (0, 4)),  # tiled, consecutive
    ([(5, 0, 0), (5, 9, 3)], 3, 5, (1, 7), (2, 0), (0, 6)),                        # scattered destinations
    ([(0, 0, 0), (0, 1, 1)], 1, 1, (0, 0), (0, 0), (0, 0)),                        # one destination
    ([(0, 0, 0), (1, 1, 1)], 4, 2, (4, 2), (2, 0), (0, 2)),                        # uops differ in dst: not factored
    ([(0, 0, 0), (0, 1, 1)], 4, 2, (2, 1), (2, 1), (0, 2)),                        # src depends on i1: not factored
]


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_gemm_loops_and_their_replays_are_exact(batch: int, case: int) -> None:
    cfg = load_config("tiny").replace(log_batch=batch.bit_length() - 1)
    uops, outer, inner, (dfo, dfi), (sfo, sfi), (wfo, wfi) = CASES[case]
    state = _extreme_state(cfg, case)
    _uops(state, [Uop(*u) for u in uops])
    insn = GemmInsn(False, 0, len(uops), outer, inner, dfo, dfi, sfo, sfi, wfo, wfi)
    factored = factor_gemm(state, insn, 0, len(uops)) is not None
    assert factored == (case < 3)
    for run in range(3):  # the first run, then two replays
        want = _reference_gemm(state, insn, state.acc)
        execute(state, insn, run)
        np.testing.assert_array_equal(state.acc, want, err_msg=f"run {run}")
        state.inp[1] = -state.inp_sram[1]  # a direct write between runs: the next GEMM reads it


def test_a_gemm_replay_follows_new_micro_ops() -> None:
    cfg = load_config("tiny")
    words = cfg.isa.encode_uops([Uop(1, 3, 2), Uop(1, 4, 5)])  # in DRAM at element 4 (byte 16)
    state = _extreme_state(cfg, 7, np.concatenate([np.zeros(16, np.uint8), words.view(np.uint8)]))
    insn = GemmInsn(False, 0, 2, 2, 2, 2, 1, 1, 0, 0, 1)
    _uops(state, [Uop(0, 0, 0), Uop(0, 1, 1)])
    for uops in ([(0, 0, 0), (0, 1, 1)], [(4, 2, 3), (4, 5, 6)], [(4, 2, 3), (9, 5, 6)]):
        _uops(state, [Uop(*u) for u in uops])  # written directly: state.uop_gen moves
        want = _reference_gemm(state, insn, state.acc)
        execute(state, insn, 0)
        np.testing.assert_array_equal(state.acc, want)
    # Through a LOAD UOP too.
    execute(state, MemInsn(Opcode.LOAD, MemType.UOP, 0, 4, 1, 2, 2, 0, 0, 0, 0, deps=DepFlags()), 1)
    want = _reference_gemm(state, insn, state.acc)
    execute(state, insn, 2)
    np.testing.assert_array_equal(state.acc, want)


def test_a_load_replay_reads_the_dram_as_it_is_then() -> None:
    cfg = load_config("default")
    eb = cfg.inp_elem_bytes
    dram = np.zeros(64 * eb, np.uint8)
    state = MachineState(cfg, dram)
    load = MemInsn(Opcode.LOAD, MemType.INP, 3, 2, 2, 3, 5, 1, 0, 1, 1, deps=DepFlags())
    for value in (1, 2, 3):  # the second and third runs are replays
        state.dram[:] = value
        execute(state, load, value)
        block = state.inp_sram[3 : 3 + 3 * 5].reshape(3, 5, -1)
        assert (block[1:, 1:4] == value).all() and (block[0] == 0).all() and (block[:, 0] == 0).all()
    # Equal fields but other dependency flags: the same replay, the same effect.
    again = MemInsn(Opcode.LOAD, MemType.INP, 3, 2, 2, 3, 5, 1, 0, 1, 1, deps=DepFlags(pop_next=True))
    assert execute(state, again, 4) == execute(state, load, 5)


@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("use_imm", [False, True])
def test_alu_replays_match_the_gathered_form(op: AluOp, use_imm: bool) -> None:
    cfg = load_config("tiny")
    state = _extreme_state(cfg, 3)
    _uops(state, [Uop(0, 40, 0)])
    insn = AluInsn(op, use_imm, -3 if use_imm else 0, 0, 1, 4, 4, 4, 1, 0, 1)  # dst 0..15, src 40..43
    for run in range(3):
        acc = state.acc.astype(np.int64)
        operand = np.int64(-3) if use_imm else np.repeat(acc[40:44][None], 4, axis=0).reshape(16, *acc.shape[1:])
        a = acc[:16]
        want = {AluOp.MIN: np.minimum(a, operand), AluOp.MAX: np.maximum(a, operand), AluOp.ADD: a + operand,
                AluOp.MUL: a * operand, AluOp.MOV: np.broadcast_to(operand, a.shape)}.get(op)
        if want is None:  # SHR: right by a positive amount, left by a negative one
            amount = np.broadcast_to(operand, a.shape)
            want = (a >> np.clip(amount, 0, 63)) << np.clip(-amount, 0, 63)
        execute(state, insn, run)
        np.testing.assert_array_equal(state.acc[:16], want.astype(np.int32), err_msg=f"run {run}")
