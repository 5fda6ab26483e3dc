"""The gathering LOAD (``elem_stride`` > 1): element ``(r, c)`` of the block is DRAM element
``dram_base + r * x_stride + c * elem_stride``.

fsim against NumPy's strided view of the source, the cycle model against fsim (memory and
counters) under random timings, the window check against the block's last element, and the
encoding's rules (no x padding, no STORE, strides 1..16).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vdla.runtime.program import ProgramBuilder
from vdla.simulator.checks import check_program
from vdla.simulator.cycle import run_cycle
from vdla.simulator.errors import MemoryAccessError, ProtocolError
from vdla.simulator.fsim import run_fsim
from vdla_hw.config import load_config, preset_names
from vdla_hw.isa import MAX_ELEM_STRIDE, IsaError, MemInsn, MemType, Opcode

from .test_cycle_vs_fsim import timings

SRC = 96  # source tiles per memory type


def _program(cfg, y: int, x: int, x_stride: int, step: int, offset: int, y_pad: tuple[int, int],
             seed: int):  # type: ignore[no-untyped-def]
    """A LOAD ACC gathering ``y x x`` accumulator tiles, stored to ``out`` as they landed (one row of all
    of them, padding included), so the gathered tiles are visible in DRAM lane for lane."""
    rng = np.random.default_rng(seed)
    pb = ProgramBuilder(cfg)
    src = pb.alloc("src", "acc", (SRC * cfg.batch, cfg.block_out),
                   rng.integers(-(1 << 12), 1 << 12, (SRC * cfg.batch, cfg.block_out)))
    n = (y_pad[0] + y + y_pad[1]) * x
    out = pb.alloc("out", "out", (n * cfg.batch, cfg.block_out))
    pb.load(MemType.ACC, 0, src.addr + offset, y, x, x_stride, pad=(y_pad[0], y_pad[1], 0, 0), elem_stride=step)
    pb.gemm(0, 0, push_next=True)
    pb.store(0, out.addr, 1, n, n, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build(), src


def _expected(program, src, y: int, x: int, x_stride: int, step: int, offset: int, y_pad: tuple[int, int], cfg):  # type: ignore[no-untyped-def]
    tiles = program.read("src").reshape(SRC, cfg.batch, cfg.block_out).astype(np.int64)
    idx = offset + np.arange(y)[:, None] * x_stride + np.arange(x)[None, :] * step
    block = np.zeros((y_pad[0] + y + y_pad[1], x, cfg.batch, cfg.block_out), dtype=np.int64)
    block[y_pad[0]:y_pad[0] + y] = tiles[idx]
    half = 1 << (cfg.out_width - 1)
    return ((block + half) % (1 << cfg.out_width) - half).reshape(-1, cfg.block_out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), preset=st.sampled_from(preset_names()))
def test_gathering_load_matches_numpy_and_the_cycle_model_matches_fsim(data: st.DataObject, preset: str) -> None:
    base = load_config(preset)
    cfg = base.replace(timing=data.draw(timings(base.bus_bytes)))
    y, x = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    step = data.draw(st.integers(1, 5))
    x_stride = data.draw(st.integers(0, 20))
    y_pad = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    last = (y - 1) * x_stride + (x - 1) * step
    offset = data.draw(st.integers(0, SRC - 1 - last)) if last < SRC else None
    if offset is None or (y_pad[0] + y + y_pad[1]) * x > cfg.acc_buff_depth:
        return
    program, src = _program(cfg, y, x, x_stride, step, offset, y_pad, data.draw(st.integers(0, 99)))
    assert cfg.isa.decode_program(cfg.isa.encode_program(program.instructions)) == list(program.instructions)
    ref = run_fsim(cfg, program.instructions, program.dram)
    got = program.read("out", ref.dram).reshape(-1, cfg.block_out).astype(np.int64)
    np.testing.assert_array_equal(got, _expected(program, src, y, x, x_stride, step, offset, y_pad, cfg))
    cyc = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr)
    np.testing.assert_array_equal(cyc.dram, ref.dram)
    assert cyc.counters == ref.counters


def test_one_gathering_load_equals_one_load_per_row_in_memory_and_dram_bytes() -> None:
    """The gathering LOAD reads exactly the bytes the per-row LOADs it replaces (one DMA row per element) read."""
    cfg = load_config("default")
    y, x, x_stride, step = 3, 7, 28, 2
    one, _ = _program(cfg, y, x, x_stride, step, 1, (0, 0), 3)
    insns = list(one.instructions)
    gather = insns[0]
    rows = [MemInsn(Opcode.LOAD, MemType.ACC, r * x, gather.dram_base + r * x_stride, x, 1, step) for r in range(y)]
    per_row = rows + insns[1:]
    a = run_cycle(cfg, insns, one.dram, insn_addr=one.insn_addr)
    b = run_cycle(cfg, per_row, one.dram, insn_addr=one.insn_addr)
    np.testing.assert_array_equal(a.dram, b.dram)
    assert a.counters["dram_read_bytes.ACC"] == b.counters["dram_read_bytes.ACC"] == y * x * cfg.acc_elem_bytes


@pytest.mark.parametrize("backend", ["fsim", "cycle"])
def test_window_check_covers_the_last_gathered_element(backend: str) -> None:
    """The block's last element is ``dram_base + (y-1)*x_stride + (x-1)*elem_stride``: a gathering LOAD whose last
    element falls past the DRAM image faults there (and names the element), though ``x`` contiguous elements
    from the last row's start would not."""
    cfg = load_config("tiny")
    program, _ = _program(cfg, 2, 3, 4, 1, 0, (0, 0), 0)
    eb = cfg.acc_elem_bytes
    limit = program.dram.size // eb
    step = 5
    base = limit - 1 - (4 + 2 * step) + 1  # last element one past the image
    bad = MemInsn(Opcode.LOAD, MemType.ACC, 0, base, 2, 3, 4, elem_stride=step)
    insns = [bad] + list(program.instructions[1:])
    with pytest.raises(MemoryAccessError, match=rf"elements \[{base}, {limit}\]"):
        if backend == "fsim":
            run_fsim(cfg, insns, program.dram)
        else:
            run_cycle(cfg, insns, program.dram, insn_addr=program.insn_addr)
    assert bad.last_elem == limit
    ok = MemInsn(Opcode.LOAD, MemType.ACC, 0, base - 1, 2, 3, 4, elem_stride=step)
    run_fsim(cfg, [ok] + list(program.instructions[1:]), program.dram)


def test_encoding_rules() -> None:
    cfg = load_config("default")
    isa = cfg.isa
    for step in (1, 2, MAX_ELEM_STRIDE):
        insn = MemInsn(Opcode.LOAD, MemType.INP, 3, 100, 7, 14, 56, y_pad0=1, elem_stride=step)
        assert isa.decode(isa.encode(insn)) == insn
    # elem_stride 1 encodes as all-zero bits: a LOAD is the word it was before the field existed
    plain = MemInsn(Opcode.LOAD, MemType.INP, 3, 100, 7, 14, 56)
    assert isa.encode(plain) >> isa.mem.field("elem_stride_m1").offset == 0
    with pytest.raises(IsaError, match="cannot pad along x"):
        isa.encode(MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 2, 2, 4, x_pad1=1, elem_stride=2))
    with pytest.raises(IsaError, match="only a LOAD gathers"):
        isa.encode(MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 2, 2, 4, elem_stride=2))
    for step in (0, MAX_ELEM_STRIDE + 1):
        with pytest.raises(IsaError, match=f"elem_stride = {step}"):
            isa.encode(MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 2, 2, 4, elem_stride=step))
    # a word with both an element stride and x pads is malformed, not silently read
    word = isa.encode(MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 2, 2, 4, x_pad0=1))
    word |= 1 << isa.mem.field("elem_stride_m1").offset
    with pytest.raises(IsaError, match="malformed LOAD.*cannot pad along x"):
        isa.decode(word)
    # records built directly are refused by the static checks, on every backend
    with pytest.raises(ProtocolError, match="only a LOAD gathers"):
        check_program(cfg, [MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 2, 2, elem_stride=3)])
    with pytest.raises(ProtocolError, match="cannot pad along x"):
        check_program(cfg, [MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 2, 2, x_pad0=1, elem_stride=3)])
