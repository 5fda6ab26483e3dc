"""The simulators' fast paths give the same bits as the plain integer semantics: a GEMM run as a
batched float32 matmul (exact only while every partial sum stays below 2**24, so long reductions
are chunked), direct SRAM writes before a GEMM, and LOADs/STOREs through strided
DRAM views (overlapping rows, a last row that ends at the end of the image)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.simulator import MachineState, execute
from vdla.simulator.replay import float_chunk
from vdla_hw.config import load_config, preset_names
from vdla_hw.isa import DepFlags, GemmInsn, MemInsn, MemType, Opcode, Uop

PRESETS = preset_names()


def _set_uops(state: MachineState, uops: list[Uop]) -> None:
    words = state.cfg.isa.encode_uops(uops)
    state.uop[: len(words)] = words
    state.uop_dst[: len(words)], state.uop_src[: len(words)], state.uop_wgt[: len(words)] = \
        state.cfg.isa.decode_uop_fields(words)


def _wrap(values: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return (values + half) % (1 << bits) - half


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("group", [1, 3, 64, 65, 97, 300])
def test_long_reductions_of_extreme_operands_are_exact(preset: str, group: int) -> None:
    """``group`` iterations into each of two accumulators, every operand at -2**(w-1) or 2**(w-1)-1:
    the float path's chunks must stay exact and the wrap must match int64 arithmetic."""
    cfg = load_config(preset)
    state = MachineState(cfg, np.zeros(16, np.uint8), zeroed_sram=True)
    rng = np.random.default_rng(group)
    lo_i, hi_i = -(1 << (cfg.inp_width - 1)), (1 << (cfg.inp_width - 1)) - 1
    lo_w, hi_w = -(1 << (cfg.wgt_width - 1)), (1 << (cfg.wgt_width - 1)) - 1
    n_inp, n_wgt = min(4, cfg.inp_buff_depth), min(3, cfg.wgt_buff_depth)
    state.inp[:n_inp] = rng.choice([lo_i, hi_i], size=state.inp[:n_inp].shape)
    state.wgt[:n_wgt] = rng.choice([lo_w, hi_w], size=state.wgt[:n_wgt].shape)
    state.inp[0] = lo_i  # the largest product, lo * lo, in every lane of one pair
    state.wgt[0] = lo_w
    acc0 = rng.integers(-1000, 1000, size=state.acc[:2].shape)
    state.acc[:2] = acc0
    # Two micro-ops, into acc[0] and acc[1], repeated ``group`` times (loop factors 0).
    _set_uops(state, [Uop(0, 0, 0), Uop(1, n_inp - 1, n_wgt - 1)])
    execute(state, GemmInsn(False, 0, 2, group, 1, 0, 0, 0, 0, 0, 0), 0)

    inp, wgt = state.inp_sram.astype(np.int64), state.wgt_sram.astype(np.int64)
    expected = acc0.astype(np.int64)
    expected[0] += group * (inp[0] @ wgt[0].T)
    expected[1] += group * (inp[n_inp - 1] @ wgt[n_wgt - 1].T)
    np.testing.assert_array_equal(state.acc[:2], _wrap(expected, 8 * state.acc.dtype.itemsize))


@pytest.mark.parametrize("preset", PRESETS)
def test_float_chunk_divides_the_group_and_stays_exact(preset: str) -> None:
    cfg = load_config(preset)
    term = 1 << (cfg.inp_width + cfg.wgt_width - 2)
    for group in (1, 2, 7, 64, 96, 127, 288, 1024):
        chunk = float_chunk(cfg, group)
        assert chunk >= 1 and group % chunk == 0
        assert chunk * cfg.block_in * term <= 1 << 24


def test_direct_sram_writes_reach_the_next_gemm() -> None:
    """Tests and tools write ``state.inp``/``state.wgt`` directly: the float copies follow."""
    cfg = load_config("default")
    state = MachineState(cfg, np.zeros(16, np.uint8), zeroed_sram=True)
    _set_uops(state, [Uop(0, 0, 0)])
    overwrite = GemmInsn(False, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, overwrite=True)
    state.inp[0] = 1
    state.wgt[0] = 2
    execute(state, overwrite, 0)
    assert (state.acc[0] == 2 * cfg.block_in).all()
    state.inp[0] = 3
    execute(state, overwrite, 1)
    assert (state.acc[0] == 6 * cfg.block_in).all()


def _load(sram_base: int, dram_base: int, y: int, x: int, stride: int, pads: tuple[int, int, int, int] = (0, 0, 0, 0)
          ) -> MemInsn:
    return MemInsn(Opcode.LOAD, MemType.INP, sram_base, dram_base, y, x, stride, *pads, deps=DepFlags())


@pytest.mark.parametrize("y, x, stride, pads", [
    (3, 4, 2, (0, 0, 0, 0)),   # overlapping rows: x_stride < x_size
    (4, 3, 0, (1, 0, 0, 2)),   # every row the same DRAM row, padded
    (5, 2, 7, (0, 1, 1, 0)),   # the last row ends at the end of the image (no whole stride after it)
    (1, 6, 1, (0, 0, 0, 0)),
])
def test_strided_loads_match_an_element_by_element_copy(y: int, x: int, stride: int,
                                                        pads: tuple[int, int, int, int]) -> None:
    cfg = load_config("default")
    eb = cfg.inp_elem_bytes
    first = 3
    elems = first + (y - 1) * stride + x  # the image ends right after the block's last element
    dram = np.random.default_rng(y * 100 + x).integers(0, 256, size=elems * eb, dtype=np.uint8)
    state = MachineState(cfg, dram)
    execute(state, _load(5, first, y, x, stride, pads), 0)
    top, bottom, left, right = pads
    cols = left + x + right
    tiles = dram.reshape(elems, eb).view(np.int8)
    for r in range(top + y + bottom):
        for c in range(cols):
            got = state.inp_sram[5 + r * cols + c].reshape(-1)
            inside = top <= r < top + y and left <= c < left + x
            want = tiles[first + (r - top) * stride + (c - left)] if inside else np.zeros(eb, np.int8)
            np.testing.assert_array_equal(got, want, err_msg=f"row {r} col {c}")
