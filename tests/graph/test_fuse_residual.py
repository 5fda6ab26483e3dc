"""fuse_residual_add: a VDLA residual add joins the epilogue of the VDLA conv producing its operand, when that conv's
result has no other reader; the compiled model is bit-exact against the graph's int8 reference on fsim and cycle."""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph import GraphBuilder, run_all, run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.cost import host_model
from vdla.compiler.graph.passes.fuse_residual import fusion_figures
from vdla.compiler.graph.passes import (alter_layout, fold_constant, fuse_ops, fuse_residual_add, partition,
                                        quantize)
from vdla_hw.config import load_config

CFG = load_config("default")


def _block(second_reader: bool = False, c: int = 128, hw: int = 2):  # type: ignore[no-untyped-def]
    """conv1 -> relu -> conv2 -> add(conv2, relu1) -> relu -> conv3: one ResNet block between two convs (with
    ``second_reader`` conv2's value is also read by a fourth conv, so it must reach memory).  At 128 channels of
    2 x 2 pixels (a late stage) the 3x3 conv is bound by its weights' DMA, under which the fused add's ALU work
    hides: fusing wins; at 32 channels of 8 x 8 the conv is compute-bound and the add's own kernel is faster."""
    rng = np.random.default_rng(11)

    def rand(shape: tuple[int, ...], s: float) -> np.ndarray:
        return (rng.standard_normal(shape) * s).astype(np.float32)

    b = GraphBuilder()
    x = b.input("x", (1, 16, hw, hw), "float32")
    y1 = b.op("relu", [b.op("conv2d", [x, b.const(rand((c, 16, 3, 3), 0.2), "w1")], "conv1", padding=(1, 1, 1, 1))])
    y2 = b.op("conv2d", [y1, b.const(rand((c, c, 3, 3), 0.05), "w2")], "conv2", padding=(1, 1, 1, 1))
    y = b.op("relu", [b.op("add", [y2, y1], "res")])
    out = b.op("conv2d", [y, b.const(rand((16, c, 1, 1), 0.1), "w3")], "conv3")
    outs = [out]
    if second_reader:
        outs.append(b.op("conv2d", [y2, b.const(rand((16, c, 1, 1), 0.1), "w4")], "conv4"))
    samples = [{"x": rand((1, 16, hw, hw), 1.0)} for _ in range(2)]
    return b.build(outs), samples, {"x": rand((1, 16, hw, hw), 1.0)}


def _kernels(graph, samples):  # type: ignore[no-untyped-def]
    q = quantize(graph, samples, skip_first_conv=False)
    parted = partition(fuse_ops(fold_constant(alter_layout(q, CFG))), CFG)
    return q, parted, fuse_residual_add(parted, CFG)


def _ops(n) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.op for m in n.attrs["body"].nodes if m.op != "input"]


def test_the_add_joins_its_producer_conv_and_means_the_same() -> None:
    graph, samples, feed = _block()
    q, parted, fused = _kernels(graph, samples)
    before = [n for n in parted.nodes if n.op == "fused" and _ops(n) == ["qadd"]]
    assert len(before) == 1 and before[0].attrs["target"] == "vdla"
    kernels = [n for n in fused.nodes if n.op == "fused" and "qadd" in _ops(n)]
    assert len(kernels) == 1 and kernels[0].attrs["target"] == "vdla"
    assert _ops(kernels[0])[0] == "conv2d" and _ops(kernels[0])[-1] == "qadd"
    assert len([n for n in fused.nodes if n.op == "fused"]) == len([n for n in parted.nodes if n.op == "fused"]) - 1
    np.testing.assert_array_equal(run_graph(fused, feed)[0], run_graph(q, feed)[0])


def test_a_compute_bound_conv_keeps_its_add_apart_when_that_is_faster() -> None:
    graph, samples, _ = _block(c=32, hw=8)
    _, parted, fused = _kernels(graph, samples)
    add = next(n for n in parted.nodes if n.op == "fused" and _ops(n) == ["qadd"])
    conv = parted.node(add.inputs[0])
    figures = fusion_figures(conv, add, 0, parted, CFG)
    assert figures is not None and figures.fused_add > figures.add and not figures.fuse(CFG)
    assert [_ops(n) for n in fused.nodes if n.op == "fused"] == [_ops(n) for n in parted.nodes if n.op == "fused"]


def test_the_figures_of_a_weight_bound_conv_favour_fusing_even_against_the_board_host() -> None:
    graph, samples, _ = _block()
    _, parted, _ = _kernels(graph, samples)
    add = next(n for n in parted.nodes if n.op == "fused" and _ops(n) == ["qadd"])
    figures = fusion_figures(parted.node(add.inputs[0]), add, 0, parted, CFG, host_model(where="board"))
    assert figures is not None and figures.host is not None
    assert figures.fused_add < figures.add and figures.fuse(CFG)
    assert figures.fused_add / (CFG.clock_mhz * 1e6) < figures.host.host_s + figures.host.transfer_s


def test_a_conv_read_twice_keeps_its_add_apart() -> None:
    graph, samples, _ = _block(second_reader=True)
    _, parted, fused = _kernels(graph, samples)
    assert [n.attrs["target"] for n in parted.nodes if n.op == "fused" and _ops(n) == ["qadd"]] == ["vdla"]
    assert [_ops(n) for n in fused.nodes if n.op == "fused"] == [_ops(n) for n in parted.nodes if n.op == "fused"]


def test_the_fused_block_is_bit_exact_on_fsim_and_cycle() -> None:
    graph, samples, feed = _block()
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False, placement="all")
    assert compiled.fallbacks == {}
    entry = next(e for e in compiled.partition() if "qadd" in e.ops)
    assert entry.device == "vdla" and entry.ops[0] == "conv2d"
    node = next(n for n in compiled.module.graph["nodes"] if n["name"] == entry.name)
    assert [m["buffer"] for m in node["more_inputs"]] == ["skip"]
    want = run_all(compiled.graph, feed)
    for backend in ("fsim", "cycle"):
        got = compiled.module.run_all(feed, backend=backend)
        names = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
        assert entry.name in names
        for name in names:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} on {backend}")


def test_the_build_compiles_each_kernel_once_and_the_same_as_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The fusion decision's three compiles are the build's own: the kept form is not compiled again, and a
    kernel from the cache is the program a fresh compile gives."""
    import vdla.compiler.graph.kernel_cache as kc
    from vdla.compiler.graph.lower_vdla import compile_kernel

    for c, hw, fuses in ((128, 2, True), (32, 8, False)):
        graph, samples, _ = _block(c=c, hw=hw)
        calls: list[str] = []

        def counted(node, g, cfg, vt=2):  # type: ignore[no-untyped-def]
            calls.append(node.name)
            return compile_kernel(node, g, cfg, vt)

        monkeypatch.setattr(kc, "compile_kernel", counted)
        built = build_model(graph, target="vdla", config=CFG, calibrate=samples, skip_first_conv=False)
        kernels = [n for n in built.graph.nodes if n.op == "fused" and n.attrs.get("target") == "vdla"]
        assert any(_ops(n)[-1] == "qadd" and _ops(n)[0] == "conv2d" for n in kernels) == fuses
        # fused, conv alone, add alone for the decision; then only the final kernels not among them (conv1, conv3);
        # without the cache the build compiled the kept form again (6 or 7)
        assert len(calls) == 3 + len(kernels) - (1 if fuses else 2), calls
        monkeypatch.undo()
        placed = {d["name"]: d["program"] for d in built.module.graph["nodes"] if d["device"] == "vdla"}
        assert placed
        for n in kernels:
            if n.name not in placed:
                continue  # the cost rule put it on the host
            fresh = compile_kernel(n, built.graph, CFG)
            kept = built.module.programs[placed[n.name]]
            assert fresh.program.instructions == kept.instructions
            np.testing.assert_array_equal(np.asarray(fresh.program.dram), np.asarray(kept.dram))
