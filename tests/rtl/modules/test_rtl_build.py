"""The generated package is current, the design lints clean on every preset, and yosys
synthesizes it (slow)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import ConfigError, load_config, preset_names
from vdla_hw.gen_sv import GENERATED_DIR, generate_package, package_path
from vdla_hw.rtl_build import RTL_MODULES, RtlBuildError, lint_command, package_file, rtl_sources, tool_env

# The staleness check of the ISA tests (tests/vdla_hw/conftest.py), reused as is.
_spec = importlib.util.spec_from_file_location("vdla_hw_checks", Path(__file__).parents[2] / "vdla_hw" / "conftest.py")
_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_checks)  # type: ignore[union-attr]


@pytest.mark.parametrize("config", preset_names())
def test_committed_package_is_up_to_date(config):
    cfg = load_config(config)
    _checks.assert_generated_up_to_date(package_path(cfg), generate_package(cfg), f"vdla hw gen-pkg --config {config}")


def test_package_carries_the_config():
    cfg = load_config("tiny").replace(log_block_out=3, cmd_queue_depth=8)
    text = generate_package(cfg)
    assert "localparam int BLOCK_OUT = 8;" in text and "localparam int CMD_QUEUE_DEPTH = 8;" in text
    for layout in cfg.isa.layouts.values():
        for field in layout.fields:
            assert f"localparam int {layout.name.upper()}_{field.name.upper()}_W = {field.width};" in text
    # A custom config never picks up a preset's committed file.
    assert package_file(cfg) != package_path(cfg, GENERATED_DIR)
    assert package_file(cfg).read_text() == text


def test_sources_are_in_dependency_order():
    srcs = rtl_sources("tiny")
    assert srcs[0].name == "vdla_pkg_tiny.sv"
    assert [p.stem for p in srcs[1:]] == list(RTL_MODULES)
    with pytest.raises(RtlBuildError, match="unknown RTL module"):
        rtl_sources("tiny", ["vdla_nope"])


@pytest.mark.parametrize("config", configs_under_test(preset_names()))
def test_lint_clean(config):
    result = subprocess.run(lint_command(config), capture_output=True, text=True, env=tool_env(), timeout=300)
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr[-4000:]


def test_illegal_timing_stops_elaboration(tmp_path):
    """Validation refuses alu_ii = 1; a package edited by hand past it still meets the RTL's own $fatal."""
    tiny = load_config("tiny")
    with pytest.raises(ConfigError, match="alu_ii = 1 must be >= 2"):
        tiny.replace(timing={"alu_ii": 1})
    package = package_file(tiny)
    text = package.read_text()
    assert "localparam int ALU_II = 2;" in text
    edited = tmp_path / package.name
    edited.write_text(text.replace("localparam int ALU_II = 2;", "localparam int ALU_II = 1;"))
    command = [str(edited) if arg == str(package) else arg for arg in lint_command(tiny)]
    assert str(edited) in command
    result = subprocess.run(command, capture_output=True, text=True, env=tool_env(), timeout=300)
    assert result.returncode != 0 and "alu_ii = 1 must be >= 2" in result.stderr


def test_dma_depths_come_from_the_config():
    """Odd DMA window and narrow-row depths reach the RTL through the package and lint clean."""
    cfg = load_config("tiny").replace(timing={"dma_max_bursts": 3, "dma_narrow_rows": 1})
    result = subprocess.run(lint_command(cfg), capture_output=True, text=True, env=tool_env(), timeout=300)
    assert result.returncode == 0, result.stderr
    package = next(p for p in lint_command(cfg) if p.endswith(".sv") and "vdla_pkg" in p)
    text = open(package).read()
    assert "DMA_MAX_BURSTS = 3" in text and "DMA_NARROW_ROWS = 1" in text


@pytest.mark.slow
def test_synth_tiny_fits_zynq():
    from vdla_hw.synth import synthesize

    result = synthesize("tiny", use_cache=False)
    assert result.luts > 0 and result.ffs > 0 and result.bram36 > 0
    assert result.fits()
