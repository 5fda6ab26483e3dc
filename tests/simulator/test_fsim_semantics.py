"""fsim is bit-exact: explicit GEMM/ALU/STORE cases on every preset, and random programs
against the naive sequential reference in ``fsim_reference``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsim_reference import alu as ref_alu
from fsim_reference import run_reference
from vdla.runtime.program import ProgramBuilder
from vdla.simulator import MachineState, execute, run_fsim
from vdla.simulator.errors import ProtocolError, UninitializedReadError
from vdla.simulator.access import copy_forwarding_hazard
from vdla_hw.config import load_config, preset_names
from vdla_hw.isa import AluInsn, AluOp, MemType, Uop

PRESETS = preset_names()


def _tiles(rng: np.random.Generator, count: int, shape: tuple[int, int], width: int) -> np.ndarray:
    lo, hi = -(1 << (width - 1)), 1 << (width - 1)
    return rng.integers(lo, hi, size=(count,) + shape)


@pytest.mark.parametrize("preset", PRESETS)
def test_gemm_with_padding_on_all_sides_matches_numpy(preset: str) -> None:
    cfg = load_config(preset)
    rng = np.random.default_rng(1)
    bi, bo, b = cfg.block_in, cfg.block_out, cfg.batch
    y, x, pads = 2, 3, (1, 2, 2, 1)  # top, bottom, left, right
    rows, cols = y + pads[0] + pads[1], x + pads[2] + pads[3]
    a = rng.integers(-128, 128, size=(5 * b, 5 * bi))  # a 5x5 grid of input tiles
    w = rng.integers(-128, 128, size=(cols * bo, bi))  # one weight tile per padded column
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", a.shape, a)
    wgt = pb.alloc("wgt", "wgt", w.shape, w)
    out = pb.alloc("out", "out", (rows * cols * b, bo))
    uops = pb.uops([Uop(0, 0, 0)])
    pb.load_uops(uops)
    # Block of y x x tiles starting at tile (1, 1) of the 5x5 grid, padded into SRAM.
    pb.load(MemType.INP, 0, inp.addr + 1 * 5 + 1, y, x, 5, pad=pads, push_next=False)
    pb.load(MemType.WGT, 0, wgt.addr, cols, 1, 1, push_next=True)
    # acc[r*cols + c] = inp[r*cols + c] @ wgt[c].T : outer loop rows, inner loop columns.
    loop = dict(iter_out=rows, iter_in=cols, dst_factor=(cols, 1), src_factor=(cols, 1), wgt_factor=(0, 1))
    pb.gemm(0, 1, reset=True, **loop)
    pb.gemm(0, 1, pop_prev=True, **loop)
    pb.gemm(0, 1, push_next=True, **loop)  # twice: checks accumulation
    pb.store(0, out.addr, rows * cols, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    prog = pb.build()
    result = run_fsim(cfg, prog.instructions, prog.dram)

    grid = a.reshape(5, b, 5, bi).transpose(0, 2, 1, 3)  # tile (r, c) -> (b, bi)
    padded = np.zeros((rows, cols, b, bi), dtype=np.int64)
    padded[pads[0] : pads[0] + y, pads[2] : pads[2] + x] = grid[1 : 1 + y, 1 : 1 + x]
    wt = w.reshape(cols, bo, bi)
    acc = 2 * np.einsum("rcbi,coi->rcbo", padded, wt)
    expected = ((acc + 128) % 256 - 128).reshape(rows * cols * b, bo)
    np.testing.assert_array_equal(prog.read("out", result.dram), expected)
    assert result.counters["pad_elems"] == rows * cols - y * x
    assert result.counters["macs"] == 2 * rows * cols * cfg.macs_per_cycle


def _state_with_acc(preset: str, seed: int) -> tuple[MachineState, np.ndarray]:
    cfg = load_config(preset)
    state = MachineState(cfg, np.zeros(64, np.uint8), zeroed_sram=True)
    rng = np.random.default_rng(seed)
    acc = _tiles(rng, 8, (cfg.batch, cfg.block_out), cfg.acc_width)
    acc[0, 0, :2] = [(1 << (cfg.acc_width - 1)) - 1, -(1 << (cfg.acc_width - 1))]  # extremes for wrap
    state.acc[:8] = acc
    uops = [Uop(d, 4 + d, 0) for d in range(4)]  # dst 0..3, src 4..7
    words = cfg.isa.encode_uops(uops)
    state.uop[:4] = words
    state.uop_dst[:4], state.uop_src[:4], state.uop_wgt[:4] = cfg.isa.decode_uop_fields(words)
    return state, acc


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("operand", ["imm", "tensor"])
def test_every_alu_op_matches_reference(preset: str, op: AluOp, operand: str) -> None:
    state, acc = _state_with_acc(preset, seed=int(op) * 7 + (operand == "imm"))
    width = state.cfg.acc_width
    imms = {AluOp.SHR: [-3, 0, 5, 40, -40], AluOp.MUL: [-32768, 32767], AluOp.ADD: [-32768, 32767]}.get(op, [-5, 9])
    for imm in imms if operand == "imm" else [0]:
        before = state.acc[:8].astype(np.int64)
        if operand == "tensor" and op == AluOp.SHR:
            state.acc[4:8] = np.random.default_rng(3).integers(-40, 41, size=state.acc[4:8].shape)
            before = state.acc[:8].astype(np.int64)
        execute(state, AluInsn(op, operand == "imm", imm, 0, 4, 1, 1, 0, 0, 0, 0), 0)
        for d in range(4):
            for idx in np.ndindex(*before.shape[1:]):
                y = imm if operand == "imm" else int(before[4 + d][idx])
                assert int(state.acc[d][idx]) == ref_alu(op, int(before[d][idx]), y, width), (op, imm, d, idx)
        np.testing.assert_array_equal(state.acc[4:8], before[4:8])


@pytest.mark.parametrize("preset", PRESETS)
def test_alu_read_after_write_within_one_instruction_is_sequential(preset: str) -> None:
    cfg = load_config(preset)
    state = MachineState(cfg, np.zeros(64, np.uint8), zeroed_sram=True)
    state.acc[:6] = 1
    # acc[i+1] += acc[i] for i = 0..4 in order: a running prefix sum 1, 2, 3, 4, 5, 6.
    words = cfg.isa.encode_uops([Uop(1, 0, 0)])
    state.uop[:1] = words
    state.uop_dst[:1], state.uop_src[:1], state.uop_wgt[:1] = cfg.isa.decode_uop_fields(words)
    execute(state, AluInsn(AluOp.ADD, False, 0, 0, 1, 5, 1, 1, 0, 1, 0), 0)
    np.testing.assert_array_equal(state.acc[:6, 0, 0], [1, 2, 3, 4, 5, 6])
    # Repeated destination with an immediate: applied once per iteration.
    execute(state, AluInsn(AluOp.ADD, True, 10, 0, 1, 3, 1, 0, 0, 0, 0), 0)
    assert int(state.acc[1, 0, 0]) == 32


@pytest.mark.parametrize("preset", PRESETS)
def test_mov_initialises_unwritten_accumulators_and_rejects_unforwarded_reads(preset: str) -> None:
    cfg = load_config(preset)
    state = MachineState(cfg, np.zeros(64, np.uint8))
    state.acc[8:10] = np.arange(2 * cfg.batch * cfg.block_out).reshape(state.acc[8:10].shape)
    state.written[MemType.ACC][8:10] = True
    state.written[MemType.UOP][:3] = True
    words = cfg.isa.encode_uops([Uop(0, 8, 0), Uop(1, 9, 0), Uop(1, 0, 0)])
    state.uop[:3] = words
    state.uop_dst[:3], state.uop_src[:3], state.uop_wgt[:3] = cfg.isa.decode_uop_fields(words)
    # acc[0..5] = bias rows 8, 9 three times over: a copy needs no defined destination.
    execute(state, AluInsn(AluOp.MOV, False, 0, 0, 2, 1, 3, 0, 2, 0, 0), 0)
    for d in range(6):
        np.testing.assert_array_equal(state.acc[d], state.acc[8 + d % 2])
    assert state.written[MemType.ACC][:6].all()
    # A plain ADD would have needed its destination defined.
    with pytest.raises(UninitializedReadError):
        execute(state, AluInsn(AluOp.ADD, True, 1, 0, 1, 2, 1, 12, 0, 0, 0), 1)
    # Micro-op 2 reads acc[0], which micro-op 0 of the same MOV wrote: not forwarded, so illegal.
    with pytest.raises(ProtocolError, match="MOV iteration 2 reads ACC\\[0\\], which iteration 0"):
        execute(state, AluInsn(AluOp.MOV, False, 0, 0, 3, 1, 1, 0, 0, 0, 0), 2)


@pytest.mark.parametrize("preset", PRESETS)
def test_store_narrows_with_wraparound(preset: str) -> None:
    cfg = load_config(preset)
    pb = ProgramBuilder(cfg)
    values = np.array([[300, -300, 127, -129] * (cfg.block_out // 4)] * cfg.batch) * np.array([[1], [7]])[: cfg.batch]
    acc = pb.alloc("acc", "acc", values.shape, values)
    out = pb.alloc("out", "out", values.shape)
    pb.load(MemType.ACC, 3, acc.addr, 1, 1, 1, push_next=True)
    pb.store(3, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    prog = pb.build()
    result = run_fsim(cfg, prog.instructions, prog.dram)
    np.testing.assert_array_equal(prog.read("out", result.dram), ((values + 128) % 256) - 128)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("shift, clip, relu", [(0, True, False), (0, False, True), (3, True, True), (5, False, False)])
def test_store_requantizes(preset: str, shift: int, clip: bool, relu: bool) -> None:
    cfg = load_config(preset)
    pb = ProgramBuilder(cfg)
    lanes = np.array([3000, -3000, 127, -129, 1 << 20, -(1 << 20), 40, -41])
    values = np.resize(lanes, (cfg.batch, cfg.block_out))
    acc = pb.alloc("acc", "acc", values.shape, values)
    out = pb.alloc("out", "out", values.shape)
    pb.load(MemType.ACC, 2, acc.addr, 1, 1, 1, push_next=True)
    pb.store(2, out.addr, 1, 1, 1, pop_prev=True, push_prev=True, shift=shift, clip=clip, relu=relu)
    pb.finish(pop_next=True)
    prog = pb.build()
    result = run_fsim(cfg, prog.instructions, prog.dram)
    hi = (1 << (cfg.out_width - 1)) - 1
    want = values // (1 << shift)  # floor division: the arithmetic shift
    if relu:
        want = np.maximum(want, 0)
    want = np.clip(want, -hi - 1, hi) if clip else ((want + hi + 1) % (2 * hi + 2)) - hi - 1
    np.testing.assert_array_equal(prog.read("out", result.dram), want)


# ---- random programs vs the sequential reference -------------------------------------------

DOMAIN = 16  # SRAM elements each random program touches per buffer


def _copy_hazard(uops: list[Uop], loops: dict) -> bool:  # type: ignore[type-arg]
    """True when a tensor MOV over ``uops`` and ``loops`` reads what an earlier iteration of it writes."""
    n_out, n_in = loops["iter_out"], loops["iter_in"]

    def idx(field: str, f: tuple[int, int]) -> np.ndarray:
        return np.array([getattr(u, field) + i * f[0] + j * f[1] for i in range(n_out) for j in range(n_in) for u in uops],
                        dtype=np.int64)

    return bool(uops) and copy_forwarding_hazard(idx("dst", loops["dst_factor"]), idx("src", loops["src_factor"])) is not None


@st.composite
def random_program(draw: st.DrawFn, preset: str) -> tuple[ProgramBuilder, int]:
    cfg = load_config(preset)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (DOMAIN * cfg.batch, cfg.block_in), _tiles(rng, DOMAIN * cfg.batch, (cfg.block_in,), 8).reshape(-1, cfg.block_in))
    wgt = pb.alloc("wgt", "wgt", (DOMAIN * cfg.block_out, cfg.block_in), rng.integers(-128, 128, (DOMAIN * cfg.block_out, cfg.block_in)))
    acc = pb.alloc("acc", "acc", (DOMAIN * cfg.batch, cfg.block_out), rng.integers(-(2**20), 2**20, (DOMAIN * cfg.batch, cfg.block_out)))
    out = pb.alloc("out", "out", (DOMAIN * cfg.batch, cfg.block_out))
    small = st.integers(0, 3)
    uops = [Uop(draw(small), draw(small), draw(small)) for _ in range(draw(st.integers(1, 4)))]
    pb.load_uops(pb.uops(uops))
    pb.load(MemType.INP, 0, inp.addr, 2, 4, 4, pad=(1, 1, 1, 1))  # 4x6 = 24 > DOMAIN elements, all in range
    pb.load(MemType.WGT, 0, wgt.addr, 1, DOMAIN, DOMAIN, push_next=True)
    pb.load(MemType.ACC, 0, acc.addr, 1, DOMAIN, DOMAIN)
    first = True
    for _ in range(draw(st.integers(1, 5))):
        bgn = draw(st.integers(0, len(uops)))
        end = draw(st.integers(bgn, len(uops)))
        loops = dict(iter_out=draw(st.integers(1, 3)), iter_in=draw(st.integers(1, 3)),
                     dst_factor=(draw(st.integers(0, 2)), draw(st.integers(0, 2))),
                     src_factor=(draw(st.integers(0, 2)), draw(st.integers(0, 2))))
        if draw(st.booleans()):
            mode = draw(st.sampled_from(["acc", "reset", "overwrite"]))
            pb.gemm(bgn, end, reset=mode == "reset", overwrite=mode == "overwrite", wgt_factor=(draw(st.integers(0, 2)), draw(st.integers(0, 2))),
                    pop_prev=first, **loops)
            first = False
        else:
            op = draw(st.sampled_from(list(AluOp)))
            imm = draw(st.integers(-40, 40) if op == AluOp.SHR else st.integers(-32768, 32767))
            use_imm = draw(st.booleans()) or (op == AluOp.MOV and _copy_hazard(uops[bgn:end], loops))
            pb.alu(op, bgn, end, imm=imm if use_imm else None, **loops)
    if first:
        pb.gemm(0, 0, pop_prev=True)
    pb.gemm(0, 0, push_next=True)
    rows = draw(st.sampled_from([1, 2, 4]))
    bias = draw(st.sampled_from([None, (draw(st.integers(0, DOMAIN - rows)), draw(st.integers(0, 1)))]))
    pb.store(0, out.addr, rows, DOMAIN // rows, DOMAIN // rows, pop_prev=True, push_prev=True,
             shift=draw(st.integers(0, cfg.acc_width - 1)), clip=draw(st.booleans()), relu=draw(st.booleans()), bias=bias)
    pb.finish(pop_next=True)
    return pb, DOMAIN


@pytest.mark.parametrize("preset", ["tiny", "default"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_programs_match_sequential_reference(preset: str, data: st.DataObject) -> None:
    pb, _ = data.draw(random_program(preset))
    prog = pb.build()
    cfg = prog.config
    result = run_fsim(cfg, prog.instructions, prog.dram)
    ref = run_reference(cfg, list(prog.instructions), prog.dram)
    np.testing.assert_array_equal(result.dram, np.frombuffer(bytes(ref.dram), dtype=np.uint8))
    # Full-width accumulators too, by replaying on a machine state.
    state = MachineState(cfg, prog.dram)
    for i, insn in enumerate(prog.instructions):
        execute(state, insn, i)
    np.testing.assert_array_equal(state.acc.astype(np.int64), ref.acc_array(cfg.acc_buff_depth))


@pytest.mark.parametrize("preset", ["tiny", "default"])
def test_repeated_loop_instructions_follow_reloaded_micro_ops(preset: str) -> None:
    # execute caches each GEMM/ALU instruction's loop indices; the same instruction run over
    # different micro-ops (reloaded at the same SRAM address) must use the new ones.
    cfg = load_config(preset)
    rng = np.random.default_rng(5)
    pb = ProgramBuilder(cfg)
    inp_shape, wgt_shape = (4 * cfg.batch, cfg.block_in), (4 * cfg.block_out, cfg.block_in)
    inp = pb.alloc("inp", "inp", inp_shape, rng.integers(-128, 128, inp_shape))
    wgt = pb.alloc("wgt", "wgt", wgt_shape, rng.integers(-128, 128, wgt_shape))
    first = pb.uops([Uop(0, 0, 0), Uop(1, 1, 1), Uop(0, 2, 3)])  # acc 0 twice: a grouped sum
    second = pb.uops([Uop(2, 3, 2), Uop(3, 1, 0), Uop(3, 0, 1)])
    pb.load(MemType.INP, 0, inp.addr, 1, 4, 4)
    pb.load(MemType.WGT, 0, wgt.addr, 1, 4, 4)
    for uops in (first, second, first):
        pb.load_uops(uops)
        pb.gemm(0, 3, iter_in=2, dst_factor=(0, 4))
        pb.alu(AluOp.ADD, 0, 3, src_factor=(0, 0), iter_in=2, dst_factor=(0, 4))
    prog = pb.build()
    insns = list(prog.instructions)
    state = MachineState(cfg, prog.dram, zeroed_sram=True)  # accumulates into never-loaded accumulators
    for i, insn in enumerate(insns):
        execute(state, insn, i)
    ref = run_reference(cfg, insns, prog.dram)
    np.testing.assert_array_equal(state.acc.astype(np.int64), ref.acc_array(cfg.acc_buff_depth))
