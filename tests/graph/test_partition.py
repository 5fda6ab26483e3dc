"""The VDLA partition explains itself, and odd channel counts run on the VDLA zero-padded.

The model is a small MobileNet-like network exported by torch (``mobilenet_like.py``): inverted
residual blocks with depthwise convs and 24 / 40 channels, which do not tile into the 16-wide GEMM
block of the ``default`` config.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from mobilenet_like import mobilenet_like_onnx, rand_image

from vdla.compiler.cli.main import main
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.executor import run_all, run_graph
from vdla.compiler.graph.passes import quantize
from vdla.runtime.graph_executor import load
from vdla.runtime.partition_report import read_partition

RES = 32


@pytest.fixture(scope="module")
def onnx_bytes() -> bytes:
    return mobilenet_like_onnx(RES)


@pytest.fixture(scope="module")
def samples() -> list[dict[str, np.ndarray]]:
    return [{"x": rand_image(RES, seed)} for seed in range(2)]


def _by_anchor(entries):  # type: ignore[no-untyped-def]
    return {e.anchor: e for e in entries if e.anchor is not None}


def test_report_names_device_and_reason_per_kernel(onnx_bytes: bytes, samples, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    compiled = build_model(from_onnx(onnx.load_from_string(onnx_bytes)), target="vdla", calibrate=samples,
                           placement="all")
    entries = compiled.partition()
    fused = [n.name for n in compiled.graph.nodes if n.op == "fused"]
    assert [e.name for e in entries] == fused  # every kernel, in execution order
    gemms = _by_anchor(entries)
    # The float first conv (skip_first_conv) stays on the CPU, saying why.
    assert gemms["/stem/stem.0/Conv_output_0"].device == "cpu"
    assert "float32 x float32 -> float32 are not int8" in gemms["/stem/stem.0/Conv_output_0"].reason
    # The depthwise convs (48 and 72 channels, the latter padded to 80) run as block-diagonal GEMMs.
    for name in ("/b1/b1.3/Conv_output_0", "/b2/b2.3/Conv_output_0", "/b3/b3.3/Conv_output_0"):
        assert gemms[name].device == "vdla" and gemms[name].reason is None, gemms[name]
    # 48 -> 24, 24 -> 72, 72 -> 40 and 40 -> 64 run on the VDLA with their channels padded to 16s.
    for name in ("/b1/b1.6/Conv_output_0", "/b2/b2.0/Conv_output_0", "/b3/b3.6/Conv_output_0",
                 "/head/head.0/Conv_output_0"):
        assert gemms[name].device == "vdla" and gemms[name].reason is None, gemms[name]
    dense = [e for e in entries if e.ops[0] == "dense"]
    assert len(dense) == 1 and dense[0].device == "vdla"  # 64 -> 10 features, padded to 16 outputs
    assert sum(e.device == "vdla" for e in gemms.values()) == 11 and len(gemms) == 12
    # A padded conv's output (zeros in its extra channels) feeds the next padded conv directly, with no
    # slice-and-pad kernel between them; the residual add of two values padded alike runs padded on the
    # VDLA (its extra channels stay zero), and so does the global average pool; before a float op the
    # padding is sliced back.
    b2_input = compiled.graph.node(gemms["/b2/b2.0/Conv_output_0"].name).inputs[0]
    assert b2_input == gemms["/b1/b1.6/Conv_output_0"].name
    # (The residual add may run fused into the epilogue of the conv producing its operand: fuse_residual_add.)
    assert [e.device for e in entries if "qadd" in e.ops or e.ops == ("qavg_pool2d",)] == ["vdla", "vdla"]
    cpu_ops = [e.ops for e in entries if e.device == "cpu"]
    assert sum("strided_slice" in ops for ops in cpu_ops) == 1  # the logits
    assert all(e.reason for e in entries if e.device == "cpu")
    # The report travels in the module file and reads back unchanged.
    path = compiled.export(tmp_path / "m.vdla")
    assert read_partition(load(path)) == entries


def test_vdla_compile_prints_the_partition(onnx_bytes: bytes, samples, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "m.onnx"
    model.write_bytes(onnx_bytes)
    np.save(tmp_path / "cal.npy", np.stack([s["x"][0] for s in samples]))
    assert main(["compile", str(model), "--target", "vdla", "--calibrate", str(tmp_path / "cal.npy"),
                 "--placement", "all", "-o", str(tmp_path / "m.vdla")]) == 0
    out = capsys.readouterr().out
    assert "why not vdla: conv2d '/stem/stem.0/Conv_output_0': operands float32" in out
    assert "11 of 12 conv2d/dense/batch_matmul on the VDLA, 1 of 1 residual adds, 1 of 1 average pools" in out
    row = next(line for line in out.splitlines() if line.startswith("/b3/b3.6/Conv_output_0"))
    assert row.split()[1] == "vdla"


def test_padded_channels_are_bit_exact_on_fsim(onnx_bytes: bytes, samples) -> None:  # type: ignore[no-untyped-def]
    graph = from_onnx(onnx.load_from_string(onnx_bytes))
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False)
    gemms = _by_anchor(compiled.partition())
    assert gemms["/stem/stem.0/Conv_output_0"].device == "vdla"  # 3 input channels, padded to 16
    assert compiled.fallbacks == {}
    feed = {"x": rand_image(RES, 7)}
    got = compiled.module.run_all(feed, backend="fsim")
    want = run_all(compiled.graph, feed)
    integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
    assert len(integer) >= 15
    for name in integer:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    # ... and the padding changes nothing: the result equals the unpadded int8 graph's exactly.
    unpadded = quantize(graph, samples, skip_first_conv=False)
    np.testing.assert_array_equal(compiled.run(feed)[0], run_graph(unpadded, feed)[0])
