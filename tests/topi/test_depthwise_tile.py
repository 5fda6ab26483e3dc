"""The default register tile of the channel-blocked depthwise conv: its accumulators take at most half
the vector registers (the fused kernel keeps the bias, the clip bounds and the kernel taps in the other
half; AVX-512's former 28-column tile spilled), it is the widest such tile, and the fused kernel at that
tile (bias + clip, as MobileNetV2's layers run) computes the conv as NumPy does on every ISA of the matrix."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.autotune.epilogue import apply_epilogue, epilogue_stage
from vdla.compiler.build import build
from vdla.compiler.codegen.llvm import current_target

from . import reference as ref

_OPS = ("bias", "clip")


@pytest.mark.parametrize("width,stride", [(112, 1), (112, 2), (56, 1), (28, 1), (14, 1), (7, 1)])
def test_default_depthwise_tile(cpu_target: str, width: int, stride: int) -> None:
    data = te.placeholder((1, 2, width, width, 16), "float32", "data")
    kernel = te.placeholder((2, 3, 3, 16), "float32", "kernel")
    conv = topi.depthwise_conv2d_nchwc(data, kernel, stride, 1)
    _, weights, stage = epilogue_stage(conv, _OPS)
    knobs = topi.default_depthwise_nchwc_knobs(conv)

    target = current_target()
    vectors = -(-16 // target.vector_lanes(32))
    half = target.vector_registers // 2
    ow = int(conv.shape[3].value)
    assert ow % knobs.ow_block == 0
    assert knobs.ow_block * vectors <= half, f"{knobs.ow_block} columns x {vectors} vectors on {cpu_target}"
    wider = [d for d in range(knobs.ow_block + 1, ow + 1) if ow % d == 0 and d * vectors <= half]
    assert not wider, f"{wider} columns also fit half the registers on {cpu_target}"

    s = topi.schedule_depthwise_conv2d_nchwc(conv, knobs, epilogue=stage)
    mod = build(s, [data, kernel, *weights, stage])
    rng = np.random.default_rng(width + stride)
    x = rng.standard_normal((1, 2, width, width, 16)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 16)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    got = np.zeros([d.value for d in stage.shape], np.float32)
    mod(x, w, bias, got)
    xn = x.transpose(0, 1, 4, 2, 3).reshape(1, 32, width, width)
    wn = w.transpose(0, 3, 1, 2).reshape(32, 1, 3, 3)
    want = ref.conv2d_nchw(xn, wn, stride, 1, groups=32)
    want = want.reshape(1, 2, 16, *want.shape[2:]).transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(got, apply_epilogue(want, _OPS, None, bias), rtol=1e-4, atol=1e-4)
