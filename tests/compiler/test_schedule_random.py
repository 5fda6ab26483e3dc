"""Random schedules keep matmul and conv2d equal to NumPy, before and after lowering."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from vdla.compiler import te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir.ir import ForKind
from vdla.compiler.tir.pipeline import lower

from te_testutil import conv2d, conv2d_ref, matmul, numpy_check

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _spatial_loops(s, block) -> list:
    from vdla.compiler.schedule.tree import find_block, loops_of
    r, path = find_block(s.func.body, s.block_name(block))
    from vdla.compiler.tir.functor import uses_var
    out = []
    for lp in loops_of(path):
        kinds = {iv.kind.value for iv, v in zip(r.block.iter_vars, r.iter_values)
                 if uses_var(v, {lp.loop_var})}
        if kinds == {"spatial"}:
            out.append(lp.loop_var)
    return out


@st.composite
def matmul_schedule(draw):
    n, m, k = draw(st.sampled_from([(8, 8, 8), (6, 10, 7), (12, 8, 5)]))
    A, B, C = matmul(n, m, k)
    AA = te.compute((n, k), lambda i, j: A[i, j] * 2.0, name="AA")
    r = te.reduce_axis(k, "r2")
    D = te.compute((n, m), lambda i, j: te.sum(AA[i, r] * B[r, j], axis=r), name="D")
    s = create_schedule(D, args=[A, B, D])
    loops = []
    for v in s.get_loops(D):
        f = draw(st.integers(1, 5))
        loops.extend(s.split(v, factor=f))
    order = draw(st.permutations(loops))
    s.reorder(*order)
    if draw(st.booleans()):
        a, b = s.get_loops(D)[:2]
        s.fuse(a, b)
    if draw(st.booleans()):
        s.compute_at(AA, draw(st.sampled_from(s.get_loops(D))))
    elif draw(st.booleans()):
        s.compute_inline(AA)
    spatial = _spatial_loops(s, D)
    inner = s.get_loops(D)[-1]
    if inner in spatial and draw(st.booleans()):
        s.vectorize(inner)
    if draw(st.booleans()):
        s.unroll(draw(st.sampled_from(s.get_loops(D))))
    outer = s.get_loops(D)[0]
    if outer in spatial and draw(st.booleans()):
        s.parallel(outer)
    return s, (lambda a, b: (2 * a.astype(np.float64)) @ b)


@SETTINGS
@given(matmul_schedule())
def test_random_matmul_schedule(case):
    s, ref = case
    note(f"schedule: {s.trace}")
    numpy_check(s.func, ref, 2)
    numpy_check(lower(s.func), ref, 2)


@st.composite
def conv_schedule(draw):
    X, W, P, Y = conv2d(c=2, h=5, w=6, f=3, kh=3, pad=1)
    s = create_schedule(Y, args=[X, W, Y])
    o, y, x, rc, ry, rx = s.get_loops(Y)
    yo, yi = s.split(y, factor=draw(st.integers(1, 4)))
    xo, xi = s.split(x, factor=draw(st.integers(1, 4)))
    rest = draw(st.permutations([yi, rc, ry, rx]))
    s.reorder(o, yo, xo, *rest, xi)
    choice = draw(st.sampled_from(["root", "inline", "at"]))
    if choice == "inline":
        s.compute_inline(P)
    elif choice == "at":
        s.compute_at(P, draw(st.sampled_from([o, yo, xo])))
    if draw(st.booleans()):
        s.vectorize(xi)
    if draw(st.booleans()):
        s.unroll(draw(st.sampled_from([ry, rx])))
    if draw(st.booleans()):
        s.parallel(o)
    return s


@SETTINGS
@given(conv_schedule())
def test_random_conv_schedule(s):
    note(f"schedule: {s.trace}")
    ref = lambda x, w: conv2d_ref(x, w, 1)  # noqa: E731
    numpy_check(s.func, ref, 2)
    low = lower(s.func)
    numpy_check(low, ref, 2)
    kinds = {lp.kind for lp in __import__("vdla.compiler.tir.functor", fromlist=["collect"]).collect(
        low.body, lambda n: n.__class__.__name__ == "For")}
    assert kinds <= {ForKind.SERIAL, ForKind.PARALLEL}
