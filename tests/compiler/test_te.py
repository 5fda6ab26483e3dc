"""Tensor-expression features against NumPy (fp32 tolerance rtol=atol=1e-5 unless stated)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler import te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import call_packed, register_packed
from vdla.compiler.tir.pipeline import lower

from te_testutil import FP32_ATOL, FP32_RTOL, execute, random_args


def run_both(outputs, args, rng_seed=0):
    """Outputs of the default schedule, interpreted before and after lowering."""
    s = create_schedule(outputs, args=args)
    inputs = random_args(s.func, np.random.default_rng(rng_seed))
    before = execute(s.func, inputs)
    after = execute(lower(s.func), inputs)
    for x, y in zip(before, after):
        np.testing.assert_allclose(y, x, rtol=FP32_RTOL, atol=FP32_ATOL)
    return inputs, after


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from(["sum", "max", "min"]))
def test_builtin_reducers(n, m, which):
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis(m, "k")
    red = {"sum": te.sum, "max": te.max, "min": te.min}[which]
    B = te.compute((n,), lambda i: red(A[i, k], axis=k), name="B")
    ins, outs = run_both([B], [A, B])
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[which](ins[0], axis=1)
    np.testing.assert_allclose(outs[-1], ref, rtol=FP32_RTOL, atol=FP32_ATOL)


def test_user_reducer_and_condition():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), "prod")
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis(5, "k")
    B = te.compute((4,), lambda i: prod(A[i, k], axis=k), name="B")
    C = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, where=k % 2 == 0), name="C")
    ins, outs = run_both([B, C], [A, B, C])
    np.testing.assert_allclose(outs[1], np.prod(ins[0], axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[2], ins[0][:, ::2].sum(axis=1), rtol=1e-5, atol=1e-5)


def test_integer_reduction_is_exact():
    A = te.placeholder((3, 7), "int8", "A")
    k = te.reduce_axis(7, "k")
    B = te.compute((3,), lambda i: te.sum(A[i, k].astype("int32") * 3, axis=k), name="B")
    ins, outs = run_both([B], [A, B])
    np.testing.assert_array_equal(outs[-1], ins[0].astype(np.int32).sum(axis=1) * 3)


def test_if_then_else_padding_is_lazy():
    A = te.placeholder((5,), name="A")
    P = te.compute((9,), lambda i: te.if_then_else((i >= 2) & (i < 7), A[i - 2], -1.0), name="P")
    ins, outs = run_both([P], [A, P])
    np.testing.assert_array_equal(outs[-1], np.pad(ins[0], 2, constant_values=-1))


INTRINSICS = [
    ("exp", te.exp, np.exp), ("log", lambda x: te.log(x + 2.0), lambda x: np.log(x + 2)),
    ("sqrt", lambda x: te.sqrt(x + 1.5), lambda x: np.sqrt(x + 1.5)),
    ("tanh", te.tanh, np.tanh), ("sigmoid", te.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    ("erf", te.erf, np.vectorize(math.erf)), ("fabs", te.fabs, np.abs),
    ("pow", lambda x: te.power(x + 2.0, 1.5), lambda x: (x + 2) ** 1.5),
]


@pytest.mark.parametrize("name,fte,fnp", INTRINSICS, ids=[i[0] for i in INTRINSICS])
def test_intrinsics(name, fte, fnp):
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda i, j: fte(A[i, j]), name="B")
    ins, outs = run_both([B], [A, B])
    np.testing.assert_allclose(outs[-1], fnp(ins[0]).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_casts_wrap_and_truncate():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: (A[i] * 200.0).astype("int32").astype("int8"), name="B")
    s = create_schedule(B)
    a = np.array([-1, -0.5, 0.3, 0.7, 0.99, 1.0], np.float32)
    out = execute(lower(s.func), [a, np.zeros(6, np.int8)])[1]
    np.testing.assert_array_equal(out, (a * 200).astype(np.int32).astype(np.int8))


def test_scan_cumsum():
    m, n = 6, 3
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    S = te.scan(init, update, state, inputs=[X], name="S")
    ins, outs = run_both([S], [X, S])
    np.testing.assert_allclose(outs[-1], np.cumsum(ins[0], axis=0), rtol=1e-5, atol=1e-5)


def test_extern_packed_call():
    @register_packed("test.te.double_rows", override=True)
    def double_rows(a, b):
        b[...] = 2 * a

    A = te.placeholder((3, 4), name="A")
    B = te.extern((3, 4), [A], lambda ins, outs: call_packed("test.te.double_rows", ins[0],
                                                             outs[0]), name="B")
    C = te.compute((3, 4), lambda i, j: B[i, j] + 1.0, name="C")
    ins, outs = run_both([C], [A, C])
    np.testing.assert_allclose(outs[-1], 2 * ins[0] + 1, rtol=1e-6)


def test_malformed_expressions_raise():
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis(4, "k")
    with pytest.raises(te.TensorError):
        te.compute((4,), lambda i: te.sum(A[k], axis=k) + 1.0, name="nested")
    with pytest.raises(te.TensorError):
        te.compute((4, 4), lambda i: A[i], name="arity")
    with pytest.raises(TypeError):
        te.compute((4,), lambda i: A[i] + A[i].astype("int32"), name="mixed")
    with pytest.raises(te.TensorError):
        A[0, 1]
