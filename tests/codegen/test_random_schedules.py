"""Random legal schedules of matmul, a producer/consumer pair and conv2d compile to code
that computes what the reference interpreter computes on the same program."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vdla.compiler import te, topi
from vdla.compiler.build import build
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import run
from vdla.compiler.tir.pipeline import lower

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def check_against_interpreter(s: Schedule, args: list[te.Tensor], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal([d.value for d in t.shape]).astype(np.float32) for t in args]
    native = [a.copy() for a in arrays]
    build(s, args)(*native)
    lowered = lower(s)
    ref = [a.copy() for a in arrays]
    by_buffer = {id(p): i for i, p in enumerate(lowered.params)}
    order = [by_buffer[id(t.buffer)] for t in args]
    ordered = [None] * len(ref)
    for arr, pos in zip(ref, order):
        ordered[pos] = arr
    run(lowered, *ordered)
    np.testing.assert_allclose(native[-1], ref[-1], rtol=1e-5, atol=1e-5)


@SETTINGS
@given(st.data())
def test_random_matmul_schedules(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 20), "n")
    m = data.draw(st.integers(1, 40), "m")
    k = data.draw(st.integers(1, 20), "k")
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    r = te.reduce_axis(k, "r")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    s = create_schedule(c)
    i, j, rr = s.get_loops(c)
    io, ii = s.split(i, factor=data.draw(st.integers(1, 6), "fi"))
    jo, ji = s.split(j, factor=data.draw(st.sampled_from([1, 4, 8, 16]), "fj"))
    order = data.draw(st.permutations([io, jo, rr, ii]), "order")
    s.reorder(*order, ji)
    if data.draw(st.booleans(), "vectorize"):
        s.vectorize(ji)
    if data.draw(st.booleans(), "unroll"):
        s.unroll(ii)
    outer = order[0]
    if order[0] is not rr and order[1] is not rr and data.draw(st.booleans(), "fuse"):
        outer = s.fuse(order[0], order[1])
    if outer is not rr and data.draw(st.booleans(), "parallel"):
        s.parallel(outer)
    check_against_interpreter(s, [a, b, c])


@SETTINGS
@given(st.data())
def test_random_compute_at_schedules(data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, 12), "rows")
    cols = data.draw(st.integers(1, 40), "cols")
    x = te.placeholder((rows, cols), name="x")
    y = te.compute((rows, cols), lambda i, j: te.exp(x[i, j] * 0.5), name="y")
    z = te.compute((rows, cols), lambda i, j: y[i, j] + x[i, j], name="z")
    s = create_schedule(z)
    i, j = s.get_loops(z)
    jo, ji = s.split(j, factor=data.draw(st.sampled_from([2, 8, 16]), "f"))
    at = data.draw(st.sampled_from(["i", "jo", "root", "inline"]), "at")
    if at == "inline":
        s.compute_inline(y)
    elif at != "root":
        s.compute_at(y, i if at == "i" else jo)
    if data.draw(st.booleans(), "vectorize"):
        s.vectorize(ji)
    if data.draw(st.booleans(), "parallel"):
        s.parallel(i)
    check_against_interpreter(s, [x, z])


@SETTINGS
@given(st.data())
def test_random_conv2d_nchwc_knobs(data: st.DataObject) -> None:
    icb = data.draw(st.sampled_from([1, 4]), "icb")
    ocb = data.draw(st.sampled_from([4, 16]), "ocb")
    size = data.draw(st.integers(3, 9), "size")
    k = data.draw(st.sampled_from([1, 3]), "k")
    stride = data.draw(st.sampled_from([1, 2]), "stride")
    pad = data.draw(st.integers(0, k // 2), "pad")
    x = te.placeholder((1, 2, size, size, icb), name="x")
    w = te.placeholder((1, 2, k, k, icb, ocb), name="w")
    out = topi.conv2d_nchwc(x, w, stride, pad)
    ow = out.shape[3].value
    knobs = topi.Conv2dNCHWcKnobs(
        ow_block=data.draw(st.sampled_from([d for d in range(1, ow + 1) if ow % d == 0]), "owb"),
        unroll_kw=data.draw(st.booleans(), "unroll_kw"),
        reduce_order=data.draw(st.sampled_from(["ic_kh_kw", "kh_kw_ic"]), "reduce_order"),
        outer_order=data.draw(st.sampled_from(["oc_y", "y_oc"]), "outer_order"),
        parallel=data.draw(st.booleans(), "parallel"))
    check_against_interpreter(topi.schedule_conv2d_nchwc(out, knobs), [x, w, out])
