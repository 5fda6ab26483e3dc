"""``bench/conv_spills.py --log``: every measured config of a tuning log built as the tuner builds it, its spills
counted (``autotune.spills``), the default and the log's best marked."""

from __future__ import annotations

import shutil
from types import ModuleType
from typing import Callable

import pytest

from vdla.compiler.autotune.database import Database, Record
from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for


@pytest.fixture(scope="module")
def cs(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("conv_spills")


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_log_survey_counts_each_measured_config(cs: ModuleType, tmp_path) -> None:
    wl = {"n": 1, "ic_outer": 3, "h": 56, "w": 56, "ic_block": 1, "oc_outer": 2, "kh": 3, "kw": 3,
          "oc_block": 16, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}
    task = make_task("conv2d_nchwc", wl, "llvm -mcpu=skylake-avx512")
    space = template_for(task).space
    default = template_for(task).default()
    wide = space.from_dict(dict(default.to_dict(), ow_block=14))
    db = Database(tmp_path / "log.jsonl")
    db.append(Record.make(task, default, "ok", [2e-5], "s", "", "xgb"))
    db.append(Record.make(task, wide, "ok", [1e-5], "s", "", "xgb"))
    rows = {r["config_key"]: r for r in cs.log_survey(str(tmp_path / "log.jsonl"), 10)}
    assert set(rows) == {default.key, wide.key}
    assert rows[default.key]["default"] and not rows[default.key]["spills"] and rows[default.key]["reloads"] == 0
    assert rows[wide.key]["best"] and rows[wide.key]["spills"] and rows[wide.key]["reloads"] >= 8
    assert rows[wide.key]["search_cost"] == 1e-5
