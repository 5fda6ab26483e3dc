"""Deployable modules: export -> load with only the runtime, the CLI round trip, profiling, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from make_models import DIGITS_MODEL

from vdla.compiler.cli.main import main
from vdla.compiler.graph import run_graph
from vdla.compiler.graph.build import build_model
from vdla.runtime.graph_executor import GraphExecutorError, load
from vdla.runtime.module_format import ModuleFormatError

ROOT = Path(__file__).parents[2]

RUNTIME_ONLY = """
import sys
import numpy as np
from vdla.runtime.graph_executor import load
module = load(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], module.run({module.input_names[0]: x}, backend="fsim")[0])
leaked = sorted(m for m in sys.modules if m == "vdla.compiler" or m.startswith("vdla.compiler."))
assert not leaked, leaked
"""


@pytest.fixture(scope="module")
def digits_vdla(digits):
    graph, samples, x_te, _ = digits
    return graph, build_model(graph, target="vdla", calibrate=samples, placement="all"), x_te


def test_export_then_load_in_a_runtime_only_process(digits_vdla, tmp_path: Path) -> None:
    _, compiled, x_te = digits_vdla
    path = compiled.export(tmp_path / "digits.vdla")
    x = x_te[:1]
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", RUNTIME_ONLY, str(path), str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), compiled.run({"x": x})[0])


def test_a_loaded_module_reexports_and_profiles_with_a_timeline(digits_vdla, tmp_path: Path) -> None:
    _, compiled, x_te = digits_vdla
    module = load(compiled.export(tmp_path / "a.vdla"))
    again = load(module.export(tmp_path / "b.vdla"))
    feed = {"x": x_te[3:4]}
    outputs, profile = again.profile(feed, backend="cycle", trace=tmp_path / "t.json")
    np.testing.assert_array_equal(outputs[0], compiled.run(feed)[0])
    vdla = [n for n in profile.nodes if n.device == "vdla"]
    # Two convs, the max pool, the global average pool and the 10-class dense (its outputs zero-padded to the
    # GEMM block).
    assert len(vdla) == 5 and all(n.cycles and 0 < n.gemm_utilization <= 1 for n in vdla)
    assert profile.vdla_cycles == sum(n.cycles for n in vdla)
    layers = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("cat") == "layer"]
    assert [e["name"] for e in layers] == [n.name for n in vdla]
    assert "total" in profile.table()


def test_cli_compile_and_run_round_trip(digits, tmp_path: Path, capsys) -> None:
    graph, samples, x_te, _ = digits
    np.savez(tmp_path / "calib.npz", x=np.concatenate([s["x"] for s in samples[:16]]))
    np.save(tmp_path / "x.npy", x_te[:1])
    out = tmp_path / "digits.vdla"
    assert main(["compile", str(DIGITS_MODEL), "--target", "vdla", "--calibrate",
                 str(tmp_path / "calib.npz"), "-o", str(out)]) == 0
    assert main(["run", str(out), "--input", str(tmp_path / "x.npy"), "--backend", "cycle", "--profile",
                 "--output", str(tmp_path / "y.npy")]) == 0
    text = capsys.readouterr().out
    assert "vdla" in text and "cycles" in text
    compiled = build_model(graph, target="vdla", calibrate=[{"x": s["x"]} for s in samples[:16]])
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), compiled.run({"x": x_te[:1]})[0])


def test_cli_llvm_target_matches_the_reference(digits, tmp_path: Path, capsys) -> None:
    graph, _, x_te, _ = digits
    np.save(tmp_path / "x.npy", x_te[:1])
    out = tmp_path / "digits_cpu.vdla"
    assert main(["compile", str(DIGITS_MODEL), "-o", str(out)]) == 0
    assert main(["run", str(out), "--input", f"x={tmp_path / 'x.npy'}", "--output", str(tmp_path / "y.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), run_graph(graph, {"x": x_te[:1]})[0], rtol=1e-5, atol=1e-5)


def test_bad_inputs_and_files_raise_clear_errors(digits_vdla, tmp_path: Path, capsys) -> None:
    _, compiled, _ = digits_vdla
    with pytest.raises(GraphExecutorError, match="must be float32"):
        compiled.run({"x": np.zeros((1, 1, 8, 8), np.float64)})
    with pytest.raises(GraphExecutorError, match="missing"):
        compiled.run({"y": np.zeros((1, 1, 8, 8), np.float32)})
    (tmp_path / "junk.vdla").write_text("not a module")
    with pytest.raises(ModuleFormatError, match="not a VDLA model file"):
        load(tmp_path / "junk.vdla")
    assert main(["compile", str(DIGITS_MODEL), "--target", "vdla", "-o", str(tmp_path / "m.vdla")]) == 2
    assert "--calibrate" in capsys.readouterr().err
