"""Depthwise conv2d on the GEMM core as a block-diagonal GEMM (``Conv2dWorkload.depthwise``): bit-exact
against NumPy on fsim and the cycle model, for odd channel counts (zero-padded to the block), stride 2,
padding, with and without the per-channel multiplier; the fit model's micro-op count is what code
generation loads."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.target import SCOPE_UOP
from vdla.compiler.vdla.topi import (Conv2dWorkload, Requantize, batch_matmul_workload, check_conv2d, compile_conv2d,
                                     dense_workload, footprint,
                                     knob_space,
                                     requant_shift)
from vdla.compiler.vdla.topi import reference as ref
from vdla_hw.errors import UnsupportedError

TARGET = VdlaTarget.from_config("default")

CASES = [
    # (channels, size, kernel, stride, pad, multiplier, relu)
    (32, 9, 3, 1, 1, False, True),
    (24, 11, 3, 2, 1, True, True),     # 24 channels: padded to 32 (two groups of the block, one half zero)
    (40, 7, 3, 1, 1, True, False),     # odd size, no relu
    (16, 10, 5, 2, 2, False, False),   # 5x5, stride 2
    (48, 8, 3, 1, 0, True, True),      # no padding, three blocks
]


@pytest.mark.parametrize("c,hw,k,stride,pad,mult,relu", CASES)
def test_depthwise_bit_exact_fsim_and_cycle(c: int, hw: int, k: int, stride: int, pad: int, mult: bool,
                                            relu: bool) -> None:
    wl = Conv2dWorkload(1, c, hw, hw, c, k, k, stride, pad, depthwise=True)
    ep = Requantize(shift=requant_shift(wl) + (7 if mult else 0), relu=relu, multiplier=mult)
    compiled = compile_conv2d(wl, TARGET, epilogue=ep, pad_channels=True)
    padded = wl.with_padded_channels(TARGET.config)
    assert footprint(padded, compiled.knobs, TARGET.config, ep)[SCOPE_UOP] == \
        compiled.module.program.buffers["uops"].nbytes // 4
    for backend in ("fsim", "cycle"):
        ok, _, got, want = check_conv2d(compiled, seed=c + hw, backend=backend)
        assert got.shape == (1, c, wl.oh, wl.ow)
        assert ok, f"{backend}: {int((got != want).sum())} of {got.size} outputs differ"


def test_depthwise_every_knob_setting_is_exact() -> None:
    """Every tiling of the knob space (tile sizes, threads on either axis, both loop orders) on fsim."""
    wl = Conv2dWorkload(1, 48, 6, 6, 48, 3, 3, 1, 1, depthwise=True)
    ep = Requantize(shift=6, relu=False)
    space = knob_space(wl, TARGET, (1, 2), ep)
    assert {k.loop_order for k in space} == {"oc_oh", "oh_oc"} and {k.virtual_threads for k in space} == {1, 2}
    for knobs in space[::8]:
        assert check_conv2d(compile_conv2d(wl, TARGET, knobs=knobs, epilogue=ep))[0], knobs


def test_block_diagonal_kernel_and_macs() -> None:
    cfg = TARGET.config
    kernel = np.random.default_rng(0).integers(-128, 128, (32, 1, 3, 3)).astype(np.int8)
    packed = ref.pack_depthwise_kernel(cfg, kernel)
    full = np.zeros((32, 32, 3, 3), np.int8)
    full[np.arange(32), np.arange(32)] = kernel[:, 0]
    dense = ref.pack_kernel(cfg, full)  # (2, 2, 3, 3, 16, 16): only the diagonal blocks are non-zero
    assert np.array_equal(packed[:, 0], dense[np.arange(2), np.arange(2)])
    assert not dense[0, 1].any() and not dense[1, 0].any()
    wl = Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1, depthwise=True)
    assert wl.macs == 32 * 64 * 9 and wl.core_macs(cfg) == wl.macs * cfg.block_in


def test_depthwise_needs_equal_channels() -> None:
    with pytest.raises(UnsupportedError, match="ic == oc"):
        Conv2dWorkload(1, 32, 8, 8, 64, 3, 3, 1, 1, depthwise=True).check(TARGET.config)


@pytest.mark.slow
@pytest.mark.parametrize("wl", [
    Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 2, 1, depthwise=True),  # a MobileNetV2 stride-2 depthwise block
    dense_workload(17, 64, 64),                                   # a ViT linear layer: 17 tokens, 64 -> 64
    batch_matmul_workload(2, 17, 32, 32),                         # Q.K^T of two heads, per-head weights
], ids=["depthwise", "vit_linear", "attention"])
def test_block_bit_exact_on_rtl(wl: Conv2dWorkload) -> None:
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.skip(why)
    compiled = compile_conv2d(wl, TARGET, epilogue=Requantize(shift=requant_shift(wl) + 7, multiplier=True))
    ok, result, _, _ = check_conv2d(compiled, backend="rtl")
    assert ok and result.cycles > 0


@pytest.mark.slow
def test_attention_matmul_bit_exact_on_rtl() -> None:
    """Q.K^T of a ViT head pair (two activations, each head its own bound weight operand) on the RTL, as the
    depthwise block above: a transformer block of each kind on rtl in the slow suite (issue 27)."""
    wl = batch_matmul_workload(2, 17, 32, 32)
    ep = Requantize(shift=requant_shift(wl) + 7, relu=False, bias=False, multiplier=True)
    compiled = compile_conv2d(wl, TARGET, epilogue=ep)
    ok, result, got, _ = check_conv2d(compiled, seed=2, backend="rtl")
    assert ok and result.cycles > 0 and got.shape == (2, 32, 17, 1)


@pytest.mark.parametrize("heads,rows,inner,cols,pad", [
    (2, 17, 32, 32, False),   # Q.K^T of a ViT head pair: 17 tokens, head dim 32 (cols = 17 tokens padded to 32)
    (3, 17, 17, 32, True),    # A.V: the 17-token reduction zero-padded to 32
], ids=["qk", "av"])
def test_batch_matmul_per_head_weights_bit_exact(heads: int, rows: int, inner: int, cols: int, pad: bool) -> None:
    """A batched matmul of two activations: every head its own weight operand (bound per call), on fsim
    and the cycle model, with the fit model's micro-op count exact."""
    wl = batch_matmul_workload(heads, rows, inner, cols)
    ep = Requantize(shift=requant_shift(wl) + 7, relu=False, bias=False, multiplier=True)
    compiled = compile_conv2d(wl, TARGET, epilogue=ep, pad_channels=pad)
    hw = wl.with_padded_channels(TARGET.config)
    assert footprint(hw, compiled.knobs, TARGET.config, ep)[SCOPE_UOP] == \
        compiled.module.program.buffers["uops"].nbytes // 4
    assert compiled.module.program.buffers["kernel"].nbytes == heads * hw.oc * hw.ic  # int8 weights of every head
    for backend in ("fsim", "cycle"):
        ok, _, got, want = check_conv2d(compiled, seed=heads, backend=backend)
        assert ok and got.shape == (heads, cols, rows, 1), backend


def test_batch_matmul_every_knob_setting_is_exact() -> None:
    wl = batch_matmul_workload(3, 9, 32, 48)
    ep = Requantize(shift=8, relu=False, bias=False)
    space = knob_space(wl, TARGET, (1, 2), ep)
    assert len(space) > 10
    for knobs in space[::12]:
        assert check_conv2d(compile_conv2d(wl, TARGET, knobs=knobs, epilogue=ep))[0], knobs
