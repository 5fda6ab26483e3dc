"""``import vdla``: the public API on real models (ONNX file, torch module), its lazy imports, the
notebook reprs, and the figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vdla

ROOT = Path(__file__).resolve().parents[2]


def test_import_vdla_loads_neither_the_compiler_nor_torch() -> None:
    code = ("import sys, vdla; m = vdla.load; "
            "print(sorted({n.split('.')[0] for n in sys.modules} & {'compiler', 'torch', 'llvmlite'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_unknown_name_lists_the_public_ones() -> None:
    with pytest.raises(AttributeError, match="public names are"):
        vdla.no_such_thing  # noqa: B018


def test_compile_onnx_run_export_load(tmp_path: Path, small_cnn: Path) -> None:
    model = small_cnn
    x = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype(np.float32)
    ref = vdla.from_onnx(model)
    from vdla.compiler.graph.executor import run_graph

    expected, = run_graph(ref, {"x": x})
    mod = vdla.compile(model, target="llvm")
    y, = mod.run(x)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    path = mod.export(tmp_path / "cnn.vdla")
    loaded = vdla.load(path)
    np.testing.assert_array_equal(loaded(x), y)
    assert "x: float32[1, 1, 8, 8]" in repr(loaded) and "<table>" in loaded._repr_html_()
    prof = loaded.profile(x, backend="fsim")
    assert "total: CPU" in repr(prof) and "<td>" in prof._repr_html_()


def test_compile_int8_for_vdla_partition_report(small_cnn: Path) -> None:
    model = small_cnn
    rng = np.random.default_rng(1)
    calib = [rng.standard_normal((1, 1, 8, 8)).astype(np.float32) for _ in range(4)]
    mod = vdla.compile(model, target="vdla", config="default", calibrate=calib)
    report = mod.partition()
    assert any(e.device == "vdla" for e in report), report
    assert "on the VDLA" in repr(report) and "why not vdla" in report._repr_html_()
    y_fsim, = mod.run(calib[0], backend="fsim")
    y_cycle, = mod.run(calib[0], backend="cycle")
    np.testing.assert_array_equal(y_fsim, y_cycle)  # the same int8 program on two simulators
    prof = mod.profile(calib[0], backend="cycle")
    assert prof.vdla_cycles and prof.vdla_cycles > 0


def test_program_run_timeline_and_reprs() -> None:
    from vdla.runtime.workloads import tiled_gemm_program

    cfg = vdla.hw_config("tiny")
    program, reference = tiled_gemm_program(cfg, 16, 16, 16, virtual_threads=2)
    fs = vdla.fsim(program)
    cy = vdla.run(program, backend="cycle")
    np.testing.assert_array_equal(fs.read("out"), reference)
    np.testing.assert_array_equal(cy.read("out"), reference)
    assert f"{cy.cycles:,} cycles" in repr(cy) and "GEMM utilization" in cy._repr_html_()
    fig = vdla.timeline(program)
    assert type(fig).__name__ == "Figure" and len(fig.axes) == 1
    assert "cycles" in fig.axes[0].get_title(loc="left")


def test_assembler_round_trip() -> None:
    from vdla.runtime.workloads import tiled_gemm_program

    cfg = vdla.hw_config("tiny")
    program, _ = tiled_gemm_program(cfg, 16, 16, 16)
    text = vdla.disassemble(program.instructions)
    insns, _ = vdla.assemble(text, cfg)
    assert insns == list(program.instructions)


def test_bad_model_argument_is_a_clear_error(tmp_path: Path) -> None:
    from vdla_hw.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        vdla.compile(tmp_path / "missing.onnx")
    with pytest.raises(UsageError, match="cannot compile a dict"):
        vdla.compile({"not": "a model"})
