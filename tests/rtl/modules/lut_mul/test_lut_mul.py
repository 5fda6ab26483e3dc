"""vdla_lut_mul, the GEMM's LUT-built int8 product, against the signed product on all
65,536 operand pairs -- both the synthesis body (shift-and-add, built here with
+define+SYNTHESIS) and the `*` that every simulation build uses -- and the whole design's
lint with SYNTHESIS defined (the code yosys reads)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import load_config, preset_names
from vdla_hw.rtl_build import lint_command, tool_env

HERE = Path(__file__).parent
SYNTH_DEFINE = "+define+SYNTHESIS"


@pytest.mark.parametrize("body", ["synthesis", "simulation"])
def test_gemm_lut_mul_exhaustive(rtl_module, body):
    cfg = load_config("tiny")
    widths = {"XW": cfg.inp_width, "YW": cfg.wgt_width}
    rtl_module("tiny", "tb_lut_mul", HERE, modules=["vdla_lut_mul"], extra_sources=[HERE / "tb_lut_mul.sv"],
               parameters=widths, env=widths, build_args=[SYNTH_DEFINE] if body == "synthesis" else [])


@pytest.mark.parametrize("config", configs_under_test(preset_names()))
def test_lint_clean_with_synthesis_defined(config):
    result = subprocess.run(lint_command(config) + [SYNTH_DEFINE], capture_output=True, text=True, env=tool_env(),
                            timeout=300)
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr[-4000:]
