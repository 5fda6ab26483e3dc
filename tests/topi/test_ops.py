"""Every operator, compiled with its default x86 schedule, against NumPy over random small
shapes.

Tolerances (fp32 results vs float64 NumPy): reductions (conv, dense, matmul, pooling sums)
``rtol = atol = 1e-4`` (the sums here have at most a few hundred terms of N(0, 1)
products); element-wise math ``rtol = 2e-6, atol = 1e-6`` (libm / LLVM intrinsics are
within 1-2 ulp); data movement and max pooling are exact.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vdla.compiler import te, topi
from vdla.compiler.build import build
from vdla.compiler.schedule import Schedule

from . import reference as ref

SETTINGS = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: For tests run once per ISA of the ``cpu_target`` matrix (the fixture is the same for every example).
ISA_SETTINGS = settings(SETTINGS, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
REDUCE_TOL = {"rtol": 1e-4, "atol": 1e-4}
MATH_TOL = {"rtol": 2e-6, "atol": 1e-6}


def compile_run(s: Schedule, inputs: list[te.Tensor], out: te.Tensor,
                arrays: list[np.ndarray]) -> np.ndarray:
    result = np.zeros([d.value for d in out.shape], np.float32)
    build(s, inputs + [out])(*[np.ascontiguousarray(a, np.float32) for a in arrays], result)
    return result


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


conv_case = st.fixed_dictionaries({
    "c": st.integers(1, 6), "oc": st.integers(1, 9), "size": st.integers(3, 11),
    "k": st.sampled_from([1, 2, 3, 5]), "stride": st.sampled_from([1, 2]),
    "pad": st.integers(0, 2), "seed": st.integers(0, 2**16)})


@SETTINGS
@given(conv_case)
def test_conv2d_nchw(case: dict[str, int]) -> None:
    c, oc, size, k, stride, pad = (case[n] for n in ("c", "oc", "size", "k", "stride", "pad"))
    if size + 2 * pad < k:
        return
    rng = np.random.default_rng(case["seed"])
    x, w = randn(rng, 1, c, size, size), randn(rng, oc, c, k, k)
    tx, tw = te.placeholder(x.shape, name="x"), te.placeholder(w.shape, name="w")
    out = topi.conv2d_nchw(tx, tw, stride, pad)
    got = compile_run(topi.schedule_conv2d_nchw(out), [tx, tw], out, [x, w])
    np.testing.assert_allclose(got, ref.conv2d_nchw(x, w, stride, pad), **REDUCE_TOL)


@ISA_SETTINGS
@given(conv_case, st.sampled_from([1, 2, 4]), st.sampled_from([1, 4, 16]))
def test_conv2d_nchwc_with_layout_transforms(cpu_target: str, case: dict[str, int], ib: int, ob: int) -> None:
    size, k, stride, pad = (case[n] for n in ("size", "k", "stride", "pad"))
    if size + 2 * pad < k:
        return
    c, oc = case["c"] * ib, 2 * ob
    rng = np.random.default_rng(case["seed"])
    x, w = randn(rng, 2, c, size, size), randn(rng, oc, c, k, k)
    tx, tw = te.placeholder(x.shape, name="x"), te.placeholder(w.shape, name="w")
    # The transforms are compiled operators too.
    px, pw_ = topi.nchw_to_nchwc(tx, ib), topi.oihw_to_blocked(tw, ib, ob)
    xb = compile_run(topi.schedule_layout(px), [tx], px, [x])
    wb = compile_run(topi.schedule_layout(pw_), [tw], pw_, [w])
    np.testing.assert_array_equal(xb, ref.to_nchwc(x, ib))
    np.testing.assert_array_equal(wb, ref.kernel_blocked(w, ib, ob))
    bx, bw = te.placeholder(xb.shape, name="xb"), te.placeholder(wb.shape, name="wb")
    out = topi.conv2d_nchwc(bx, bw, stride, pad)
    got = compile_run(topi.schedule_conv2d_nchwc(out), [bx, bw], out, [xb, wb])
    back = topi.nchwc_to_nchw(te.placeholder(got.shape, name="ob"))
    unpacked = compile_run(topi.schedule_layout(back), list(back.op.input_tensors()), back, [got])
    np.testing.assert_array_equal(unpacked, ref.from_nchwc(got))
    np.testing.assert_allclose(unpacked, ref.conv2d_nchw(x, w, stride, pad), **REDUCE_TOL)


@ISA_SETTINGS
@given(conv_case, st.integers(2, 4), st.sampled_from([(1, 4), (2, 8), (4, 16), (8, 8)]))
def test_grouped_conv2d_nchwc(cpu_target: str, case: dict[str, int], groups: int, blocks: tuple[int, int]) -> None:
    """Grouped conv2d on the blocked micro-kernel: each channel block inside one group, against NumPy."""
    size, k, stride, pad = (case[n] for n in ("size", "k", "stride", "pad"))
    if size + 2 * pad < k:
        return
    ib, ob = blocks
    cg, ocg = ib * (1 + case["c"] % 2), ob * (1 + case["oc"] % 2)  # one or two blocks per group
    rng = np.random.default_rng(case["seed"])
    x, w = randn(rng, 1, groups * cg, size, size), randn(rng, groups * ocg, cg, k, k)
    bx = te.placeholder((1, groups * cg // ib, size, size, ib), name="xb")
    bw = te.placeholder((groups * ocg // ob, cg // ib, k, k, ib, ob), name="wb")
    out = topi.conv2d_nchwc(bx, bw, stride, pad, groups=groups)
    got = compile_run(topi.schedule_conv2d_nchwc(out), [bx, bw], out,
                      [ref.to_nchwc(x, ib), ref.kernel_blocked(w, ib, ob)])
    np.testing.assert_allclose(ref.from_nchwc(got), ref.conv2d_nchw(x, w, stride, pad, groups=groups),
                               **REDUCE_TOL)


def test_grouped_conv2d_nchwc_rejects_blocks_across_groups() -> None:
    bx = te.placeholder((1, 3, 8, 8, 4), name="xb")  # 3 input blocks cannot split into 2 groups
    bw = te.placeholder((2, 1, 3, 3, 4, 4), name="wb")
    with pytest.raises(topi.TopiError, match="2 groups must divide the 3 input"):
        topi.conv2d_nchwc(bx, bw, 1, 1, groups=2)


@SETTINGS
@given(conv_case)
def test_depthwise_conv2d(case: dict[str, int]) -> None:
    c, size, k, stride, pad = (case[n] for n in ("c", "size", "k", "stride", "pad"))
    if size + 2 * pad < k:
        return
    rng = np.random.default_rng(case["seed"])
    x, w = randn(rng, 1, c, size, size), randn(rng, c, 1, k, k)
    tx, tw = te.placeholder(x.shape, name="x"), te.placeholder(w.shape, name="w")
    out = topi.depthwise_conv2d_nchw(tx, tw, stride, pad)
    got = compile_run(topi.schedule_depthwise_conv2d_nchw(out), [tx, tw], out, [x, w])
    np.testing.assert_allclose(got, ref.conv2d_nchw(x, w, stride, pad, groups=c), **REDUCE_TOL)


@ISA_SETTINGS
@given(conv_case, st.sampled_from([4, 8, 16]), st.booleans())
def test_depthwise_conv2d_nchwc(cpu_target: str, case: dict[str, int], block: int, narrow: bool) -> None:
    """Channel-blocked depthwise conv (default tile, and a one-column tile) against NumPy."""
    c, size, k, stride, pad = (case[n] for n in ("c", "size", "k", "stride", "pad"))
    if size + 2 * pad < k:
        return
    rng = np.random.default_rng(case["seed"])
    x, w = randn(rng, 1, c * block, size, size + 1), randn(rng, c * block, 1, k, k)
    xb = x.reshape(1, c, block, size, size + 1).transpose(0, 1, 3, 4, 2)
    wb = w.reshape(c, block, k, k).transpose(0, 2, 3, 1)
    tx, tw = te.placeholder(xb.shape, name="x"), te.placeholder(wb.shape, name="w")
    out = topi.depthwise_conv2d_nchwc(tx, tw, stride, pad)
    knobs = topi.DepthwiseNCHWcKnobs(ow_block=1, unroll_kw=False) if narrow else None
    got = compile_run(topi.schedule_depthwise_conv2d_nchwc(out, knobs), [tx, tw], out, [xb, wb])
    want = ref.conv2d_nchw(x, w, stride, pad, groups=c * block)
    want = want.reshape(1, c, block, *want.shape[2:]).transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(got, want, **REDUCE_TOL)


def test_depthwise_conv2d_nchwc_rejects_mismatched_blocks() -> None:
    tx, tw = te.placeholder((1, 2, 8, 8, 16), name="x"), te.placeholder((2, 3, 3, 8), name="w")
    with pytest.raises(topi.TopiError, match="block both with the same channel block"):
        topi.depthwise_conv2d_nchwc(tx, tw, 1, 1)
    out = topi.depthwise_conv2d_nchwc(tx, te.placeholder((2, 3, 3, 16), name="w16"), 1, 1)
    with pytest.raises(topi.TopiError, match="ow_block 3 must divide the output width 8"):
        topi.schedule_depthwise_conv2d_nchwc(out, topi.DepthwiseNCHWcKnobs(ow_block=3))


@ISA_SETTINGS
@given(st.integers(1, 5), st.integers(1, 70), st.integers(1, 40), st.sampled_from([8, 16]),
       st.integers(0, 2**16))
def test_dense_and_dense_pack(cpu_target: str, m: int, n: int, k: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, w = randn(rng, m, k), randn(rng, n, k)
    tx, tw = te.placeholder(x.shape, name="x"), te.placeholder(w.shape, name="w")
    expect = x.astype(np.float64) @ w.T.astype(np.float64)
    out = topi.dense(tx, tw)
    np.testing.assert_allclose(compile_run(topi.schedule_dense(out), [tx, tw], out, [x, w]),
                               expect, **REDUCE_TOL)
    packed = topi.pack_dense_weight(tw, block)
    wp = compile_run(topi.schedule_layout(packed), [tw], packed, [w])
    twp = te.placeholder(wp.shape, name="wp")
    out = topi.dense_pack(tx, twp, n)
    np.testing.assert_allclose(compile_run(topi.schedule_dense(out), [tx, twp], out, [x, wp]),
                               expect, **REDUCE_TOL)
    # Column panels outermost (the transformer schedule), a multi-row tile, several vectors per tile.
    knobs = topi.DenseKnobs(n_vector=block, n_vectors=2, m_block=m, k_unroll=3, outer_order="n_m")
    np.testing.assert_allclose(compile_run(topi.schedule_dense(out, knobs), [tx, twp], out, [x, wp]),
                               expect, **REDUCE_TOL)


@SETTINGS
@given(st.sampled_from([(1, 1), (3, 3), (1, 2), (2, 1)]), st.integers(1, 13),
       st.integers(1, 37), st.integers(1, 19), st.integers(0, 2**16))
def test_batch_matmul(batches: tuple[int, int], m: int, n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = randn(rng, batches[0], m, k), randn(rng, batches[1], k, n)
    ta, tb = te.placeholder(a.shape, name="a"), te.placeholder(b.shape, name="b")
    out = topi.batch_matmul(ta, tb)
    got = compile_run(topi.schedule_batch_matmul(out), [ta, tb], out, [a, b])
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b), **REDUCE_TOL)


@ISA_SETTINGS
@given(st.integers(1, 5), st.integers(3, 12), st.sampled_from([2, 3]), st.sampled_from([1, 2]),
       st.integers(0, 1), st.sampled_from(["max", "avg"]), st.booleans(),
       st.sampled_from(["NCHW", "NCHWc"]), st.integers(0, 2**16))
def test_pool2d(cpu_target: str, c: int, size: int, k: int, stride: int, pad: int, kind: str,
                include_pad: bool, layout: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = randn(rng, 1, 4 * c, size, size)
    expect = ref.pool2d(x, k, stride, pad, kind, include_pad)
    data = ref.to_nchwc(x, 4) if layout == "NCHWc" else x
    tx = te.placeholder(data.shape, name="x")
    out = topi.pool2d(tx, k, stride, pad, kind, layout, count_include_pad=include_pad)
    got = compile_run(topi.schedule_pool(out), [tx], out, [data])
    got = ref.from_nchwc(got) if layout == "NCHWc" else got
    np.testing.assert_allclose(got, expect, **REDUCE_TOL)


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("layout", ["NCHW", "NCHWc"])
def test_global_pool(kind: str, layout: str) -> None:
    x = randn(np.random.default_rng(3), 2, 32, 7, 7)
    data = ref.to_nchwc(x, 16) if layout == "NCHWc" else x
    tx = te.placeholder(data.shape, name="x")
    out = topi.global_pool(tx, kind, layout)
    got = compile_run(topi.schedule_pool(out), [tx], out, [data])
    got = ref.from_nchwc(got) if layout == "NCHWc" else got
    fn = np.mean if kind == "avg" else np.max
    np.testing.assert_allclose(got, fn(x, axis=(2, 3), keepdims=True), **REDUCE_TOL)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v.astype(np.float64)))


def _erf(v: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erf)(v.astype(np.float64))


UNARY: list[tuple[Callable[[te.Tensor], te.Tensor], Callable[[np.ndarray], np.ndarray]]] = [
    (topi.relu, lambda v: np.maximum(v, 0)), (topi.sigmoid, _sigmoid), (topi.tanh, np.tanh),
    (topi.exp, np.exp), (topi.erf, _erf), (topi.negative, np.negative), (topi.abs, np.abs),
    (lambda t: topi.clip(t, -0.5, 0.7), lambda v: np.clip(v, -0.5, 0.7)),
    (lambda t: topi.leaky_relu(t, 0.1), lambda v: np.where(v > 0, v, v * np.float32(0.1))),
    (lambda t: topi.log(topi.abs(t)), lambda v: np.log(np.abs(v))),
    (lambda t: topi.sqrt(topi.abs(t)), lambda v: np.sqrt(np.abs(v))),
]


@SETTINGS
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(0, 2**16))
def test_unary_elementwise(shape: list[int], seed: int) -> None:
    x = randn(np.random.default_rng(seed), *shape)
    tx = te.placeholder(x.shape, name="x")
    for op, fn in UNARY:
        out = op(tx)
        got = compile_run(topi.schedule_injective(out), [tx], out, [x])
        np.testing.assert_allclose(got, fn(x), **MATH_TOL)


BINARY = [(topi.add, np.add), (topi.subtract, np.subtract), (topi.multiply, np.multiply),
          (topi.divide, np.divide), (topi.maximum, np.maximum), (topi.minimum, np.minimum)]


def _broadcastable(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    out = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    a = [1 if draw(st.booleans()) else d for d in out]
    b = [1 if draw(st.booleans()) else d for d in out][draw(st.integers(0, len(out) - 1)):]
    return a, b


@SETTINGS
@given(st.composite(_broadcastable)(), st.integers(0, 2**16))
def test_broadcast_binary_and_fusion(shapes: tuple[list[int], list[int]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = randn(rng, *shapes[0]), randn(rng, *shapes[1])
    ta, tb = te.placeholder(a.shape, name="a"), te.placeholder(b.shape, name="b")
    for op, fn in BINARY:
        out = op(ta, tb)
        got = compile_run(topi.schedule_injective(out), [ta, tb], out, [a, b])
        np.testing.assert_allclose(got, fn(a, b), **MATH_TOL)
    fused = topi.relu(topi.multiply(topi.add(ta, tb), tb))
    got = compile_run(topi.schedule_injective(fused), [ta, tb], fused, [a, b])
    np.testing.assert_allclose(got, np.maximum((a + b) * b, 0), **MATH_TOL)


def test_broadcast_shape_error() -> None:
    with pytest.raises(topi.TopiError, match="do not broadcast"):
        topi.add(te.placeholder((3, 4), name="a"), te.placeholder((5,), name="b"))


@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=0, max_size=2), st.integers(1, 100),
       st.integers(0, 2**16))
def test_softmax(rows: list[int], n: int, seed: int) -> None:
    x = randn(np.random.default_rng(seed), *rows, n) * 4
    tx = te.placeholder(x.shape, name="x")
    out = topi.softmax(tx)
    got = compile_run(topi.schedule_softmax(out), [tx], out, [x])
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 20), st.integers(1, 9), st.integers(0, 2**16))
def test_batch_norm_and_bias_add(n: int, c: int, hw: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = randn(rng, n, c, hw, hw)
    gamma, beta, mean = randn(rng, c), randn(rng, c), randn(rng, c)
    var = np.abs(randn(rng, c)) + 0.1
    tensors = [te.placeholder(a.shape, name=nm) for a, nm in
               zip((x, gamma, beta, mean, var), ("x", "gamma", "beta", "mean", "var"))]
    out = topi.batch_norm_inference(*tensors, eps=1e-5)
    got = compile_run(topi.schedule_batch_norm(out), tensors, out, [x, gamma, beta, mean, var])
    bc = (slice(None), None, None)
    expect = (x - mean[bc]) / np.sqrt(var[bc] + 1e-5) * gamma[bc] + beta[bc]
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    out = topi.bias_add(tensors[0], tensors[1])
    got = compile_run(topi.schedule_injective(out), tensors[:2], out, [x, gamma])
    np.testing.assert_allclose(got, x + gamma[bc], **MATH_TOL)


def test_transpose() -> None:
    x = randn(np.random.default_rng(5), 2, 3, 5, 7)
    tx = te.placeholder(x.shape, name="x")
    out = topi.transpose(tx, (3, 1, 0, 2))
    got = compile_run(topi.schedule_layout(out), [tx], out, [x])
    np.testing.assert_array_equal(got, x.transpose(3, 1, 0, 2))
    with pytest.raises(topi.TopiError, match="permutation"):
        topi.transpose(tx, (0, 1, 1, 2))
