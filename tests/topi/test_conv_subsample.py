"""Strided 1 x 1 convs read a subsampled copy of their input (``topi.subsample_nchwc``): the conv then
runs at stride 1 over the ``oh x ow`` positions it needs.  Checked against NumPy for strides 2 and 3,
with and without padding, grouped, through the default schedule, a ``reduce_at`` variant and the fused
epilogue; and the conv really reads the dense subsampled tensor, not the strided input."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.tir.ir import max_

from . import reference as ref
from .test_ops import REDUCE_TOL, compile_run, randn


@pytest.mark.parametrize("size,stride,pad,groups", [(14, 2, 0, 1), (7, 2, 0, 1), (9, 3, 0, 1), (8, 2, 1, 1),
                                                    (10, 2, 0, 2)])
def test_strided_pointwise_conv_matches_numpy(size: int, stride: int, pad: int, groups: int) -> None:
    ib, ob, c, oc = 8, 8, 16 * groups, 16 * groups
    rng = np.random.default_rng(size * 10 + stride)
    x, w = randn(rng, 1, c, size, size), randn(rng, oc, c // groups, 1, 1)
    xb, wb = ref.to_nchwc(x, ib), ref.kernel_blocked(w, ib, ob)
    bx, bw = te.placeholder(xb.shape, name="xb"), te.placeholder(wb.shape, name="wb")
    out = topi.conv2d_nchwc(bx, bw, stride, pad, groups=groups)
    sub = out.op.input_tensors()[0]
    osize = (size + 2 * pad - 1) // stride + 1
    assert sub.op.tag == "pad_nchwc" and tuple(d.value for d in sub.shape[2:4]) == (osize, osize)
    want = ref.conv2d_nchw(x, w, stride, pad, groups=groups)
    got = compile_run(topi.schedule_conv2d_nchwc(out), [bx, bw], out, [xb, wb])
    np.testing.assert_allclose(ref.from_nchwc(got), want, **REDUCE_TOL)
    if groups == 1:  # another register tile, the input channels reduced outside the row
        knobs = topi.Conv2dNCHWcKnobs(ow_block=3, oc_block=2, reduce_at="row")
        got = compile_run(topi.schedule_conv2d_nchwc(out, knobs), [bx, bw], out, [xb, wb])
        np.testing.assert_allclose(ref.from_nchwc(got), want, **REDUCE_TOL)


def test_strided_pointwise_conv_with_fused_epilogue() -> None:
    rng = np.random.default_rng(1)
    x, w, bias = randn(rng, 1, 32, 14, 14), randn(rng, 32, 32, 1, 1), randn(rng, 32)
    xb, wb = ref.to_nchwc(x, 8), ref.kernel_blocked(w, 8, 8)
    bx, bw = te.placeholder(xb.shape, name="xb"), te.placeholder(wb.shape, name="wb")
    tb = te.placeholder((4, 1, 1, 8), name="bias")
    out = topi.conv2d_nchwc(bx, bw, 2, 0)
    epi = te.compute(tuple(d.value for d in out.shape),
                     lambda n, c, y, x_, i: max_(out[n, c, y, x_, i] + tb[c, 0, 0, i], te.const(0.0, "float32")),
                     name="bias_relu")
    s = topi.schedule_conv2d_nchwc(out, epilogue=epi)
    got = compile_run(s, [bx, bw, tb], epi, [xb, wb, bias.reshape(4, 1, 1, 8)])
    want = np.maximum(ref.conv2d_nchw(x, w, 2, 0) + bias.reshape(1, 32, 1, 1), 0)
    np.testing.assert_allclose(ref.from_nchwc(got), want, **REDUCE_TOL)
