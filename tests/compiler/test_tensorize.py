"""tensorize against declared intrinsics: TIR and packed-call implementations, and the
pattern-mismatch error."""
from __future__ import annotations

import pytest

from vdla.compiler import te
from vdla.compiler.schedule import TensorizeError, TensorIntrin, create_schedule
from vdla.compiler.tir import call_packed, register_packed
from vdla.compiler.tir.ir import BufferStore, For, ForKind, Var, const
from vdla.compiler.tir.pipeline import lower

from te_testutil import check_every_pass, matmul, numpy_check

T = 4


def gemm_desc():
    a = te.placeholder((T, T), name="a")
    b = te.placeholder((T, T), name="b")
    k = te.reduce_axis(T, "k")
    return te.compute((T, T), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")


def loops_impl(ins, outs):
    """The instruction written as TIR loops over the views (stands in for hardware)."""
    a, b = ins
    c = outs[0]
    i, j, k = Var("ti"), Var("tj"), Var("tk")
    body = BufferStore(c, c[i, j] + a[i, k] * b[k, j], (i, j))
    for v in (k, j, i):
        body = For(v, const(0), const(T), ForKind.SERIAL, body)
    return body


def loops_reset(outs):
    c = outs[0]
    i, j = Var("ri"), Var("rj")
    return For(i, const(0), const(T), ForKind.SERIAL,
               For(j, const(0), const(T), ForKind.SERIAL, BufferStore(c, const(0.0), (i, j))))


@register_packed("test.gemm4x4.update", override=True)
def _packed_update(a, b, c):
    c += a @ b


@register_packed("test.gemm4x4.reset", override=True)
def _packed_reset(c):
    c[...] = 0


PACKED = TensorIntrin("gemm_packed", gemm_desc(),
                      lambda ins, outs: call_packed("test.gemm4x4.update", *ins, *outs),
                      lambda outs: call_packed("test.gemm4x4.reset", *outs))
LOOPS = TensorIntrin("gemm_loops", gemm_desc(), loops_impl, loops_reset)


def tiled(intrin, k_outer=True):
    A, B, C = matmul(8, 12, 8)
    s = create_schedule(C)
    i, j, k = s.get_loops(C)
    io, jo, ii, ji = s.tile(i, j, T, T)
    ko, ki = s.split(k, factor=T)
    s.reorder(io, jo, ko, ii, ji, ki)
    s.tensorize(ii, intrin)
    return s


@pytest.mark.parametrize("intrin", [LOOPS, PACKED], ids=lambda i: i.name)
def test_tensorized_matmul_matches_numpy(intrin):
    s = tiled(intrin)
    assert "gemm" in str(s.func)
    numpy_check(s.func, lambda a, b: a @ b, 2)
    numpy_check(lower(s.func), lambda a, b: a @ b, 2)


def test_tensorized_program_survives_every_pass():
    check_every_pass(tiled(LOOPS).func)


def test_tensorize_mismatch_is_reported():
    A, B, C = matmul(8, 8, 8)
    s = create_schedule(C)
    i, j, k = s.get_loops(C)
    io, jo, ii, ji = s.tile(i, j, T, T)
    ko, ki = s.split(k, factor=T)
    s.reorder(io, jo, ko, ii, ki, ji)  # k before j: not the intrinsic's loop order
    with pytest.raises(TensorizeError, match="pattern mismatch"):
        s.tensorize(ii, LOOPS)
    D = te.compute((8, 8), lambda i, j: A[i, j] + B[i, j], name="D")
    s2 = create_schedule(D)
    i, j = s2.get_loops(D)
    io, jo, ii, ji = s2.tile(i, j, T, T)
    with pytest.raises(TensorizeError, match="pattern mismatch"):
        s2.tensorize(ii, LOOPS)
