"""The CPU layout pass: blocked activations between convs, transforms only at the borders, same results."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder, GraphError, run_graph
from vdla.compiler.graph.passes import cpu_layout, fold_batch_norm, fold_constant, optimize_for_cpu
from helpers import conv_net, rand


def _layouts(graph, op: str, attr: str) -> list[str]:
    return [n.attrs.get(attr) for n in graph.nodes if n.op == op]


def _transforms(graph) -> list[tuple[str, str]]:
    return [(n.attrs["src_layout"], n.attrs["dst_layout"]) for n in graph.nodes if n.op == "layout_transform"]


def test_blocked_values_flow_between_convs_and_leave_once_before_the_flatten() -> None:
    rng = np.random.default_rng(0)
    graph = fold_constant(fold_batch_norm(conv_net(rng, batch_norm=True)))
    blocked = cpu_layout(graph)
    assert _layouts(blocked, "conv2d", "data_layout") == ["NCHW16c"] * 3
    assert _layouts(blocked, "conv2d", "out_layout") == ["NCHW16c"] * 3
    assert _layouts(blocked, "max_pool2d", "layout") == _layouts(blocked, "global_avg_pool2d", "layout") == ["NCHW16c"]
    # x is blocked once for both convs that read it; the pooled features are unblocked once for the flatten.
    assert sorted(_transforms(blocked)) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    feed = {"x": rand(rng, (1, 16, 8, 8))}
    np.testing.assert_allclose(run_graph(blocked, feed)[0], run_graph(graph, feed)[0], rtol=1e-5, atol=1e-5)


def test_a_few_channel_first_conv_reads_the_plain_input_and_writes_blocked() -> None:
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 9, 9), "float32")
    y = b.op("conv2d", [x, b.const(rand(rng, (16, 3, 3, 3)))], "conv1", strides=(2, 2), padding=(1, 1, 1, 1))
    y = b.op("relu", [b.op("add", [y, b.const(rand(rng, (16, 1, 1)))], "bias")], "relu")
    y = b.op("avg_pool2d", [y], "pool", pool_size=(3, 3), strides=(1, 1), padding=(1, 1, 1, 1))
    graph = b.build([y])
    blocked = cpu_layout(graph)
    (conv,) = [n for n in blocked.nodes if n.op == "conv2d"]
    assert (conv.attrs["data_layout"], conv.attrs["out_layout"]) == ("NCHW", "NCHW16c")
    # The (16, 1, 1) bias was blocked at compile time, not through a transform; the output goes back to NCHW.
    assert _transforms(blocked) == [("NCHW16c", "NCHW")]
    assert blocked.output_types == graph.output_types
    feed = {"x": rand(rng, (1, 3, 9, 9))}
    np.testing.assert_allclose(run_graph(blocked, feed)[0], run_graph(graph, feed)[0], rtol=1e-5, atol=1e-5)


def test_a_grouped_conv_with_whole_blocks_per_group_stays_blocked() -> None:
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "float32")
    y = b.op("conv2d", [x, b.const(rand(rng, (32, 16, 1, 1)))], "expand")
    y = b.op("conv2d", [y, b.const(rand(rng, (32, 16, 3, 3)))], "grouped", groups=2, padding=(1, 1, 1, 1))
    graph = b.build([y])
    blocked = cpu_layout(graph)
    assert _layouts(blocked, "conv2d", "data_layout") == ["NCHW16c"] * 2
    assert _layouts(blocked, "conv2d", "out_layout") == ["NCHW16c"] * 2
    assert sorted(_transforms(blocked)) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    feed = {"x": rand(rng, (1, 16, 6, 6))}
    np.testing.assert_allclose(run_graph(blocked, feed)[0], run_graph(graph, feed)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels, layout, padded", [(32, "NCHW16c", 32), (24, "NCHW8c", 24), (20, "NCHW16c", 32)])
def test_a_depthwise_conv_stays_blocked_when_its_channels_fill_blocks(channels: int, layout: str, padded: int) -> None:
    """32 channels: 16-channel blocks; 24: half blocks (8); 20: neither, zero-padded to 32 channels in
    16-channel blocks (the depthwise conv gets 32 groups), the padding sliced off at the output."""
    rng = np.random.default_rng(4)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "float32")
    y = b.op("conv2d", [x, b.const(rand(rng, (channels, 16, 1, 1)))], "expand")
    y = b.op("conv2d", [y, b.const(rand(rng, (channels, 1, 3, 3)))], "dw", groups=channels, padding=(1, 1, 1, 1))
    graph = b.build([y])
    blocked = cpu_layout(graph, 16)
    layouts = list(zip(_layouts(blocked, "conv2d", "data_layout"), _layouts(blocked, "conv2d", "out_layout")))
    assert layouts == [("NCHW16c", layout), (layout, layout)]
    assert [n.type.shape[1] for n in blocked.nodes if n.op == "conv2d"] == [padded // int(layout[4:-1])] * 2
    assert _layouts(blocked, "conv2d", "groups")[1] == padded
    assert blocked.op_counts().get("strided_slice", 0) == (padded != channels)
    assert blocked.output_types == graph.output_types
    feed = {"x": rand(rng, (1, 16, 6, 6))}
    np.testing.assert_allclose(run_graph(blocked, feed)[0], run_graph(graph, feed)[0], rtol=1e-5, atol=1e-5)


def test_a_conv_whose_channels_fill_no_block_runs_zero_padded_to_whole_blocks() -> None:
    """ShuffleNet's 58 channels: 16 -> 58 -> 58 -> 3x3 58 convs run on 64 channels in 16-channel blocks;
    the second reads the first's zero-padded output as is, the padding leaves once at the output."""
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "float32")
    y = b.op("relu", [b.op("conv2d", [x, b.const(rand(rng, (58, 16, 1, 1)))], "c1")])
    y = b.op("add", [b.op("conv2d", [y, b.const(rand(rng, (58, 58, 1, 1)))], "c2"), b.const(rand(rng, (58, 1, 1)))])
    y = b.op("conv2d", [y, b.const(rand(rng, (58, 58, 3, 3)))], "c3", padding=(1, 1, 1, 1))
    graph = b.build([y])
    blocked = cpu_layout(graph, 16)
    assert _layouts(blocked, "conv2d", "data_layout") == _layouts(blocked, "conv2d", "out_layout") == ["NCHW16c"] * 3
    assert [n.type.shape[1] for n in blocked.nodes if n.op == "conv2d"] == [4] * 3  # 4 blocks of 16: 64 channels
    assert sorted(_transforms(blocked)) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    assert blocked.op_counts().get("pad", 0) == 0 and blocked.op_counts()["strided_slice"] == 1
    assert cpu_layout(graph, 4) == graph  # a block below 8 lanes is no vector block: nothing to pad to
    feed = {"x": rand(rng, (1, 16, 6, 6))}
    want = run_graph(graph, feed)[0]
    np.testing.assert_allclose(run_graph(blocked, feed)[0], want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("case", ["groups", "runtime_weights", "int8"])
def test_convs_the_micro_kernel_cannot_take_are_left_alone(case: str) -> None:
    rng = np.random.default_rng(2)
    b = GraphBuilder()
    dtype = "int8" if case == "int8" else "float32"
    x = b.input("x", (1, 16, 6, 6), dtype)
    w_shape = (16, 8 if case == "groups" else 16, 3, 3)
    if case == "runtime_weights":
        w = b.input("w", w_shape, "float32")
    elif case == "int8":
        w = b.const(rng.integers(-8, 8, w_shape).astype(np.int8))
    else:
        w = b.const(rand(rng, w_shape))
    attrs = {"groups": 2} if case == "groups" else {"out_dtype": "int32"} if case == "int8" else {}
    graph = b.build([b.op("relu", [b.op("conv2d", [x, w], "conv", **attrs)])])
    assert cpu_layout(graph) == graph


def test_optimize_for_cpu_fuses_the_blocked_graph() -> None:
    rng = np.random.default_rng(3)
    graph = conv_net(rng, batch_norm=True)
    opt = optimize_for_cpu(graph)
    assert set(opt.op_counts()) <= {"input", "constant", "fused"}
    bodies = [n.attrs["body"] for n in opt.nodes if n.op == "fused"]
    assert sum(body.op_counts().get("layout_transform", 0) for body in bodies) == 2
    feed = {"x": rand(rng, (1, 16, 8, 8))}
    np.testing.assert_allclose(run_graph(opt, feed)[0], run_graph(graph, feed)[0], rtol=1e-4, atol=1e-5)


def test_a_bad_block_is_rejected() -> None:
    graph = conv_net(np.random.default_rng(4))
    with pytest.raises(GraphError, match="block must be positive"):
        cpu_layout(graph, block=0)
