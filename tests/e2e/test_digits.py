"""The digits CNN compiled to VDLA (int8) and run on fsim: top-1 within one point of the float model."""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph import run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.passes import quantize


def test_digits_on_vdla_fsim_keeps_top1_within_one_point(digits) -> None:
    graph, samples, x_te, y_te = digits
    compiled = build_model(graph, target="vdla", config="default", calibrate=samples, placement="all")
    assert compiled.fallbacks == {}
    # Both int8 convs, the max pool between them, the global average pool and the 10-class dense (its outputs
    # zero-padded to the GEMM block) run on the VDLA.
    assert [e.ops[0] for e in compiled.partition() if e.device == "vdla"] == ["conv2d", "max_pool2d", "conv2d",
                                                                              "qavg_pool2d", "dense"]
    float_top1 = np.mean([run_graph(graph, {"x": x_te[i:i + 1]})[0].argmax() == y_te[i] for i in range(len(x_te))])
    outs = [compiled.run({"x": x_te[i:i + 1]}, backend="fsim")[0] for i in range(len(x_te))]
    int8_top1 = np.mean([o.argmax() == y for o, y in zip(outs, y_te)])
    assert float_top1 > 0.95
    assert int8_top1 >= float_top1 - 0.01, (float_top1, int8_top1)
    # The accelerator computes what the NumPy int8 reference computes.
    reference = quantize(graph, samples)
    for i in range(0, len(x_te), 45):
        np.testing.assert_allclose(outs[i], run_graph(reference, {"x": x_te[i:i + 1]})[0], rtol=1e-5, atol=1e-5)
