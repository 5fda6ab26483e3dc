"""Residual add and average pooling compiled for the VDLA (identity GEMM + ALU, through the schedule /
tensorize path) vs the graph operators' NumPy references, bit-exactly on fsim and cycle."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph.passes.quantize import requant_multipliers
from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi.eltwise import AddWorkload, add_reference, compile_add
from vdla.compiler.vdla.topi.pool import AvgPoolWorkload, avg_pool_reference, compile_avg_pool
from vdla.compiler.vdla.topi.reference import pack_data, unpack_output
from vdla_hw.errors import UnsupportedError

DEFAULT = VdlaTarget.from_config("default")
BACKENDS = ("fsim", "cycle")


def _int8(rng: np.random.Generator, shape: tuple[int, ...], extremes: bool = False) -> np.ndarray:
    x = rng.integers(-128, 128, shape).astype(np.int8)
    if extremes:  # saturation corners: whole rows of -128 and 127
        x[..., 0, :] = -128
        x[..., -1, :] = 127
    return x


ADDS = {
    # per-channel quantization: int32 multipliers (wider than the ALU immediate) and a rounding term
    "mult_relu": AddWorkload(1, 32, 5, 7, mult=(1 << 20, 3 << 19), round=1 << 20, shift=21, relu=True),
    "mult_signed": AddWorkload(1, 16, 3, 9, mult=(900_001, -1_234_567), round=1 << 22, shift=23),
    # products that wrap the int32 accumulator, as the reference does
    "mult_wraps": AddWorkload(1, 16, 2, 3, mult=(1 << 24, 1 << 24), round=0, shift=24),
    # per-tensor quantization: right and left alignment shifts (ALU SHR / MUL by an immediate)
    "align": AddWorkload(1, 48, 4, 4, align=(2, -3), round=2, shift=2),
    "plain": AddWorkload(1, 16, 1, 1),
    # rows tiled: more tiles than one pass of the buffers holds
    "resnet_56": AddWorkload(1, 64, 56, 56, mult=(1 << 21, 1 << 20), round=1 << 21, shift=22, relu=True),
}


@pytest.mark.parametrize("name", sorted(ADDS))
def test_add_bit_exact_on_fsim_and_cycle(name: str) -> None:
    wl = ADDS[name]
    compiled = compile_add(wl, DEFAULT)
    rng = np.random.default_rng(len(name))
    shape = compiled.module.params[0].shape
    a, b = _int8(rng, shape, extremes=True), _int8(rng, shape)
    want = add_reference(a, b, wl)
    assert want.min() < 0 or wl.relu  # the data reach both clip bounds on some case
    for backend in BACKENDS if wl.h * wl.w <= 64 or name == "resnet_56" else ("fsim",):
        got, result = compiled.run_packed(a, b, backend)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} on {backend}")
        if backend == "cycle":
            assert result.cycles > 0


def test_add_saturates_at_both_bounds() -> None:
    wl = AddWorkload(1, 16, 2, 2, mult=(1 << 16, 1 << 16), round=0, shift=8)
    compiled = compile_add(wl, DEFAULT)
    shape = compiled.module.params[0].shape
    a = np.full(shape, 127, np.int8)
    a[0, 0, 0] = -128
    got, _ = compiled.run_packed(a, a.copy(), "fsim")
    assert got[0, 0, 0].max() == -128 and got[0, 0, 1].min() == 127
    np.testing.assert_array_equal(got, add_reference(a, a, wl))


def test_add_uses_the_gemm_core_and_the_alu() -> None:
    """Two identity GEMMs move the operands into the accumulators; the ALU multiplies (by resident
    tiles, not immediates) and adds; the STORE requantizes."""
    from vdla_hw.isa import AluInsn, AluOp, GemmInsn

    program = compile_add(ADDS["mult_relu"], DEFAULT).bind()
    gemms = [i for i in program.instructions if isinstance(i, GemmInsn)]
    alus = [i for i in program.instructions if isinstance(i, AluInsn)]
    assert gemms and {AluOp(i.alu_op) for i in alus} == {AluOp.MUL, AluOp.ADD}
    assert all(not i.use_imm for i in alus)


def test_add_rejects_tiles_that_do_not_fit() -> None:
    with pytest.raises(UnsupportedError, match="BLOCK"):
        compile_add(AddWorkload(1, 24, 4, 4), DEFAULT)
    with pytest.raises(UnsupportedError, match="alignment"):
        compile_add(AddWorkload(1, 16, 4, 4, align=(-20, 0)), DEFAULT)


def test_add_moves_overwrite_and_the_store_adds_the_rounding_term() -> None:
    """fold_alu_store: no GEMM resets (each move overwrites its accumulator tile), the rounding term is the STORE's
    bias, so the compute module does per tile two GEMMs and three ALU ops (MUL, MUL, ADD); two virtual threads."""
    from vdla_hw.isa import AluInsn, GemmInsn, MemInsn, Opcode

    wl = ADDS["resnet_56"]
    program = compile_add(wl, DEFAULT).bind()
    insns = program.instructions
    gemms = [i for i in insns if isinstance(i, GemmInsn)]
    alus = [i for i in insns if isinstance(i, AluInsn)]
    stores = [i for i in insns if isinstance(i, MemInsn) and i.opcode == Opcode.STORE]
    assert gemms and not any(i.reset for i in gemms) and all(i.overwrite for i in gemms)
    tiles = wl.c // 16 * wl.h * wl.w
    per_tile = lambda group: sum(i.iter_out * i.iter_in * (i.uop_end - i.uop_bgn) for i in group) / tiles  # noqa: E731
    assert per_tile(gemms) == 2 and per_tile(alus) == 3
    assert stores and all(i.bias for i in stores)
    assert len({i.sram_base for i in stores}) == 2  # the two threads' accumulator regions


def test_global_pool_is_one_load_and_one_gemm_per_chunk() -> None:
    """The global pool's own schedule: per chunk of channel blocks one contiguous LOAD and one GEMM summing every
    tap (no LOAD per image row, no GEMM per block); its cycle-model count within 1.3x of its input's DMA time."""
    from vdla_hw.isa import GemmInsn, MemInsn, MemType

    from vdla.compiler.vdla.topi.pool import CompiledGlobalPool, global_pool_tiling

    wl = POOLS["global_resnet18_224"]
    compiled = compile_avg_pool(wl, DEFAULT)
    assert isinstance(compiled, CompiledGlobalPool)
    tile, threads = global_pool_tiling(wl, DEFAULT)
    chunks = wl.c // 16 // tile
    insns = compiled.bind().instructions
    loads = [i for i in insns if isinstance(i, MemInsn) and i.mem_type == MemType.INP]
    sums = [i for i in insns if isinstance(i, GemmInsn) and not i.reset]
    assert (len(loads), len(sums), threads) == (chunks, chunks, 2)
    assert all(i.y_size * i.x_size == tile * wl.h * wl.w for i in loads)
    x = np.zeros((1, wl.c, wl.h, wl.w), np.int8)
    _, result = compiled.run_packed(pack_data(DEFAULT.config, x), "cycle")
    dma = wl.c * wl.h * wl.w / DEFAULT.config.bus_bytes
    assert result.cycles <= 1.3 * dma


def _pool(n: int, c: int, h: int, w: int, k: int, stride: int, pad: int) -> AvgPoolWorkload:
    m, shift, r = requant_multipliers(np.array([1.0 / (k * k)]), np.array([128.0 * k * k]))
    return AvgPoolWorkload(n, c, h, w, k, k, stride, pad, int(m[0]), int(r[0]), shift)


POOLS = {
    "global_7x7": _pool(1, 64, 7, 7, 7, 1, 0),          # ResNet's global average pool (smaller C)
    "global_odd_5x5": _pool(1, 32, 5, 5, 5, 1, 0),
    "global_resnet18_224": _pool(1, 512, 7, 7, 7, 1, 0),  # 8 chunks of 4 channel blocks, two threads
    "global_3_blocks": _pool(1, 48, 3, 3, 3, 1, 0),       # an odd chunk count: one thread
    "global_batch_2": _pool(2, 32, 4, 4, 4, 1, 0),
    "3x3_s2_p1": _pool(1, 32, 9, 7, 3, 2, 1),           # padding counted in the divisor, odd sizes
    "2x2_s2": _pool(1, 16, 8, 6, 2, 2, 0),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_avg_pool_bit_exact_on_fsim_and_cycle(name: str) -> None:
    wl = POOLS[name]
    compiled = compile_avg_pool(wl, DEFAULT)
    rng = np.random.default_rng(len(name))
    x = _int8(rng, (wl.n, wl.c, wl.h, wl.w), extremes=True)
    want = avg_pool_reference(x, wl)
    for backend in BACKENDS:
        got, _ = compiled.run_packed(pack_data(DEFAULT.config, x), backend)
        np.testing.assert_array_equal(unpack_output(got), want, err_msg=f"{name} on {backend}")


def test_avg_pool_divides_with_the_stated_rounding() -> None:
    """The fixed-point divide rounds half up (to the multiplier's precision): a window of all 127 averages
    to 127, of all -128 to -128, and sums of k*k*v + k*k/2 round up."""
    wl = POOLS["global_odd_5x5"]
    compiled = compile_avg_pool(wl, DEFAULT)
    x = np.zeros((wl.n, wl.c, wl.h, wl.w), np.int8)
    x[:, 0] = 127
    x[:, 1] = -128
    x[:, 2, 0, :3] = 5  # sum 15 over 25 -> 0.6 -> 1
    x[:, 3, 0, :2] = 5  # sum 10 over 25 -> 0.4 -> 0
    x[:, 4, 0, :3] = -5  # -0.6 -> -1
    got, _ = compiled.run_packed(pack_data(DEFAULT.config, x), "fsim")
    y = unpack_output(got)[0, :5, 0, 0]
    assert y.tolist() == [127, -128, 1, 0, -1]
    np.testing.assert_array_equal(unpack_output(got), avg_pool_reference(x, wl))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["add", "global_pool", "pool_3x3_s2_p1"])
def test_a_block_of_each_on_rtl(kind: str) -> None:
    """The Verilated RTL computes what fsim computes, with the cycle model's timing close."""
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.fail(f"the rtl backend is unavailable here: {why}")
    rng = np.random.default_rng(7)
    if kind == "add":
        wl = AddWorkload(1, 32, 4, 6, mult=(1 << 20, 3 << 19), round=1 << 20, shift=21, relu=True)
        compiled = compile_add(wl, DEFAULT)
        shape = compiled.module.params[0].shape
        a, b = _int8(rng, shape, extremes=True), _int8(rng, shape)
        got, result = compiled.run_packed(a, b, "rtl")
        np.testing.assert_array_equal(got, add_reference(a, b, wl))
    else:
        pw = _pool(1, 32, 7, 7, 7, 1, 0) if kind == "global_pool" else _pool(1, 32, 9, 7, 3, 2, 1)
        pool = compile_avg_pool(pw, DEFAULT)
        x = _int8(rng, (pw.n, pw.c, pw.h, pw.w), extremes=True)
        got, result = pool.run_packed(pack_data(DEFAULT.config, x), "rtl")
        np.testing.assert_array_equal(unpack_output(got), avg_pool_reference(x, pw))
    assert result.cycles > 0


@pytest.mark.parametrize("kind", ["add", "global_pool"])
def test_fold_alu_store_keeps_the_program_exact_on_the_interpreter(kind: str) -> None:
    """The program right before and right after fold_alu_store runs on the TIR reference interpreter to the
    operator's NumPy reference; the pass removed what it should (the add's resets, the ADD it put on the STORE)."""
    from vdla.compiler.tir import run as interpret
    from vdla.compiler.vdla.pipeline import passes
    from vdla.compiler.vdla.topi.eltwise import add_func
    from vdla.compiler.vdla.topi.pool import global_pool_func

    rng = np.random.default_rng(3)
    if kind == "add":
        wl = AddWorkload(1, 32, 4, 6, mult=(900_001, -1_234_567), round=1 << 22, shift=23, relu=True)
        func = add_func(wl, DEFAULT)
        compiled = compile_add(wl, DEFAULT)
        shape = compiled.module.params[0].shape
        args = [_int8(rng, shape, extremes=True), _int8(rng, shape), *compiled.constants()]
        want = add_reference(args[0], args[1], wl)
    else:
        wl = POOLS["global_batch_2"]
        func = global_pool_func(wl, DEFAULT)
        x = _int8(rng, (wl.n, wl.c, wl.h, wl.w), extremes=True)
        compiled = compile_avg_pool(wl, DEFAULT)
        args = [pack_data(DEFAULT.config, x), *compiled.constants()]
        want = pack_data(DEFAULT.config, avg_pool_reference(x, wl))
    seen = []
    for name, fn in passes(DEFAULT):
        before = func
        func = fn(func)
        if name == "fold_alu_store":
            for f in (before, func):
                out = np.zeros(want.shape, np.int8)
                interpret(f, *args, out)
                np.testing.assert_array_equal(out, want)
            seen = [str(before), str(func)]
            break
    assert seen and seen[0] != seen[1]
    if kind == "add":
        assert "gemm_reset_uop" in seen[0] and "gemm_reset_uop" not in seen[1]
    assert seen[1].count("alu_uop") < seen[0].count("alu_uop")
