"""Concatenation by placement: a channel concat of two VDLA convs' int8 outputs costs no copy -- the memory
plan puts each conv's output at its slice of the concat's buffer (the STOREs write there) and the executor
skips the concat -- and every value stays bit-exact against the graph's int8 reference."""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.executor import run_all, run_graph
from vdla.compiler.graph.passes.plan_memory import placed_concats, plan_memory, run_planned


def _net():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)

    def rand(shape: tuple[int, ...], s: float) -> np.ndarray:
        return (rng.standard_normal(shape) * s).astype(np.float32)

    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "float32")
    a = b.op("relu", [b.op("conv2d", [x, b.const(rand((16, 16, 3, 3), 0.1), "wa")], "conv_a", padding=(1, 1, 1, 1))],
             "relu_a")
    c = b.op("conv2d", [x, b.const(rand((32, 16, 1, 1), 0.1), "wc")], "conv_c")
    y = b.op("concatenate", [a, c], "cat", axis=1)
    y = b.op("conv2d", [y, b.const(rand((16, 48, 1, 1), 0.1), "wy")], "conv_y")
    samples = [{"x": rand((1, 16, 8, 8), 1.0)} for _ in range(2)]
    return b.build([y]), samples, {"x": rand((1, 16, 8, 8), 1.0)}


def test_a_concat_of_vdla_outputs_is_placed_not_copied_and_bit_exact() -> None:
    graph, samples, feed = _net()
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False)
    entries = compiled.partition()
    cat = next(e for e in entries if "concatenate" in e.ops)
    assert cat.device == "placed" and "no copy" in cat.reason, cat
    node = next(n for n in compiled.module.graph["nodes"] if n["name"] == cat.name)
    assert node["device"] == "placed" and "function" not in node
    # the two producers' buffers are the two slices of the concat's buffer
    offsets = compiled.module.graph["arena"]["offsets"]
    first, second = node["inputs"]
    assert offsets[first] == offsets[cat.name]
    assert offsets[second] == offsets[cat.name] + 16 * 8 * 8  # 16 int8 channels of 8 x 8
    want = run_all(compiled.graph, feed)
    for backend in ("fsim", "cycle"):
        np.testing.assert_array_equal(compiled.run(feed, backend=backend)[0], run_graph(compiled.graph, feed)[0])
        got = compiled.module.run_all(feed, backend=backend)
        np.testing.assert_array_equal(got[cat.name], want[cat.name])
    # the planner's own check: every value in its slot, the placed concat's bytes already in place
    plan = plan_memory(compiled.graph, placed=placed_concats(compiled.graph))
    assert plan.placed == (cat.name,)
    np.testing.assert_array_equal(run_planned(plan, feed)[0], run_graph(compiled.graph, feed)[0])


def test_a_concat_whose_operand_is_read_later_is_copied() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 16, 4, 4), "float32")
    a = b.op("relu", [x], "a")
    c = b.op("sigmoid", [x], "c")
    y = b.op("concatenate", [a, c], "cat", axis=1)
    g = b.build([b.op("add", [b.op("sum", [y], "s", axes=(1, 2, 3), keepdims=False), b.op("sum", [a], "t", axes=(1, 2, 3), keepdims=False)], "out")])
    assert placed_concats(g) == {}  # `a` is read after the concat
    b2 = GraphBuilder()
    x = b2.input("x", (1, 16, 4, 4), "float32")
    y = b2.op("concatenate", [b2.op("relu", [x], "a"), b2.op("sigmoid", [x], "c")], "cat", axis=1)
    g2 = b2.build([b2.op("tanh", [y], "out")])
    placed = placed_concats(g2)
    assert placed == {"cat": (("a", 0), ("c", 16 * 4 * 4 * 4))}
    feed = {"x": np.random.default_rng(0).standard_normal((1, 16, 4, 4)).astype(np.float32)}
    np.testing.assert_array_equal(run_planned(plan_memory(g2, placed=placed), feed)[0], run_graph(g2, feed)[0])
