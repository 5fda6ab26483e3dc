"""decompose_reduction, compact_buffers (the compact_buffer pass) and tensorize of a
decomposed update on a higher-rank (packed) buffer: checked against NumPy after each step."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te
from vdla.compiler.schedule import TensorIntrin, create_schedule
from vdla.compiler.schedule.reduction import ReductionError
from vdla.compiler.tir import call_packed, register_packed
from vdla.compiler.tir.functor import collect
from vdla.compiler.tir.ir import Allocate, Block, For
from vdla.compiler.tir.pipeline import lower
from vdla.compiler.tir.transform import compact_buffer

from te_testutil import assert_same_results, execute, matmul, random_args

T = 4


def _tiled_cached_matmul():  # type: ignore[no-untyped-def]
    A, B, C = matmul(8, 8, 12)
    s = create_schedule(C)
    cache = s.cache_read(A, "local")
    i, j, k = s.get_loops(C)
    io, jo, ii, ji = s.tile(i, j, T, T)
    ko, ki = s.split(k, factor=T)
    s.reorder(io, jo, ko, ii, ji, ki)
    s.compute_at(cache, ko)
    return s, C, ko


def test_decompose_reduction_places_the_init_before_the_loop() -> None:
    s, C, ko = _tiled_cached_matmul()
    before = s.func
    init = s.decompose_reduction(C, ko)
    blocks = {b.name: b for b in collect(s.func.body, lambda n: isinstance(n, Block))}
    assert blocks[init].init is None and blocks["C"].init is None and s.get_blocks().index(init) < s.get_blocks().index("C")
    assert_same_results(before, s.func)
    assert_same_results(before, lower(s.func))


def test_decompose_reduction_inside_a_reduction_loop_is_refused() -> None:
    s, C, ko = _tiled_cached_matmul()
    ki = s.get_loops(C)[-1]
    with pytest.raises(ReductionError, match="inside reduction loop"):
        s.decompose_reduction(C, ki)


def test_compact_buffers_shrinks_a_cache_to_its_tile_and_moves_it_into_the_loop() -> None:
    s, _, ko = _tiled_cached_matmul()
    before = s.func
    s.compact_buffers()
    allocs = collect(s.func.body, lambda n: isinstance(n, Allocate))
    assert [tuple(int(d.value) for d in a.buffer.shape) for a in allocs] == [(T, T)]  # type: ignore[attr-defined]
    owner = next(n for n in collect(s.func.body, lambda n: isinstance(n, For)) if n.loop_var is ko)
    assert isinstance(owner.body, Allocate)  # one allocation per iteration of the chunk loop
    assert_same_results(before, s.func)
    assert_same_results(before, lower(s.func))


def test_compact_buffer_is_idempotent() -> None:
    s, _, _ = _tiled_cached_matmul()
    s.compact_buffers()
    assert str(compact_buffer(s.func)) == str(s.func)


@register_packed("test.tile_gemm.update", override=True)
def _update(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    c += a @ b


@register_packed("test.tile_gemm.reset", override=True)
def _reset(c: np.ndarray) -> None:
    c[...] = 0


def _desc():  # type: ignore[no-untyped-def]
    a = te.placeholder((T, T), "int32", "a")
    b = te.placeholder((T, T), "int32", "b")
    k = te.reduce_axis(T, "k")
    return te.compute((T, T), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")


UPDATE = TensorIntrin("tile_gemm", _desc(), lambda ins, outs: call_packed("test.tile_gemm.update", *ins, *outs),
                      lambda outs: call_packed("test.tile_gemm.reset", *outs))
RESET = TensorIntrin("tile_reset", te.compute((T, T), lambda i, j: te.const(0, "int32"), name="z"),
                     lambda ins, outs: call_packed("test.tile_gemm.reset", *outs))


def test_tensorize_decomposed_update_on_packed_buffers() -> None:
    # Packed (blocks, blocks, T, T) operands: the intrinsic matches the trailing two dimensions.
    A = te.placeholder((2, 3, T, T), "int32", "A")
    B = te.placeholder((3, 2, T, T), "int32", "B")
    ko, ki = te.reduce_axis(3, "ko"), te.reduce_axis(T, "ki")
    C = te.compute((2, 2, T, T), lambda io, jo, i, j: te.sum(A[io, ko, i, ki] * B[ko, jo, ki, j], axis=[ko, ki]),
                   name="C")
    s = create_schedule(C)
    io, jo, i, j, rko, rki = s.get_loops(C)
    s.reorder(io, jo, rko, i, j, rki)
    before = s.func
    init = s.decompose_reduction(C, rko)
    s.tensorize(i, UPDATE)
    s.tensorize(s.get_loops(init)[-2], RESET)
    assert "test.tile_gemm.update" in str(s.func) and "test.tile_gemm.reset" in str(s.func)
    args = random_args(before, np.random.default_rng(0))
    want, got = execute(before, args)[-1], execute(s.func, args)[-1]
    np.testing.assert_array_equal(got, want)
    a, b = args[0].transpose(0, 2, 1, 3).reshape(8, 12), args[1].transpose(0, 2, 1, 3).reshape(12, 8)
    np.testing.assert_array_equal(got.transpose(0, 2, 1, 3).reshape(8, 8), a @ b)
