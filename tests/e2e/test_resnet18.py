"""ResNet-18 end to end: llvm against onnxruntime, vdla (int8: every conv but the float stem, every residual add
and the global average pool on the VDLA) on fsim and cycle against the NumPy int8 reference."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from e2e_models import rand_input, resnet18_onnx

from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph import run_all, run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.passes import quantize


def _llvm_matches_onnxruntime(resolution: int) -> None:
    model = resnet18_onnx(resolution)
    x = rand_input((1, 3, resolution, resolution))
    compiled = build_model(from_onnx(model), target="llvm")
    compiled.module.set_num_threads(1)
    got = compiled.run({"x": x})[0]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert compiled.placement() == {"cpu": len(compiled.module.graph["nodes"])}
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_resnet18_llvm_matches_onnxruntime_at_64() -> None:
    _llvm_matches_onnxruntime(64)


@pytest.mark.slow
def test_resnet18_llvm_matches_onnxruntime_at_224() -> None:
    _llvm_matches_onnxruntime(224)


def _vdla_is_bit_exact(resolution: int, skip_first_conv: bool) -> None:
    graph = from_onnx(resnet18_onnx(resolution))
    samples = [{"x": rand_input((1, 3, resolution, resolution), seed=0)}]
    feed = {"x": rand_input((1, 3, resolution, resolution), seed=1)}
    compiled = build_model(graph, target="vdla", config="default", calibrate=samples, skip_first_conv=skip_first_conv,
                           placement="all")  # every kernel the VDLA can run (the cost rule moves adds and pools)
    assert compiled.fallbacks == {}
    # Every conv and the dense: the 3-channel first conv and the 1000-class dense run zero-padded to the block.
    gemms = [e for e in compiled.partition() if e.anchor is not None]
    assert len(gemms) == 21 and all(e.device == "vdla" for e in gemms), [e for e in gemms if e.device != "vdla"]
    # Every residual add (8) runs on the VDLA: fused into the epilogue of the conv producing its operand (the skip
    # LOADed beside the conv's tile) where that is faster than its own kernel (the small late stages), else as its
    # own kernel (identity GEMMs + ALU); the global average pool on its own (identity GEMMs).
    adds = [e for e in compiled.partition() if "qadd" in e.ops]
    assert len(adds) == 8 and all(e.device == "vdla" for e in adds), adds
    assert 0 < sum(e.ops[0] == "conv2d" for e in adds) and all(e.ops[0] == "conv2d" or e.ops == ("qadd",) for e in adds)
    pools = [e for e in compiled.partition() if e.ops == ("qavg_pool2d",)]
    assert len(pools) == 1 and pools[0].device == "vdla"
    # Every kernel left on the host says why.
    assert all(e.reason for e in compiled.partition() if e.device == "cpu")
    want = run_all(compiled.graph, feed)
    for backend in ("fsim", "cycle"):
        got = compiled.module.run_all(feed, backend=backend)
        integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
        # every kernel output from the input quantization to the last requantization (a fused conv's is not stored)
        assert len(integer) >= 30 - sum(e.ops[0] == "conv2d" for e in adds)
        for name in integer:  # the whole integer path, node by node, bit-exactly
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} on {backend}")
    final = run_graph(quantize(graph, samples, skip_first_conv=skip_first_conv), feed)[0]
    np.testing.assert_allclose(compiled.run(feed)[0], final, rtol=1e-5, atol=1e-5 * float(np.abs(final).max()))


def test_resnet18_vdla_int8_is_bit_exact_on_fsim_at_64() -> None:
    # All convs in int8: the first (3-channel) one runs as an int8 CPU kernel, so no float
    # rounding precedes the integer path and every int8/int32 value must match exactly.
    _vdla_is_bit_exact(64, skip_first_conv=False)


@pytest.mark.slow
def test_resnet18_vdla_int8_is_bit_exact_on_fsim_at_224() -> None:
    _vdla_is_bit_exact(224, skip_first_conv=False)
