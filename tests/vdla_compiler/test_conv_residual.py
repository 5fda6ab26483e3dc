"""A residual add fused into the conv2d epilogue (``Requantize.residual``): the skip LOADed beside the conv's
output tile, moved into the accumulators by an identity GEMM, both requantized to the common scale and added
on the ALU before the STORE -- bit-exact against the conv's NumPy reference followed by the graph operator
``qadd``'s, on fsim and cycle (and on the RTL in the slow suite)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph.ops.qnn import qadd_reference
from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi import Conv2dWorkload, Requantize, compile_conv2d, fits, footprint, default_knobs
from vdla.compiler.vdla.topi import reference as ref
from vdla.compiler.vdla.topi.epilogue import Residual
from vdla.compiler.vdla.topi.ops import random_conv_data

DEFAULT = VdlaTarget.from_config("default")

CASES = {
    # ResNet's block: per-channel requantized 3x3 conv, add with int32 multipliers and rounding, then ReLU
    "3x3_mult_relu": (Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1), True, False,
                      Residual(mult=(23_000, 15_000), round=1 << 14, shift=15, relu=True)),
    # per-tensor alignment shifts (right for the conv, left for the skip), ReLU in the conv before the add
    "3x3_align": (Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1), False, True, Residual(align=(1, -2), shift=1)),
    # a strided 1x1 conv (the row-subsampling stage), one virtual thread's tiling
    "1x1_s2": (Conv2dWorkload(1, 32, 8, 8, 16, 1, 1, 2, 0), False, False, Residual(align=(0, 3), relu=True)),
    # MobileNetV2's case: a depthwise conv's block-diagonal GEMM with a negative multiplier
    "depthwise": (Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1, depthwise=True), True, False,
                  Residual(mult=(-300, 7_000), round=5, shift=12)),
}


def _run(name: str, backend: str, target: VdlaTarget = DEFAULT):  # type: ignore[no-untyped-def]
    wl, mult, relu, res = CASES[name]
    ep = Requantize(shift=10, relu=relu, multiplier=mult, residual=res)
    compiled = compile_conv2d(wl, target, epilogue=ep)
    data, kernel, bias = random_conv_data(wl, 3)
    rng = np.random.default_rng(5)
    m = rng.integers(1, 1 << 9, wl.oc).astype(np.int32) if mult else None
    skip = rng.integers(-128, 128, (wl.n, wl.oc, wl.oh, wl.ow)).astype(np.int8)
    skip[:, :2] = 127  # saturating channels: the add's clip is exercised too
    got, result = compiled.run_nchw(data, kernel, bias, backend, m, skip)
    conv = ref.depthwise_reference if wl.depthwise else ref.conv2d_reference
    a = conv(data, kernel, bias, wl.stride, wl.pad, 10, relu, 8, 32, m)
    want = qadd_reference([a, skip], {"mult": res.mult, "align": res.align, "round": res.round, "shift": res.shift,
                                      "relu": res.relu})
    return got, want, result, compiled


@pytest.mark.parametrize("backend", ["fsim", "cycle"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_residual_add_is_bit_exact(name: str, backend: str) -> None:
    got, want, result, _ = _run(name, backend)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 16  # not a degenerate (all-saturated) output
    if backend == "cycle":
        assert result.cycles > 0


def test_the_fused_add_is_one_program_with_a_second_load_stream() -> None:
    """The skip arrives by its own LOADs of the input buffer inside the conv's program (no separate kernel), and the
    conv's int8 result is never stored: the program STOREs exactly one output tensor's bytes."""
    from vdla_hw.isa import MemInsn, MemType, Opcode

    wl, *_ = CASES["3x3_mult_relu"]
    plain = compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=10, multiplier=True, relu=False))
    fused = compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=10, multiplier=True, relu=False,
                                                            residual=CASES["3x3_mult_relu"][3]))

    def loads_stores(c):  # type: ignore[no-untyped-def]
        insns = [i for i in c.module.program.instructions if isinstance(i, MemInsn)]
        load = sum(i.y_size * i.x_size for i in insns if i.opcode == Opcode.LOAD and i.mem_type == MemType.INP)
        store = sum(i.y_size * i.x_size for i in insns if i.opcode == Opcode.STORE)
        return load, store

    (lp, sp), (lf, sf) = loads_stores(plain), loads_stores(fused)
    out_tiles = wl.n * wl.oc * wl.oh * wl.ow // DEFAULT.config.block_out
    assert sp == sf == out_tiles
    assert lf - lp == out_tiles  # the skip: one input tile per output tile, read once


def test_the_fit_model_counts_the_skip_tiles() -> None:
    wl, *_ = CASES["3x3_mult_relu"]
    ep = Requantize(shift=10, multiplier=True, relu=False)
    res = Requantize(shift=10, multiplier=True, relu=False, residual=CASES["3x3_mult_relu"][3])
    k = default_knobs(wl, DEFAULT, 2, res)
    plain, fused = footprint(wl, k, DEFAULT.config, ep), footprint(wl, k, DEFAULT.config, res)
    assert fused["vdla.inp"] > plain["vdla.inp"] and fused["vdla.acc"] > plain["vdla.acc"]
    assert fits(DEFAULT, wl, k, res) is None


@pytest.mark.slow
def test_resnet_block_conv_with_fused_add_on_rtl() -> None:
    """One ResNet block's second conv with its residual add fused, on the Verilated RTL: bit-exact."""
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.fail(f"the rtl backend is unavailable here: {why}")
    got, want, result, _ = _run("3x3_mult_relu", "rtl")
    np.testing.assert_array_equal(got, want)
    assert result.cycles > 0
