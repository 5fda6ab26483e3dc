"""The requantizing int8 operators qadd / qavg_pool2d: their references are the quantizer's arithmetic,
their CPU lowerings match them, and the partitioner places them (or says why not)."""

from __future__ import annotations

import numpy as np
import pytest
from vdla_hw.config import load_config

from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.executor import run_graph
from vdla.compiler.graph.passes import fuse_ops, partition
from vdla.compiler.graph.passes.alter_layout import alter_layout
from vdla.compiler.graph.passes.quantize import requant_multipliers


def _rand8(shape: tuple[int, ...], seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1)[:4] = (-128, 127, -128, 127)
    return x


def _chain(mult: tuple[int, int] | None, align: tuple[int, int], rnd: int, shift: int, relu: bool):  # type: ignore[no-untyped-def]
    """The residual add as the quantizer used to spell it, op by op (cast, multiply / right_shift, add,
    add, relu, right_shift, clip, cast)."""
    b = GraphBuilder()
    a, c = b.input("a", (1, 32, 5, 7), "int8"), b.input("c", (1, 32, 5, 7), "int8")
    terms = []
    for k, v in enumerate((a, c)):
        w = b.op("cast", [v], dtype="int32")
        if mult is not None:
            w = b.op("multiply", [w, b.const(np.int32(mult[k]))])
        elif align[k]:
            w = b.op("right_shift", [w], shift=align[k])
        terms.append(w)
    acc = b.op("add", terms)
    if rnd:
        acc = b.op("add", [acc, b.const(np.int32(rnd))])
    if relu:
        acc = b.op("relu", [acc])
    if shift:
        acc = b.op("right_shift", [acc], shift=shift)
    chain = b.build([b.op("cast", [b.op("clip", [acc], a_min=-128, a_max=127)], dtype="int8")])
    q = GraphBuilder()
    qa, qc = q.input("a", (1, 32, 5, 7), "int8"), q.input("c", (1, 32, 5, 7), "int8")
    single = q.build([q.op("qadd", [qa, qc], mult=mult, align=align, round=rnd, shift=shift, relu=relu)])
    return chain, single


CASES = [((1 << 20, 3 << 19), (0, 0), 1 << 20, 21, True), ((900_001, -1_234_567), (0, 0), 1 << 22, 23, False),
         ((1 << 24, 1 << 24), (0, 0), 0, 24, False), (None, (0, -3), 2, 2, False), (None, (2, 0), 0, 0, True)]


@pytest.mark.parametrize("case", CASES)
def test_qadd_reference_is_the_quantizer_chain(case) -> None:  # type: ignore[no-untyped-def]
    chain, single = _chain(*case)
    feed = {"a": _rand8((1, 32, 5, 7), 0), "c": _rand8((1, 32, 5, 7), 1)}
    np.testing.assert_array_equal(run_graph(single, feed)[0], run_graph(chain, feed)[0])


@pytest.mark.parametrize("case", CASES[:2] + CASES[3:4])
def test_qadd_llvm_lowering_matches_the_reference(case) -> None:  # type: ignore[no-untyped-def]
    _, single = _chain(*case)
    feed = {"a": _rand8((1, 32, 5, 7), 2), "c": _rand8((1, 32, 5, 7), 3)}
    got = build_model(single, target="llvm").run(feed)[0]
    np.testing.assert_array_equal(got, run_graph(single, feed)[0])


def _pool_graph(shape: tuple[int, ...], k: int, stride: int, pad: int):  # type: ignore[no-untyped-def]
    m, shift, r = requant_multipliers(np.array([1.0 / (k * k)]), np.array([128.0 * k * k]))
    b = GraphBuilder()
    x = b.input("x", shape, "int8")
    return b.build([b.op("qavg_pool2d", [x], pool_size=(k, k), strides=(stride, stride), padding=(pad,) * 4,
                         mult=int(m[0]), round=int(r[0]), shift=shift)])


@pytest.mark.parametrize("geometry", [(7, 1, 0), (3, 2, 1)])
def test_qavg_pool_llvm_lowering_matches_the_reference(geometry) -> None:  # type: ignore[no-untyped-def]
    g = _pool_graph((1, 16, 7, 7), *geometry)
    feed = {"x": _rand8((1, 16, 7, 7), 4)}
    want = run_graph(g, feed)[0]
    np.testing.assert_array_equal(build_model(g, target="llvm").run(feed)[0], want)
    # the fixed-point divide against the exact mean, rounded half up: within one step
    k = geometry[0]
    if k == 7:
        exact = feed["x"].astype(np.float64).mean(axis=(2, 3), keepdims=True)
        assert np.max(np.abs(want - np.floor(exact + 0.5))) <= 1


def _placed(g):  # type: ignore[no-untyped-def]
    cfg = load_config("default")
    return {n.attrs["body"].nodes[-1].op: n for n in partition(fuse_ops(alter_layout(g, cfg)), cfg).nodes
            if n.op == "fused"}


def test_partition_places_a_packed_qadd_and_says_why_not_otherwise() -> None:
    # 32 channels of int8 that a VDLA conv produces (packed): the add goes to the VDLA
    b = GraphBuilder()
    x = b.input("x", (1, 32, 6, 6), "int8")
    w = b.const(np.ones((32, 32, 1, 1), np.int8))
    conv = b.op("cast", [b.op("clip", [b.op("conv2d", [x, w], out_dtype="int32")], a_min=-128, a_max=127)],
                dtype="int8")
    g = b.build([b.op("qadd", [conv, x], mult=(3, 5), round=4, shift=3)])
    placed = _placed(g)
    assert placed["qadd"].attrs["target"] == "vdla"
    # 24 channels do not tile into the 16-wide block: the add stays on the host with the reason
    b = GraphBuilder()
    x = b.input("x", (1, 24, 6, 6), "int8")
    g = b.build([b.op("qadd", [x, x], mult=(3, 5), round=4, shift=3)])
    n = _placed(g)["qadd"]
    assert n.attrs["target"] == "llvm" and "packed layout" in n.attrs["reason"]
