"""Each invalid schedule raises its specific error with a message naming cause and fix."""
from __future__ import annotations

import pytest

from vdla.compiler import te
from vdla.compiler.schedule import (AxisNotInStageError, BlockNotFoundError, CacheError,
                               ComputeAtError, InlineError, InvalidFactorError, LoopKindError,
                               LoopNestError, LoopNotFoundError, StorageError, create_schedule)

from te_testutil import matmul


def two_stage():
    A, B, C = matmul(8, 8, 8)
    D = te.compute((8, 8), lambda i, j: C[i, j] + 1.0, name="D")
    E = te.compute((8, 8), lambda i, j: D[i, j] * 2.0, name="E")
    return A, B, C, D, E, create_schedule(E)


def test_axis_not_in_stage():
    *_, C, D, E, s = two_stage()
    with pytest.raises(AxisNotInStageError, match="does not belong to stage 'D'"):
        s[D].split(s.get_loops(E)[0], factor=2)


def test_loop_not_found_after_split():
    *_, E, s = two_stage()
    i = s.get_loops(E)[0]
    s.split(i, factor=4)
    with pytest.raises(LoopNotFoundError, match="split/fuse"):
        s.split(i, factor=2)


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_split_factor_must_be_positive(bad):
    *_, E, s = two_stage()
    with pytest.raises(InvalidFactorError, match="positive integer"):
        s.split(s.get_loops(E)[0], factor=bad)


def test_fuse_and_reorder_need_one_nest():
    *_, C, D, E, s = two_stage()
    i, j, k = s.get_loops(C)
    with pytest.raises(LoopNestError, match="consecutive"):
        s.fuse(i, k)
    with pytest.raises(LoopNestError, match="not nested"):
        s.reorder(i, s.get_loops(E)[0])


def test_vectorize_or_parallel_reduction_axis():
    *_, C, D, E, s = two_stage()
    k = s.get_loops(C)[2]
    with pytest.raises(LoopKindError, match="reduce axis"):
        s.vectorize(k)
    with pytest.raises(LoopKindError, match="reduce axis"):
        s.parallel(k)


def test_compute_at_cannot_cover_consumer():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = create_schedule(D)
    with pytest.raises(ComputeAtError, match="cannot cover the region consumer 'D'"):
        s.compute_at(B, s.get_loops(C)[0])


def test_compute_at_own_loop_and_outputs():
    *_, C, D, E, s = two_stage()
    with pytest.raises(ComputeAtError, match="own loop nest"):
        s.compute_at(D, s.get_loops(D)[0])
    with pytest.raises(ComputeAtError, match="function output"):
        s.compute_at(E, s.get_loops(D)[0])


def test_inline_reduction_or_output():
    *_, C, D, E, s = two_stage()
    with pytest.raises(InlineError, match="reduction"):
        s.compute_inline(C)
    with pytest.raises(InlineError, match="output"):
        s.compute_inline(E)


def test_unknown_block_and_cache_errors():
    A, B, C, D, E, s = two_stage()
    with pytest.raises(BlockNotFoundError):
        s.compute_inline(A)
    with pytest.raises(CacheError, match="does not read"):
        s.cache_read(A, "local", readers=[E])
    with pytest.raises(StorageError, match="not an intermediate"):
        s.storage_align(E, 0, 4, 1)
