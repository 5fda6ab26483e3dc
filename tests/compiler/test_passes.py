"""Every pass keeps the results of the program (interpreter before/after), plus checks of
what each pass is for."""
from __future__ import annotations

import pytest

from vdla.compiler import te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import transform as T
from vdla.compiler.tir.functor import collect
from vdla.compiler.tir.ir import (Allocate, Block, BlockRealize, Broadcast, BufferLoad, BufferStore,
                             For, ForKind, IfThenElse, Ramp, Var, const, decl_buffer,
                             PrimFunc, seq)
from vdla.compiler.tir.pipeline import PIPELINES, lower

from te_testutil import assert_same_results, check_every_pass, conv2d, matmul


def _count(func, cls):
    return len(collect(func.body, lambda n: isinstance(n, cls)))


def scheduled_matmul():
    A, B, C = matmul(12, 10, 7)
    s = create_schedule(C)
    i, j, k = s.get_loops(C)
    io, jo, ii, ji = s.tile(i, j, 5, 4)
    ko, ki = s.split(k, factor=3)
    s.reorder(io, jo, ko, ii, ki, ji)
    s.vectorize(ji)
    s.unroll(ki)
    s.parallel(io)
    return s.func


def scheduled_conv():
    X, W, P, Y = conv2d(c=2, h=6, w=7, f=3, kh=3, pad=1)
    s = create_schedule(Y, args=[X, W, Y])
    o, y, x, rc, ry, rx = s.get_loops(Y)
    xo, xi = s.split(x, factor=4)
    s.reorder(o, y, xo, rc, ry, rx, xi)
    s.compute_at(P, y)
    s.vectorize(xi)
    s.bind(o, "vthread")
    return s.func


def storage_hints():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2.0, name="C")
    s = create_schedule(C)
    i, j = s.get_loops(C)
    s.compute_at(B, i)
    s.storage_align(B, 0, 8, 3)
    s.double_buffer(B)
    return s.func


PROGRAMS = {"matmul": scheduled_matmul, "conv": scheduled_conv, "storage": storage_hints}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_pipeline_pass_by_pass(name):
    check_every_pass(PROGRAMS[name]())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("pass_", PIPELINES["llvm"][1:], ids=lambda p: p.__name__)
def test_each_pass_alone_after_lower_blocks(name, pass_):
    f = T.lower_blocks(PROGRAMS[name]())
    assert_same_results(f, pass_(f))


def test_lower_blocks_hoists_init_out_of_reduction():
    f = T.lower_blocks(scheduled_matmul())
    assert _count(f, (Block, BlockRealize)) == 0
    # The init is a separate loop nest, not an `if k == 0` inside the reduction.
    assert not any("== 0" in str(c.condition) for c in collect(f.body, lambda n: isinstance(n, IfThenElse)))


def test_partition_removes_tail_guards():
    f = T.simplify(T.lower_blocks(scheduled_matmul()))
    assert _count(f, IfThenElse) > 0
    g = T.simplify(T.partition_loop(f))
    assert _count(g, IfThenElse) == 0
    assert_same_results(f, g)


def test_flatten_vectorize_unroll_shapes():
    f = lower(scheduled_matmul())
    loads = collect(f.body, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    assert all(len(n.indices) == 1 for n in loads)
    assert _count(f, Ramp) > 0
    assert {lp.kind for lp in collect(f.body, lambda n: isinstance(n, For))} <= \
        {ForKind.SERIAL, ForKind.PARALLEL}


def test_vectorize_falls_back_on_lane_dependence():
    A = decl_buffer((9,), "float32", "A")
    i = Var("i")
    body = For(i, const(0), const(8), ForKind.VECTORIZED,
               BufferStore(A, A[i] + 1.0, (i + 1,)))
    f = PrimFunc("shift", (A,), body)
    g = T.vectorize_loop(f)
    assert _count(g, Ramp) == 0 and g.body.kind == ForKind.SERIAL
    assert_same_results(f, g)


def test_vectorize_broadcasts_invariants():
    A, B = decl_buffer((8,), "float32", "A"), decl_buffer((8,), "float32", "B")
    i = Var("i")
    f = PrimFunc("bc", (A, B), For(i, const(0), const(8), ForKind.VECTORIZED,
                                   BufferStore(B, A[i] * A[0], (i,))))
    g = T.vectorize_loop(f)
    assert _count(g, Broadcast) == 1 and _count(g, For) == 0
    assert_same_results(f, g)


def test_remove_no_op():
    A = decl_buffer((4,), "float32", "A")
    T_ = decl_buffer((4,), "float32", "T")
    i = Var("i")
    body = seq(For(i, const(0), const(4), ForKind.SERIAL, BufferStore(A, A[i], (i,))),
               Allocate(T_, For(Var("j"), const(0), const(0), ForKind.SERIAL,
                                BufferStore(T_, const(1.0), (const(0),)))))
    g = T.remove_no_op(PrimFunc("nop", (A,), body))
    assert _count(g, For) == 0 and _count(g, Allocate) == 0


def test_align_and_double_buffer():
    f = T.lower_blocks(storage_hints())
    g = T.align_storage(f)
    alloc = collect(g.body, lambda n: isinstance(n, Allocate))[0]
    assert alloc.buffer.strides[0].value % 8 == 3
    h = T.inject_double_buffer(g)  # runs after align_storage in the pipeline
    alloc = collect(h.body, lambda n: isinstance(n, Allocate))[0]
    assert alloc.buffer.shape[0].value == 2
    assert_same_results(f, h)


def test_unroll_renames_inner_loops():
    f = T.unroll_loop(T.lower_blocks(scheduled_matmul()))
    loop_vars = [lp.loop_var for lp in collect(f.body, lambda n: isinstance(n, For))]
    assert len(loop_vars) == len(set(map(id, loop_vars)))
