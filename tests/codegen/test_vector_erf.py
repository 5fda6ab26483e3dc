"""The inlined vector fp32 erf (a transformer's Gelu) against the exact value, lane by lane.

Tolerance: within 3 ulp of ``math.erf`` (float64) everywhere (libm's ``erff`` is within 1); the
special values (0, -0, +-inf, NaN, denormals) as libm's.
"""
from __future__ import annotations

import math

import numpy as np

from vdla.compiler.codegen.llvm import codegen, host_target, jit
from vdla.compiler.tir import op as top
from vdla.compiler.tir.ir import BufferStore, For, ForKind, IntImm, PrimFunc, Ramp, Var, decl_buffer


def _vector_erf(x: np.ndarray) -> np.ndarray:
    """``erf`` over ``x`` (a multiple of 16 long) through a 16-lane vector loop."""
    n = x.size
    a, out = decl_buffer((n,), "float32", "a"), decl_buffer((n,), "float32", "out")
    i = Var("i")
    lanes = Ramp(i * 16, IntImm(1), 16)
    body = For(i, IntImm(0), IntImm(n // 16), ForKind.SERIAL, BufferStore(out, top.erf(a[lanes]), (lanes,)))
    module = codegen([PrimFunc("verf", (a, out), body)], host_target())
    assert "erff" not in module.ir_text  # inlined, not 16 libm calls
    mod = jit(module)
    res = np.zeros(n, np.float32)
    mod(x, res)
    return res


def test_vector_erf_is_within_three_ulp_everywhere() -> None:
    grid = np.linspace(-6.0, 6.0, 96_000, dtype=np.float32)
    tiny = np.float32([1e-38, -1e-30, 1e-10, -3e-6, 1e-3, -0.999999, 1.0, -1.0000001, 3.99, 4.0, 4.01, 9.5])
    x = np.concatenate([grid, tiny, np.zeros(16 - tiny.size % 16, np.float32)])
    got = _vector_erf(x).astype(np.float64)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    bound = 3 * ulp
    worst = int(np.argmax(np.abs(got - want) / bound))
    assert np.all(np.abs(got - want) <= bound), (x[worst], got[worst], want[worst])


def test_vector_erf_special_values() -> None:
    x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 50.0] * 2)
    got = _vector_erf(x)
    np.testing.assert_array_equal(got[:4], np.float32([0.0, -0.0, 1.0, -1.0]))
    assert np.signbit(got[1]) and np.isnan(got[4])
    np.testing.assert_array_equal(got[7], np.float32(1.0))
    assert abs(float(got[5])) < 1e-44 and got[5] >= 0 and got[6] <= 0
