"""TIR -> LLVM translation of hand-built programs, checked against the reference
interpreter (bit-exact for integers, a few ulp for float math)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler.codegen.llvm import CodegenError, codegen, host_target, jit, parallel
from vdla.compiler.tir import run
from vdla.compiler.tir import op as top
from vdla.compiler.tir.ir import (Allocate, Broadcast, BufferStore, Cast, Evaluate, For, ForKind,
                             IfThenElse, IntImm, LetStmt, PrimFunc, Ramp, Select, Var,
                             decl_buffer, seq)


def compile_and_compare(func: PrimFunc, *arrays: np.ndarray, rtol: float = 0.0,
                        atol: float = 0.0) -> list[np.ndarray]:
    """Run ``func`` compiled and in the interpreter on copies of ``arrays``; compare."""
    mod = jit(codegen([func], host_target()))
    native = [a.copy() for a in arrays]
    interp = [a.copy() for a in arrays]
    mod(*native)
    run(func, *interp)
    for n, i in zip(native, interp):
        np.testing.assert_allclose(n, i, rtol=rtol, atol=atol)
    return native


def loop(var: Var, extent: int, body, kind: ForKind = ForKind.SERIAL) -> For:  # noqa: ANN001
    return For(var, IntImm(0), IntImm(extent), kind, body)


def ramp(base, lanes: int, stride: int = 1) -> Ramp:  # noqa: ANN001
    return Ramp(base, IntImm(stride), lanes)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=8, max_size=8),
       st.lists(st.integers(-9, 9).filter(lambda v: v != 0), min_size=8, max_size=8))
def test_integer_division_semantics(a_vals: list[int], b_vals: list[int]) -> None:
    a = decl_buffer((8,), "int32", "a")
    b = decl_buffer((8,), "int32", "b")
    out = decl_buffer((4, 8), "int32", "out")
    i = Var("i")
    x, y = a[i], b[i]
    body = loop(i, 8, seq(BufferStore(out, x // y, (IntImm(0), i)),
                          BufferStore(out, x % y, (IntImm(1), i)),
                          BufferStore(out, top.min(x, y) * 3 - top.max(x, y), (IntImm(2), i)),
                          BufferStore(out, x / y, (IntImm(3), i))))
    f = PrimFunc("intdiv", (a, b, out), body)
    av, bv = np.array(a_vals, np.int32), np.array(b_vals, np.int32)
    res = compile_and_compare(f, av, bv, np.zeros((4, 8), np.int32))[2]
    np.testing.assert_array_equal(res[0], av // bv)
    np.testing.assert_array_equal(res[1], av % bv)
    np.testing.assert_array_equal(res[3], np.trunc(av / bv).astype(np.int32))


def test_casts_wrap_and_truncate() -> None:
    a = decl_buffer((16,), "float32", "a")
    out8 = decl_buffer((16,), "int8", "o8")
    outb = decl_buffer((16,), "bool", "ob")
    outf = decl_buffer((16,), "float64", "of")
    i = Var("i")
    body = loop(i, 16, seq(
        BufferStore(out8, Cast("int8", Cast("int32", a[i])), (i,)),
        BufferStore(outb, a[i] > 0.5, (i,)),
        BufferStore(outf, Cast("float64", a[i]) * 2.0, (i,))))
    f = PrimFunc("casts", (a, out8, outb, outf), body)
    av = np.linspace(-300, 300, 16).astype(np.float32)
    r8, rb, rf = compile_and_compare(f, av, np.zeros(16, np.int8), np.zeros(16, bool),
                                     np.zeros(16, np.float64))[1:]
    np.testing.assert_array_equal(r8, av.astype(np.int32).astype(np.int8))
    np.testing.assert_array_equal(rb, av > 0.5)
    np.testing.assert_array_equal(rf, av.astype(np.float64) * 2)


def test_vector_contiguous_strided_and_broadcast_accesses() -> None:
    a = decl_buffer((64,), "float32", "a")
    out = decl_buffer((64,), "float32", "out")
    i = Var("i")
    # out[2i + lane*... ]: a strided gather, a broadcast scalar and a contiguous load.
    body = loop(i, 2, seq(
        BufferStore(out, a[ramp(i * 16, 16, 2)] + Broadcast(a[i], 16) + a[ramp(i * 16 + 32, 16)],
                    (ramp(i * 16, 16),)),
        BufferStore(out, a[ramp(i, 16, 3)], (ramp(i + 32, 16, 2),))))
    f = PrimFunc("vec", (a, out), body)
    compile_and_compare(f, np.arange(64, dtype=np.float32), np.zeros(64, np.float32))


def test_lazy_if_then_else_skips_out_of_bounds_loads() -> None:
    a = decl_buffer((8,), "float32", "a")
    out = decl_buffer((12,), "float32", "out")
    i = Var("i")
    # Iterations 8..11 would read past the end of ``a``: only the else branch may run.
    guarded = top.if_then_else(i < 8, a[i], -1.0)
    body = loop(i, 12, BufferStore(out, guarded, (i,)))
    f = PrimFunc("ite", (a, out), body)
    res = compile_and_compare(f, np.arange(8, dtype=np.float32), np.zeros(12, np.float32))[1]
    np.testing.assert_array_equal(res[8:], -1)


def test_vector_if_then_else_with_lane_condition() -> None:
    a = decl_buffer((20,), "float32", "a")
    out = decl_buffer((16,), "float32", "out")
    lanes = Ramp(IntImm(0), IntImm(1), 16)
    cond = lanes < Broadcast(IntImm(10), 16)
    # Lanes >= 10 would read a[20..25], out of bounds: they must not be evaluated.
    value = top.if_then_else(cond, a[Ramp(IntImm(10), IntImm(1), 16)],
                             Broadcast(top.const(0.0, "float32"), 16))
    f = PrimFunc("vite", (a, out), BufferStore(out, value, (lanes,)))
    # Not compared with the interpreter: it evaluates both sides of a vector
    # if_then_else on every lane (np.where) and reports the out-of-bounds read.
    mod = jit(codegen([f], host_target()))
    res = np.zeros(16, np.float32)
    mod(np.arange(20, dtype=np.float32), res)
    np.testing.assert_array_equal(res, np.r_[np.arange(10, 20), np.zeros(6)])


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
                                  "fabs", "floor", "ceil", "round"])
def test_math_intrinsics_scalar_and_vector(name: str) -> None:
    a = decl_buffer((32,), "float32", "a")
    out = decl_buffer((32,), "float32", "out")
    i = Var("i")
    fn = getattr(top, name)
    body = seq(loop(i, 16, BufferStore(out, fn(a[i]), (i,))),
               BufferStore(out, fn(a[ramp(IntImm(16), 16)]), (ramp(IntImm(16), 16),)))
    f = PrimFunc(f"m_{name}", (a, out), body)
    x = np.linspace(0.05, 4.5, 32).astype(np.float32)
    compile_and_compare(f, x, np.zeros(32, np.float32), rtol=2e-6, atol=1e-6)


def test_pow_select_let_and_branches() -> None:
    a = decl_buffer((16,), "float32", "a")
    out = decl_buffer((16,), "float32", "out")
    i, t = Var("i"), Var("t", "float32")
    body = loop(i, 16, LetStmt(t, a[i] * 2.0, IfThenElse(
        i % 2 == 0,
        BufferStore(out, top.power(t, top.const(1.5, "float32")), (i,)),
        BufferStore(out, Select(t > 3.0, t, -t), (i,)))))
    f = PrimFunc("misc", (a, out), body)
    compile_and_compare(f, np.linspace(0.1, 5, 16).astype(np.float32),
                        np.zeros(16, np.float32), rtol=1e-6)


@pytest.mark.parametrize("size", [64, 200_000])
def test_local_allocation_stack_and_heap(size: int) -> None:
    a = decl_buffer((size,), "float32", "a")
    out = decl_buffer((size,), "float32", "out")
    tmp = decl_buffer((size,), "float32", "tmp", scope="local")
    i, j = Var("i"), Var("j")
    body = Allocate(tmp, seq(loop(i, size, BufferStore(tmp, a[i] + 1.0, (i,))),
                             loop(j, size, BufferStore(out, tmp[size - 1 - j] * 2.0, (j,)))))
    f = PrimFunc("alloc", (a, out), body)
    compile_and_compare(f, np.arange(size, dtype=np.float32), np.zeros(size, np.float32))


def test_parallel_unrolled_and_nested_parallel_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_PARALLEL_WORK", 0)  # a pool region however small
    a = decl_buffer((32, 24), "float32", "a")
    out = decl_buffer((32, 24), "float32", "out")
    i, j, k = Var("i"), Var("j"), Var("k")
    scale = Var("scale", "float32")
    inner = For(k, IntImm(0), IntImm(4), ForKind.UNROLLED,
                BufferStore(out, a[i, j * 4 + k] * scale + Cast("float32", i), (i, j * 4 + k)))
    body = LetStmt(scale, top.const(3.0, "float32"),
                   loop(i, 32, loop(j, 6, inner, ForKind.PARALLEL), ForKind.PARALLEL))
    f = PrimFunc("par", (a, out), body)
    mod = jit(codegen([f], host_target()))
    x = np.random.default_rng(0).standard_normal((32, 24)).astype(np.float32)
    for threads in (1, 2, 0):
        mod.set_num_threads(threads)
        res = np.zeros_like(x)
        mod(x, res)
        np.testing.assert_allclose(res, x * 3 + np.arange(32)[:, None], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("extent", [1, 7, 13, 64])
def test_parallel_loop_runs_every_iteration_once(extent: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Threads claim chunks from a shared counter: each iteration must run exactly once for any
    # team size, including more threads than iterations and a loop not starting at zero.
    monkeypatch.setattr(parallel, "MIN_PARALLEL_WORK", 0)  # a pool region however small
    size = extent + 3
    a = decl_buffer((size,), "float32", "a")
    out = decl_buffer((size,), "float32", "out")
    i = Var("i")
    body = For(i, IntImm(3), IntImm(extent), ForKind.PARALLEL,
               BufferStore(out, out[i] + a[i] + 1.0, (i,)))
    mod = jit(codegen([PrimFunc("par_once", (a, out), body)], host_target()))
    x = np.arange(size, dtype=np.float32)
    want = np.zeros(size, np.float32)
    want[3:] = x[3:] + 1
    for threads in (1, 2, 3, 5, 0):
        mod.set_num_threads(threads)
        res = np.zeros(size, np.float32)
        mod(x, res)
        np.testing.assert_array_equal(res, want)


def test_generated_code_uses_wide_fma() -> None:
    target = host_target()
    if not target.has_fma:
        pytest.skip("the host has no FMA")
    a = decl_buffer((256,), "float32", "a")
    c = decl_buffer((256,), "float32", "c")
    i = Var("i")
    lanes = target.vector_lanes(32)
    r = ramp(i * lanes, lanes)
    f = PrimFunc("fma", (a, c), loop(i, 256 // lanes, BufferStore(c, c[r] + a[r] * a[r], (r,))))
    asm = codegen([f], target).assembly()
    reg = {16: "zmm", 8: "ymm"}.get(lanes, "xmm")
    assert "vfmadd" in asm and reg in asm


def test_unlowered_blocks_and_packed_calls_are_rejected() -> None:
    from vdla.compiler import te
    from vdla.compiler.schedule import create_schedule
    x = te.placeholder((4,), name="x")
    y = te.compute((4,), lambda i: x[i] + 1.0, name="y")
    with pytest.raises(CodegenError, match="lower the schedule"):
        codegen([create_schedule(y).func], host_target())
    a = decl_buffer((4,), "float32", "a")
    with pytest.raises(CodegenError, match="interpreter"):
        codegen([PrimFunc("pk", (a,), top.call_packed("my.fn", a))], host_target())
    n = Var("n")
    sym = decl_buffer((n,), "float32", "s")
    with pytest.raises(CodegenError, match="symbolic shape"):
        codegen([PrimFunc("sym", (sym,), Evaluate(IntImm(0)))], host_target())


def test_inline_vector_exp_accuracy_and_edges() -> None:
    n = 2048
    a = decl_buffer((n,), "float32", "a")
    out = decl_buffer((n,), "float32", "out")
    i = Var("i")
    r = ramp(i * 16, 16)
    f = PrimFunc("vexp", (a, out), loop(i, n // 16, BufferStore(out, top.exp(a[r]), (r,))))
    x = np.linspace(-87, 88.5, n).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 100.0, -120.0, 0.0]
    y = np.zeros(n, np.float32)
    jit(codegen([f], host_target()))(x, y)
    expect = np.exp(x.astype(np.float64))
    np.testing.assert_array_equal(y[:6], [np.nan, np.inf, 0.0, np.inf, 0.0, 1.0])
    # Within 2 ulp of the exact value over the normal range.
    np.testing.assert_allclose(y[6:], expect[6:], rtol=1.2e-7, atol=0)


def test_int32_data_arithmetic_wraps_like_numpy() -> None:
    """Data arithmetic carries no ``nsw``: an overflowing int32 multiply-add wraps exactly as
    NumPy (and the accelerator's accumulators) do, instead of being undefined."""
    from vdla.compiler import te
    from vdla.compiler.build import build
    from vdla.compiler.schedule import create_schedule

    a_t = te.placeholder((64,), dtype="int32", name="A")
    b_t = te.placeholder((64,), dtype="int32", name="B")
    c_t = te.compute((64,), lambda i: a_t[i] * b_t[i] + a_t[i], name="C")
    s = create_schedule(c_t)
    f = build(s, [a_t, b_t, c_t])
    a = np.full(64, 2**30 + 7, np.int32)
    b = np.arange(64, dtype=np.int32) * 3 + 5
    c = np.zeros(64, np.int32)
    f(a, b, c)
    assert np.array_equal(c, a * b + a)
