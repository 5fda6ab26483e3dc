"""Each graph pass, checked by running the graph before and after it (bit-exact for int8 graphs)."""

from __future__ import annotations

import numpy as np
import pytest
from vdla_hw.config import load_config

from vdla.compiler.graph import GraphBuilder, GraphError, run_all, run_graph
from vdla.compiler.graph.passes import (
    alter_layout, fold_batch_norm, fold_constant, fuse_ops, fusion_groups, partition, placement, plan_memory, quantize,
    run_planned,
)
from vdla.compiler.graph.vdla_rules import ALU_OPS
from vdla.compiler.vdla.topi.reference import dense_reference
from helpers import conv_net, rand
from vdla.runtime.workloads import reference_output

CFG = load_config("default")


@pytest.fixture(scope="module")
def net():
    rng = np.random.default_rng(0)
    graph = conv_net(rng, batch_norm=True)
    samples = [{"x": rand(rng, (1, 16, 8, 8))} for _ in range(3)]
    return graph, samples, {"x": rand(rng, (1, 16, 8, 8))}


def test_fold_constant_evaluates_constant_subgraphs() -> None:
    b = GraphBuilder()
    x = b.input("x", (2, 3), "float32")
    c = b.op("transpose", [b.const(np.arange(6, dtype=np.float32).reshape(3, 2))], axes=(1, 0))
    g = b.build([b.op("add", [x, b.op("relu", [c])])])
    folded = fold_constant(g)
    assert folded.op_counts() == {"input": 1, "constant": 1, "add": 1}
    x0 = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(run_graph(folded, {"x": x0})[0], run_graph(g, {"x": x0})[0])


def test_fold_batch_norm_removes_every_batch_norm(net) -> None:
    graph, _, feed = net
    folded = fold_batch_norm(graph)
    assert "batch_norm" not in folded.op_counts() and folded.op_counts()["conv2d"] == 3
    assert "multiply" not in folded.op_counts()  # it folded into conv1, not into a multiply-add
    np.testing.assert_allclose(run_graph(folded, feed)[0], run_graph(graph, feed)[0], rtol=1e-4, atol=1e-5)


def test_unfoldable_batch_norm_becomes_a_multiply_add() -> None:
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 4, 3, 3), "float32")
    stats = [b.const(rng.uniform(0.5, 1.5, 4).astype(np.float32)) for _ in range(4)]
    g = b.build([b.op("batch_norm", [b.op("relu", [x])] + stats)])
    folded = fold_batch_norm(g)
    assert "batch_norm" not in folded.op_counts()
    feed = {"x": rand(rng, (1, 4, 3, 3))}
    np.testing.assert_allclose(run_graph(folded, feed)[0], run_graph(g, feed)[0], rtol=1e-5, atol=1e-6)


def _chain(*ops: tuple[str, dict]) -> list[list[str]]:
    b = GraphBuilder()
    v = b.input("x", (1, 16, 8, 8), "float32")
    for op, kw in ops:
        extra = [b.const(np.zeros((16, 16, 3, 3), np.float32))] if op == "conv2d" else []
        v = b.op(op, [v] + extra, op, **kw)
    return fusion_groups(b.build([v]))


def test_fusion_rules_of_the_paper() -> None:
    pool = ("max_pool2d", {"pool_size": (2, 2)})
    conv = ("conv2d", {"padding": (1, 1, 1, 1)})
    # Rule 1: injective ops fuse into the output of a complex-out-fusable op.
    assert _chain(conv, ("relu", {}), ("sigmoid", {})) == [["conv2d", "relu", "sigmoid"]]
    # Rule 2: injective chains fuse.
    assert _chain(("relu", {}), ("tanh", {}), ("clip", {"a_min": 0.0})) == [["relu", "tanh", "clip"]]
    # Rule 3: a reduction fuses with the injective ops at its input, but not into a conv's output.
    assert _chain(("relu", {}), pool) == [["relu", "max_pool2d"]]
    assert _chain(conv, pool) == [["conv2d"], ["max_pool2d"]]
    # Nothing fuses into a complex op's input, nor after a reduction, nor with an opaque op.
    assert _chain(("relu", {}), conv) == [["relu"], ["conv2d"]]
    assert _chain(pool, ("relu", {})) == [["max_pool2d"], ["relu"]]
    assert _chain(("relu", {}), ("softmax", {"axis": 1}), ("relu", {})) == [["relu"], ["softmax"], ["relu_0"]]


def test_a_value_read_twice_is_a_group_boundary() -> None:
    b = GraphBuilder()
    x = b.input("x", (4,), "float32")
    r = b.op("relu", [x], "r")
    g = b.build([b.op("add", [b.op("tanh", [r], "t"), b.op("sigmoid", [r], "s")], "a")])
    assert fusion_groups(g) == [["r"], ["t", "s", "a"]]


def test_silu_and_hardswish_fuse_into_the_conv_they_read_twice() -> None:
    """x * sigmoid(x) and x * hardsigmoid(x) after a conv: one kernel (the conv output is read twice,
    both times inside the group); a conv output read by two groups stays a boundary."""
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "float32")
    c1 = b.op("conv2d", [x, b.const(rand(rng, (16, 16, 1, 1)))], "c1")
    silu = b.op("multiply", [c1, b.op("sigmoid", [c1], "sig")], "silu")
    c2 = b.op("conv2d", [silu, b.const(rand(rng, (16, 16, 1, 1)))], "c2")
    hs = b.op("divide", [b.op("clip", [b.op("add", [c2, b.const(np.float32(3))], "p3")], "cl", a_min=0.0, a_max=6.0),
                         b.const(np.float32(6))], "hsig")
    hswish = b.op("multiply", [c2, hs], "hswish")
    c3 = b.op("conv2d", [hswish, b.const(rand(rng, (16, 16, 1, 1)))], "c3")
    out = b.op("add", [b.op("relu", [c3], "r3"), b.op("tanh", [c3], "t3")], "sum")
    graph = b.build([out])
    groups = fusion_groups(graph)
    assert ["c1", "sig", "silu"] in groups and ["c2", "p3", "cl", "hsig", "hswish"] in groups
    assert ["c3"] in groups  # read by r3 and t3 only: the node merging them (sum) does not read c3
    fused = fuse_ops(graph)
    feed = {"x": rand(rng, (1, 16, 6, 6))}
    np.testing.assert_allclose(run_graph(fused, feed)[0], run_graph(graph, feed)[0], rtol=1e-6, atol=1e-6)


def test_fuse_ops_preserves_results_and_makes_kernels(net) -> None:
    graph, _, feed = net
    fused = fuse_ops(fold_batch_norm(graph))
    assert set(fused.op_counts()) == {"input", "constant", "fused"}
    assert fused.op_counts()["fused"] < sum(1 for n in graph.nodes if n.op not in ("input", "constant"))
    np.testing.assert_allclose(run_graph(fused, feed)[0], run_graph(fold_batch_norm(graph), feed)[0], rtol=1e-6)


def test_quantized_dense_is_exactly_the_vdla_gemm_bias_relu_requantize() -> None:
    rng = np.random.default_rng(2)
    b = GraphBuilder()
    x = b.input("x", (16, 64), "float32")
    y = b.op("dense", [x, b.const(rand(rng, (32, 64), 0.1)), b.const(rand(rng, (32,), 0.1))], "fc")
    g = b.build([b.op("relu", [y], "act")])
    feed = {"x": rand(rng, (16, 64))}
    q = quantize(g, [feed], skip_first_conv=False, per_channel=False)
    values = run_all(q, feed)
    node = {n.op: n for n in q.nodes}
    a, w, bias = values[node["dense"].inputs[0]], values[node["dense"].inputs[1]], values[node["dense"].inputs[2]]
    shift = node["right_shift"].attrs["shift"]
    got = values[node["cast"].name]
    np.testing.assert_array_equal(got, reference_output(CFG, a, w.T, bias, shift))  # the runtime's VDLA reference
    assert node["dense"].type.dtype == "int32" and got.dtype == np.int8


def test_per_channel_dense_is_exactly_the_vdla_gemm_bias_relu_multiplier_requantize() -> None:
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (16, 64), "float32")
    w = rand(rng, (32, 64), 0.1) * np.geomspace(0.01, 10, 32, dtype=np.float32)[:, None]  # channel ranges differ 1000x
    y = b.op("dense", [x, b.const(w), b.const(rand(rng, (32,), 0.1))], "fc")
    g = b.build([b.op("relu", [y], "act")])
    feed = {"x": rand(rng, (16, 64))}
    q = quantize(g, [feed], skip_first_conv=False)
    values = run_all(q, feed)
    node = {n.op: n for n in q.nodes}
    a, wq, bias = (values[i] for i in node["dense"].inputs)
    m = values[node["multiply"].inputs[1]].reshape(-1)
    assert m.dtype == np.int32 and len(set(m.tolist())) > 16  # one multiplier per channel
    got = values[node["cast"].name]
    want = dense_reference(a, wq, bias, node["right_shift"].attrs["shift"], True, multiplier=m)
    np.testing.assert_array_equal(got, want)  # the topi reference of the VDLA epilogue with a multiplier
    # Per-channel weight scales keep the small channels' weights that one power-of-two scale for the
    # whole tensor rounds coarsely: the output's SQNR is higher.
    ref = run_graph(g, feed)[0]
    sqnr = {}
    for pc in (False, True):
        noise = run_graph(quantize(g, [feed], skip_first_conv=False, per_channel=pc), feed)[0] - ref
        sqnr[pc] = 10 * np.log10(np.sum(ref ** 2) / np.sum(noise ** 2))
    assert sqnr[True] > sqnr[False] + 2


def test_quantize_keeps_the_first_conv_float_on_request(net) -> None:
    graph, samples, feed = net
    folded = fold_constant(fold_batch_norm(graph))
    q = quantize(folded, samples, skip_first_conv=True)
    convs = [n for n in q.nodes if n.op == "conv2d"]
    assert [c.type.dtype for c in convs] == ["float32", "int32", "int32"]
    q_all = quantize(folded, samples, skip_first_conv=False)
    assert all(n.type.dtype == "int32" for n in q_all.nodes if n.op in ("conv2d", "dense"))
    want = run_graph(folded, feed)[0]
    for qg in (q, q_all):
        got = run_graph(qg, feed)[0]
        assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > 0.98


def test_alter_layout_packs_vdla_convs_and_transforms_only_at_borders(net) -> None:
    graph, samples, feed = net
    q = quantize(fold_constant(fold_batch_norm(graph)), samples, skip_first_conv=True)
    packed = alter_layout(q, CFG)
    convs = [n for n in packed.nodes if n.op == "conv2d"]
    assert [c.attrs["data_layout"] for c in convs] == ["NCHW", "NCHW1n16c", "NCHW1n16c"]
    transforms = [n for n in packed.nodes if n.op == "layout_transform"]
    # Into the packed region: conv1's output (float conv on the CPU) for conv2, x for conv3 -- once each
    # (quantized and int32 views of one tensor count separately); out of it: once before the flatten.
    into = [t for t in transforms if t.attrs["dst_layout"] == "NCHW1n16c"]
    out = [t for t in transforms if t.attrs["dst_layout"] == "NCHW"]
    assert len(out) == 1 and len(into) == len({t.inputs[0] for t in into})
    np.testing.assert_array_equal(run_graph(packed, feed)[0], run_graph(q, feed)[0])


def test_layout_of_a_float_graph_is_untouched(net) -> None:
    graph, _, _ = net
    assert alter_layout(graph, CFG) == graph


def test_plan_memory_reuses_dead_buffers_correctly(net) -> None:
    graph, samples, feed = net
    for g in (graph, fuse_ops(fold_batch_norm(graph))):
        plan = plan_memory(g)
        assert 0 < plan.arena_bytes < plan.naive_bytes
        np.testing.assert_array_equal(run_planned(plan, feed)[0], run_graph(g, feed)[0])
        assert "saved" in plan.report()


def test_plan_memory_never_overlaps_live_values() -> None:
    b = GraphBuilder()
    x = b.input("x", (256,), "float32")
    a = b.op("relu", [x], "a")
    c = b.op("tanh", [a], "c")
    d = b.op("sigmoid", [c], "d")
    g = b.build([b.op("add", [a, d], "e")])  # a stays live across c and d
    plan = plan_memory(g)
    spans = {k: (plan.offsets[k], plan.offsets[k] + plan.sizes[k]) for k in plan.offsets}
    for u, v in (("a", "c"), ("a", "d"), ("c", "d"), ("a", "e"), ("d", "e")):
        assert spans[u][1] <= spans[v][0] or spans[v][1] <= spans[u][0], (u, v)
    assert plan.offsets["e"] == plan.offsets["c"]  # c is dead once d is computed


def test_partition_puts_int8_convs_on_vdla_and_the_rest_on_cpu(net) -> None:
    graph, samples, feed = net
    q = quantize(fold_constant(fold_batch_norm(graph)), samples, skip_first_conv=True)
    parted = partition(fuse_ops(fold_constant(alter_layout(q, CFG))), CFG)
    where = placement(parted)
    vdla = [n for n in parted.nodes if n.op == "fused" and n.attrs["target"] == "vdla"]
    # conv2, conv3 and the dense; the residual add, the max pool and the global average pool (identity
    # GEMM + ALU)
    assert len(vdla) == 6 and set(where.values()) == {"vdla", "llvm"}
    alu = [n for n in vdla if [m.op for m in n.attrs["body"].nodes if m.op != "input"] in
           (["qadd"], ["qavg_pool2d"], ["max_pool2d"])]
    assert len(alu) == 3 and all(n.type.dtype == "int8" for n in alu)
    for n in vdla:
        body_ops = [m.op for m in n.attrs["body"].nodes if m.op not in ("input",)]
        if n in alu:
            continue
        assert body_ops[0] in ("conv2d", "dense") and set(body_ops[1:]) <= ALU_OPS
        gemm = n.attrs["body"].nodes[len(n.inputs)]
        assert gemm.attrs["data_layout"] in ("NCHW1n16c", "NC1n16c")
        assert n.type.dtype == "int8"
    # Layout transforms stay on the CPU, at the borders.
    for n in parted.nodes:
        if n.op == "fused" and any(m.op == "layout_transform" for m in n.attrs["body"].nodes):
            assert n.attrs["target"] == "llvm"
    np.testing.assert_array_equal(run_graph(parted, feed)[0], run_graph(q, feed)[0])
    with pytest.raises(GraphError, match="run fuse_ops first"):
        partition(q, CFG)
