"""The conv micro-kernel's default register tile, the fused epilogue and max pooling without a padded copy.

Each test checks a property of the generated program (what fits the register file, which buffers
exist and how big they are) and, where code runs, the results against NumPy, for every ISA of the
``cpu_target`` matrix.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.codegen.llvm import current_target, parse_target
from vdla.compiler.graph import GraphBuilder, run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.lower_llvm import build_kernel
from vdla.compiler.graph.passes import optimize_for_cpu
from vdla.compiler.tir.functor import collect
from vdla.compiler.tir.pipeline import lower
from vdla.compiler.tir.stmt import Allocate


@pytest.mark.parametrize("accumulators", [28, 12])
def test_default_tile_fits_the_register_file(accumulators: int) -> None:
    registers = accumulators + 4
    for width in range(1, 120):
        for oc_outer in (1, 2, 3, 4, 8, 32):
            for vectors in (1, 2):
                ob, ow = topi.default_conv2d_nchwc_tile(width, oc_outer, vectors, accumulators)
                assert width % ow == 0 and oc_outer % ob == 0
                assert ob * ow * vectors <= accumulators or (ob, ow) == (1, 1)
                # accumulators, the tile's weight vectors and one broadcast input
                assert ob * ow * vectors + ob * vectors + 1 <= registers or (ob, ow) == (1, 1)
    assert topi.default_conv2d_nchwc_tile(56, 4, 1, 28) == (2, 14)  # ResNet's 56/28/14-wide rows on AVX-512
    assert topi.default_conv2d_nchwc_tile(7, 32, 1, 28) == (2, 7)


def _assert_matches_the_graph(graph: object, feed: dict[str, np.ndarray], cpu_target: str) -> None:
    """The model compiled for ``cpu_target``, on one thread, against the graph interpreter."""
    compiled = build_model(graph, target="llvm", cpu_target=cpu_target)
    compiled.module.set_num_threads(1)
    want = run_graph(graph, feed)[0]
    np.testing.assert_allclose(compiled.run(feed)[0], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _conv_block(seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 14, 14), "float32")
    h = b.op("conv2d", [x, b.const((rng.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32)),
                        b.const(rng.standard_normal(32).astype(np.float32))], "c1", padding=(1, 1, 1, 1))
    h = b.op("relu", [b.op("add", [h, b.const(rng.standard_normal((32, 1, 1)).astype(np.float32))])], "r1")
    p = b.op("max_pool2d", [h], "pool", pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    y = b.op("conv2d", [p, b.const((rng.standard_normal((32, 32, 1, 1)) * 0.2).astype(np.float32))], "c2")
    return b.build([y]), {"x": rng.standard_normal((1, 16, 14, 14)).astype(np.float32)}


def test_fused_epilogue_keeps_one_register_tile_of_conv_output(cpu_target: str) -> None:
    graph, feed = _conv_block()
    g = optimize_for_cpu(graph)
    lanes = current_target().vector_lanes()
    node = next(n for n in g.nodes if n.op == "fused" and [m.op for m in n.attrs["body"].nodes].count("relu"))
    func = build_kernel(node, g, "k").func
    allocs = {a.buffer.name: int(a.buffer.size().value) for a in collect(func.body, lambda n: isinstance(n, Allocate))}
    conv_bufs = [size for name, size in allocs.items() if name.endswith("_nchwc")]
    # conv + bias + add + relu: the conv output exists only as one register tile of vectors or, when
    # the weights outweigh the data (AVX2's 8-channel blocks here), one channel group's partial-sum plane
    assert len(conv_bufs) == 1
    assert conv_bufs[0] <= max(topi.max_accumulators() * lanes, 14 * 14 * lanes) < 32 * 14 * 14
    _assert_matches_the_graph(graph, feed, cpu_target)


def test_blocked_max_pool_reads_its_input_without_a_padded_copy(cpu_target: str) -> None:
    lanes = current_target().vector_lanes()
    x = np.random.default_rng(1).standard_normal((1, 2, 9, 9, lanes)).astype(np.float32)
    tx = te.placeholder(x.shape, name="x")
    out = topi.pool2d(tx, 3, 2, 1, "max", "NCHWc")
    lowered = lower(topi.schedule_pool(out), "llvm")
    assert not collect(lowered.body, lambda n: isinstance(n, Allocate))
    from vdla.compiler.build import build

    got = np.zeros([int(d.value) for d in out.shape], np.float32)
    build(topi.schedule_pool(out), [tx, out])(x, got)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    want = np.stack([np.stack([padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for j in range(5)], 2)
                     for i in range(5)], 2)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("stride", [1, 2])
def test_fused_depthwise_keeps_a_register_tile_and_pads_row_by_row(cpu_target: str, stride: int) -> None:
    """A blocked depthwise conv + bias + clip (MobileNet's block) computes its output tile by tile in
    registers and zero-pads only the rows one output row reads: no conv-sized or image-sized buffer."""
    rng = np.random.default_rng(stride)
    c, size = 32, 15
    b = GraphBuilder()
    x = b.input("x", (1, 16, size, size), "float32")
    h = b.op("conv2d", [x, b.const((rng.standard_normal((c, 16, 1, 1)) * 0.3).astype(np.float32))], "expand")
    h = b.op("conv2d", [h, b.const((rng.standard_normal((c, 1, 3, 3)) * 0.3).astype(np.float32)),
                        b.const(rng.standard_normal(c).astype(np.float32))], "dw",
             padding=(1, 1, 1, 1), strides=(stride, stride), groups=c)
    h = b.op("clip", [h], "clip", a_min=0.0, a_max=6.0)
    y = b.op("conv2d", [h, b.const((rng.standard_normal((16, c, 1, 1)) * 0.3).astype(np.float32))], "project")
    graph = b.build([y])
    g = optimize_for_cpu(graph)
    lanes = current_target().vector_lanes()
    node = next(n for n in g.nodes if n.op == "fused" and "clip" in [m.op for m in n.attrs["body"].nodes])
    func = build_kernel(node, g, "k").func
    allocs = {a.buffer.name: int(a.buffer.size().value) for a in collect(func.body, lambda n: isinstance(n, Allocate))}
    conv = [s for name, s in allocs.items() if name.endswith("_dwc")]
    pad = [s for name, s in allocs.items() if name.endswith("_dwc_pad")]
    assert len(conv) == 1 and conv[0] <= topi.vector_registers(None) * lanes
    assert len(pad) == 1 and pad[0] == 3 * (size + 2) * lanes  # KH padded rows of one channel block
    feed = {"x": rng.standard_normal((1, 16, size, size)).astype(np.float32)}
    _assert_matches_the_graph(graph, feed, cpu_target)


def test_stem_conv_packs_its_nchw_input_inside_the_padding_pass(cpu_target: str) -> None:
    """The first conv of a model (3 NCHW input channels) blocks and zero-pads its input in one pass:
    the padded buffer is its only copy of the input."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 20, 20), "float32")
    y = b.op("relu", [b.op("conv2d", [x, b.const((rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32)),
                                      b.const(rng.standard_normal(16).astype(np.float32))], "stem",
                           padding=(1, 1, 1, 1), strides=(2, 2))], "r")
    graph = b.build([y])
    g = optimize_for_cpu(graph)
    node = next(n for n in g.nodes if n.op == "fused")
    func = build_kernel(node, g, "k").func
    names = [a.buffer.name for a in collect(func.body, lambda n: isinstance(n, Allocate))]
    assert [n for n in names if n.endswith(("_pack", "_pad"))] == ["stem_nchwc_pad"], names
    feed = {"x": rng.standard_normal((1, 3, 20, 20)).astype(np.float32)}
    _assert_matches_the_graph(graph, feed, cpu_target)


def test_7x7_stem_reduces_its_taps_outside_the_channels_on_narrow_vectors(cpu_target: str) -> None:
    """ResNet's stem shape (7 x 7, stride 2, 3 NCHW channels, one per input block): on vectors narrower than
    512 bits the default reduces the kernel taps outside the input channels (``kh_kw_ic``); a 3 x 3 conv
    of the same input and a blocked 7 x 7 keep the channel blocks outermost.  The model is right either way."""
    lanes = current_target().vector_lanes()
    stem = topi.conv2d_nchwc(te.placeholder((1, 3, 72, 72, 1), "float32", "d"),
                             te.placeholder((64 // lanes, 3, 7, 7, 1, lanes), "float32", "w"), 2, 3)
    small = topi.conv2d_nchwc(te.placeholder((1, 3, 72, 72, 1), "float32", "d"),
                              te.placeholder((64 // lanes, 3, 3, 3, 1, lanes), "float32", "w"), 2, 1)
    blocked = topi.conv2d_nchwc(te.placeholder((1, 1, 72, 72, 8), "float32", "d"),
                                te.placeholder((64 // lanes, 1, 7, 7, 8, lanes), "float32", "w"), 2, 3)
    want_order = "kh_kw_ic" if lanes < 16 else "ic_kh_kw"
    # (An image bigger than the weights: a smaller one reduces over the plane, which needs ic_kh_kw.)
    assert topi.default_conv2d_nchwc_knobs(stem).reduce_at == "tile"
    assert topi.default_conv2d_nchwc_knobs(stem).reduce_order == want_order
    assert topi.default_conv2d_nchwc_knobs(small).reduce_order == "ic_kh_kw"
    assert topi.default_conv2d_nchwc_knobs(blocked).reduce_order == "ic_kh_kw"
    # ARM (not measured) keeps the channel blocks outermost.
    assert topi.default_conv2d_nchwc_knobs(stem, parse_target("llvm -mtriple=aarch64-linux-gnu")).reduce_order == "ic_kh_kw"
    rng = np.random.default_rng(7)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 72, 70), "float32")
    y = b.op("relu", [b.op("conv2d", [x, b.const((rng.standard_normal((64, 3, 7, 7)) * 0.1).astype(np.float32)),
                                      b.const(rng.standard_normal(64).astype(np.float32))], "stem",
                           padding=(3, 3, 3, 3), strides=(2, 2))], "r")
    graph = b.build([y])
    feed = {"x": rng.standard_normal((1, 3, 72, 70)).astype(np.float32)}
    _assert_matches_the_graph(graph, feed, cpu_target)
