"""A parallel loop with little known work is emitted serially (no pool region to wake a thread for);
one with enough work, or work not known at compile time, stays a parallel region."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.codegen.llvm import codegen, host_target, jit
from vdla.compiler.codegen.llvm.parallel import MIN_PARALLEL_WORK, region_work, runs_serially
from vdla.compiler.codegen.llvm.pool import POOL_SYMBOL
from vdla.compiler.tir.ir import (BufferStore, For, ForKind, IfThenElse, IntImm, PrimFunc, Var,
                                  decl_buffer, seq)


def _rows_kernel(rows: int, cols: int) -> PrimFunc:
    """``out[i, j] = a[i, j] * 2 + i`` with the row loop parallel: rows x cols stores."""
    a = decl_buffer((rows, cols), "float32", "a")
    out = decl_buffer((rows, cols), "float32", "out")
    i, j = Var("i"), Var("j")
    inner = For(j, IntImm(0), IntImm(cols), ForKind.SERIAL,
                BufferStore(out, a[i, j] * 2.0 + i.astype("float32"), (i, j)))
    return PrimFunc(f"rows_{rows}x{cols}", (a, out), For(i, IntImm(0), IntImm(rows), ForKind.PARALLEL, inner))


def test_region_work_counts_stores_per_iteration() -> None:
    a = decl_buffer((8, 8), "float32", "a")
    i, j, n = Var("i"), Var("j"), Var("n")
    two = seq(BufferStore(a, a[i, j] + 1.0, (i, j)), BufferStore(a, a[i, j] * 2.0, (i, j)))
    nest = For(i, IntImm(0), IntImm(8), ForKind.PARALLEL, For(j, IntImm(0), IntImm(5), ForKind.SERIAL, two))
    assert region_work(nest) == 8 * 5 * 2
    branch = For(i, IntImm(0), IntImm(8), ForKind.PARALLEL,
                 IfThenElse(i < 4, BufferStore(a, a[i, 0] + 1.0, (i, 0)), BufferStore(a, a[i, 1] + 1.0, (i, 1))))
    assert region_work(branch) == 8 * 2  # both branches counted
    symbolic = For(i, IntImm(0), IntImm(8), ForKind.PARALLEL,
                   For(j, IntImm(0), n, ForKind.SERIAL, BufferStore(a, a[i, 0] + 1.0, (i, 0))))
    assert region_work(symbolic) is None
    assert not runs_serially(symbolic)  # unknown work: stays parallel


@pytest.mark.parametrize("rows, cols, serial", [(16, 64, True), (MIN_PARALLEL_WORK // 256, 256, False)])
def test_small_regions_run_serially_with_the_same_result(rows: int, cols: int, serial: bool) -> None:
    f = _rows_kernel(rows, cols)
    assert runs_serially(f.body) == serial
    module = codegen([f], host_target())
    assert (f'call void @"{POOL_SYMBOL}"(' in module.ir_text) != serial
    mod = jit(module)
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    want = x * np.float32(2) + np.arange(rows, dtype=np.float32)[:, None]
    for threads in (1, 2):
        mod.set_num_threads(threads)
        res = np.zeros_like(x)
        mod(x, res)
        np.testing.assert_array_equal(res, want)
