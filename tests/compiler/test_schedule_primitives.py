"""Primitives beyond the random-schedule tests: caches, compute_root, nparts, pragmas,
virtual threads; each program is checked against NumPy before and after lowering."""
from __future__ import annotations

from vdla.compiler import te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir.functor import collect
from vdla.compiler.tir.ir import Allocate, For, ForKind
from vdla.compiler.tir.pipeline import lower

from te_testutil import matmul, numpy_check


def _check(s, ref, n_inputs=2):
    numpy_check(s.func, ref, n_inputs)
    numpy_check(lower(s.func), ref, n_inputs)


def test_cache_read_write_staged_tiles():
    A, B, C = matmul(8, 12, 6)
    s = create_schedule(C)
    AL = s.cache_read(A, "local", readers=[C])
    CL = s.cache_write(C, "local")
    i, j = s.get_loops(C)
    io, jo, ii, ji = s.tile(i, j, 4, 4)
    s.compute_at(CL, jo)
    s.compute_at(AL, jo)
    scopes = {a.buffer.scope for a in collect(s.func.body, lambda n: isinstance(n, Allocate))}
    assert scopes == {"local"}
    _check(s, lambda a, b: a @ b)


def test_compute_root_undoes_compute_at():
    A = te.placeholder((6, 5), name="A")
    B = te.compute((6, 5), lambda i, j: A[i, j] * 3.0, name="B")
    C = te.compute((6, 5), lambda i, j: B[i, j] + B[i, 4 - j], name="C")
    s = create_schedule(C)
    s.compute_at(B, s.get_loops(C)[0])
    _check(s, lambda a: 3 * a + 3 * a[:, ::-1], 1)
    s.compute_root(B)
    assert len(s.get_loops(B)) == 2
    _check(s, lambda a: 3 * a + 3 * a[:, ::-1], 1)


def test_split_nparts_fuse_pragma_vthread():
    A, B, C = matmul(10, 6, 4)
    s = create_schedule(C)
    i, j, k = s.get_loops(C)
    io, ii = s.split(i, nparts=3)
    f = s.fuse(ii, j)
    fo, fi = s.split(f, factor=5)
    s.bind(io, "vthread")
    s.pragma(fo, "auto_unroll_max_step", 16)
    loops = {lp.loop_var: lp for lp in collect(s.func.body, lambda n: isinstance(n, For))}
    assert loops[io].kind == ForKind.VIRTUAL_THREAD
    assert ("auto_unroll_max_step", 16) in loops[fo].annotations
    assert s.trace[0] == "split(i, factor=None, nparts=3)"
    _check(s, lambda a, b: a @ b)


def test_stage_view_and_mod():
    A, B, C = matmul(4, 4, 4)
    s = create_schedule(C)
    i, j, k = C.op.axis[0], C.op.axis[1], C.op.reduce_axis[0]
    jo, ji = s[C].split(j, factor=2)
    s[C].reorder(i, jo, k, ji)
    s[C].vectorize(ji)
    assert s.mod is s.func and "vectorized" in str(s.mod)
    _check(s, lambda a, b: a @ b)
