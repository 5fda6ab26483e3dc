"""int8 accuracy on real data and the quantization options end to end.

The MobileNetV2-style digits net (compiler/examples/train_digits_mobilenet.py: inverted residuals,
depthwise convs, ReLU6, 128k parameters) keeps its top-1 within one point of float; the VDLA on
fsim computes exactly the integer graph's outputs; the CPU (llvm) build of the integer graph does
too (the reference of partition fallbacks); ``vdla compile --calibration`` reports per-layer SQNR.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.cli.main import main
from vdla.compiler.examples import MODEL_PATH as DIGITS_CNN
from vdla.compiler.examples.train_digits_mobilenet import MODEL_PATH, SPLIT_PATH, upscale
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph import run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.passes import quantize_for_vdla


@pytest.fixture(scope="module")
def mobilenet():
    with np.load(SPLIT_PATH) as d:
        x, y, cal = upscale(d["x_test"]), d["y_test"], upscale(d["x_calib"])
    return from_onnx(str(MODEL_PATH)), [{"x": c[None]} for c in cal], x, y


def _top1(graph, x: np.ndarray, y: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    return float(np.mean([run_graph(graph, {"x": x[i:i + 1]})[0].argmax() == y[i] for i in range(len(x))]))


def test_mobilenet_digits_int8_agrees_with_float_and_vdla_computes_it(mobilenet) -> None:
    graph, cal, x, _ = mobilenet
    compiled = build_model(graph, target="vdla", calibrate=cal[:16])
    vdla = [e for e in compiled.partition() if e.device == "vdla"]
    assert len(vdla) >= 15 and not compiled.fallbacks  # every 1x1 conv and the classifier
    assert any("multiply" in e.ops for e in vdla)  # the per-channel multipliers run on the ALU
    int8 = compiled.quantized.graph
    picks = range(0, 60)
    agree = [run_graph(graph, {"x": x[i:i + 1]})[0].argmax() == run_graph(int8, {"x": x[i:i + 1]})[0].argmax()
             for i in picks]
    assert sum(agree) >= len(agree) - 1
    for i in (0, 31):
        np.testing.assert_array_equal(compiled.run({"x": x[i:i + 1]}, backend="fsim")[0],
                                      run_graph(int8, {"x": x[i:i + 1]})[0])


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["max", "kl"])
def test_mobilenet_digits_on_fsim_keeps_top1_within_one_point(mobilenet, calibration: str) -> None:
    graph, cal, x, y = mobilenet
    compiled = build_model(graph, target="vdla", calibrate=cal, calibration=calibration)
    outs = [compiled.run({"x": x[i:i + 1]}, backend="fsim")[0] for i in range(len(x))]
    int8_top1 = float(np.mean([o.argmax() == t for o, t in zip(outs, y)]))
    float_top1 = _top1(graph, x, y)
    assert float_top1 > 0.97
    assert int8_top1 >= float_top1 - 0.01, (float_top1, int8_top1)
    for i in range(0, len(x), 90):  # the accelerator computes the integer graph's outputs
        np.testing.assert_array_equal(outs[i], run_graph(compiled.quantized.graph, {"x": x[i:i + 1]})[0])


def test_cpu_build_of_the_integer_graph_computes_the_same_integers(digits) -> None:
    graph, samples, x_te, _ = digits
    model = quantize_for_vdla(graph, samples, skip_first_conv=False, calibration="percentile")
    cpu = build_model(model.graph, target="llvm")
    for i in range(0, 40, 8):
        np.testing.assert_array_equal(cpu.run({"x": x_te[i:i + 1]})[0], run_graph(model.graph, {"x": x_te[i:i + 1]})[0])


def test_cli_calibration_option_reports_sqnr(digits, tmp_path: Path, capsys) -> None:
    _, samples, _, _ = digits
    np.savez(tmp_path / "calib.npz", x=np.concatenate([s["x"] for s in samples[:16]]))
    out = tmp_path / "m.vdla"
    assert main(["compile", str(DIGITS_CNN), "--target", "vdla", "--calibrate", str(tmp_path / "calib.npz"),
                 "--calibration", "kl", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "calibration kl" in text and "SQNR dB" in text and "per-channel" in text
    with zipfile.ZipFile(out) as z:
        q = json.loads(z.read("graph.json"))["quantization"]
    assert q["calibration"] == "kl" and q["per_channel"] is True
    dbs = [r["sqnr_db"] for r in q["sqnr"]]
    assert len(dbs) == 4 and dbs == sorted(dbs) and all(d > 20 for d in dbs)  # 2 convs, the average pool, the dense
    assert main(["compile", str(DIGITS_CNN), "--target", "vdla", "--calibrate", str(tmp_path / "calib.npz"),
                 "--calibration", "entropy", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown calibration 'entropy'" in err and "max, percentile[:P], kl" in err
