"""The llvm lowerings of the channel-blocked graph (cpu_layout) and the sharing of identical kernels."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import Graph, GraphBuilder, run_graph
from vdla.compiler.graph.build import build_model, kernel_key
from vdla.compiler.graph.passes import optimize_for_cpu

RNG_SEED = 0


def _rand(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _blocked_net(pool: str, count_include_pad: bool) -> Graph:
    """3-channel stride-2 first conv, a blocked asymmetric-padding conv, pooling, a constant add, two outputs."""
    rng = np.random.default_rng(RNG_SEED)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 13, 13), "float32")
    y = b.op("conv2d", [x, b.const(_rand(rng, (16, 3, 3, 3))), b.const(_rand(rng, (16,)))], "conv1",
             strides=(2, 2), padding=(1, 1, 1, 1))
    y = b.op("relu", [y], "relu1")
    z = b.op("conv2d", [y, b.const(_rand(rng, (32, 16, 2, 2)))], "conv2", padding=(0, 1, 1, 0))
    z = b.op("add", [z, b.const(_rand(rng, (32, 1, 1)))], "shift")
    attrs = {"count_include_pad": count_include_pad} if pool == "avg_pool2d" else {}
    p = b.op(pool, [z], "pool", pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), **attrs)
    g = b.op("global_avg_pool2d", [b.op("sigmoid", [p])], "gap")
    return b.build([b.op("reshape", [g], "flat", newshape=(1, 32)), z])


@pytest.mark.parametrize(("pool", "count_include_pad"), [("max_pool2d", False), ("avg_pool2d", False),
                                                         ("avg_pool2d", True)])
def test_blocked_convs_pools_and_elementwise_match_the_reference(pool: str, count_include_pad: bool,
                                                                  cpu_target: str) -> None:
    graph = _blocked_net(pool, count_include_pad)
    compiled = build_model(graph, target="llvm", cpu_target=cpu_target)
    compiled.module.set_num_threads(1)
    transforms = [n for n in compiled.graph.nodes if n.op == "fused"
                  for m in n.attrs["body"].nodes if m.op == "layout_transform"]
    assert len(transforms) == 2  # only where the plain layout is needed: the flatten and the output z
    feed = {"x": _rand(np.random.default_rng(1), (1, 3, 13, 13), 1.0)}
    for got, want in zip(compiled.run(feed), run_graph(graph, feed)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _residual_blocks(blocks: int) -> Graph:
    rng = np.random.default_rng(RNG_SEED)
    b = GraphBuilder()
    y = b.input("x", (1, 16, 8, 8), "float32")
    for k in range(blocks):
        h = b.op("conv2d", [y, b.const(_rand(rng, (16, 16, 3, 3))), b.const(_rand(rng, (16,)))], f"c{k}a",
                 padding=(1, 1, 1, 1))
        h = b.op("conv2d", [b.op("relu", [h]), b.const(_rand(rng, (16, 16, 3, 3))), b.const(_rand(rng, (16,)))],
                 f"c{k}b", padding=(1, 1, 1, 1))
        y = b.op("relu", [b.op("add", [h, y])], f"out{k}")
    return b.build([y])


def test_identical_kernels_share_one_function_with_their_own_weights() -> None:
    graph = _residual_blocks(3)
    compiled = build_model(graph, target="llvm")
    compiled.module.set_num_threads(1)
    nodes = compiled.module.graph["nodes"]
    functions = {n["function"] for n in nodes}
    # Blocking x (read by two kernels), 3 x (conv+bias+relu, conv+bias+add+relu); the last kernel also
    # unblocks the output, so its code differs.
    assert len(nodes) == 7 and len(functions) == 4
    assert len(compiled.llvm_module.functions) == len(functions)
    feed = {"x": _rand(np.random.default_rng(2), (1, 16, 8, 8), 1.0)}
    want = run_graph(graph, feed)[0]
    np.testing.assert_allclose(compiled.run(feed)[0], want, rtol=1e-4, atol=1e-5 * float(np.abs(want).max()))


def test_kernel_key_ignores_names_and_weight_values_but_not_shapes() -> None:
    g = optimize_for_cpu(_residual_blocks(3))
    keys = [kernel_key(n, g) for n in g.nodes if n.op == "fused"]
    # keys[0] blocks x; then (conv+relu, conv+add+relu) per block, the last one also unblocking the output.
    assert keys[1] == keys[3] == keys[5] and keys[2] == keys[4]
    assert len(set(keys)) == 4
