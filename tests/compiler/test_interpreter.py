"""The reference interpreter: bounds checks, lazy/eager choices, vectors, casts."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.tir import InterpreterError, run
from vdla.compiler.tir.interpreter import to_python
from vdla.compiler.tir.ir import (Broadcast, BufferStore, Cast, For, ForKind, PrimFunc, Ramp, Select,
                             Var, const, decl_buffer, seq)
from vdla.compiler.tir.op import if_then_else


def test_out_of_bounds_is_an_error():
    A = decl_buffer((4,), "float32", "A")
    i = Var("i")
    f = PrimFunc("oob", (A,), For(i, const(0), const(4), ForKind.SERIAL,
                                  BufferStore(A, A[i - 1], (i,))))
    with pytest.raises(InterpreterError, match="out of bounds"):
        run(f, np.zeros(4, np.float32))


def test_if_then_else_lazy_select_eager():
    A = decl_buffer((4,), "float32", "A")
    i = Var("i")
    lazy = PrimFunc("lazy", (A,), For(i, const(0), const(4), ForKind.SERIAL, BufferStore(
        A, if_then_else(i > 0, A[i - 1], const(0.0)), (i,))))
    a = np.arange(4, dtype=np.float32)
    run(lazy, a)
    eager = PrimFunc("eager", (A,), For(i, const(0), const(4), ForKind.SERIAL, BufferStore(
        A, Select(i > 0, A[i - 1], const(0.0)), (i,))))
    with pytest.raises(InterpreterError):
        run(eager, np.arange(4, dtype=np.float32))


def test_vector_code_and_casts():
    A = decl_buffer((8,), "float32", "A")
    B = decl_buffer((8,), "int8", "B")
    body = seq(BufferStore(A, Broadcast(const(1.5), 8) * Cast("float32x8", Ramp(const(0), const(1), 8)),
                           (Ramp(const(0), const(1), 8),)),
               BufferStore(B, Cast("int8x8", Ramp(const(120), const(3), 8)),
                           (Ramp(const(0), const(1), 8),)))
    f = PrimFunc("vec", (A, B), body)
    a, b = np.zeros(8, np.float32), np.zeros(8, np.int8)
    run(f, a, b)
    np.testing.assert_array_equal(a, 1.5 * np.arange(8))
    np.testing.assert_array_equal(b, (120 + 3 * np.arange(8)).astype(np.int8))


def test_argument_checks_and_deep_nests():
    A = decl_buffer((1,) * 19 + (3,), "float32", "A")
    vs = [Var(f"i{k}") for k in range(20)]
    body = BufferStore(A, const(1.0), tuple(vs))
    for v in reversed(vs):
        body = For(v, const(0), A.shape[len(vs) - 1 - vs[::-1].index(v)], ForKind.SERIAL, body)
    f = PrimFunc("deep", (A,), body)
    a = np.zeros((1,) * 19 + (3,), np.float32)
    run(f, a)  # deeper than Python's static nesting limit
    assert a.sum() == 3 and "def _nest" in to_python(f)[0]
    with pytest.raises(ValueError, match="shape"):
        run(f, np.zeros(3, np.float32))
