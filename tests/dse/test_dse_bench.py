"""The before/after machinery of ``bench/dse.py`` and ``bench/area_presets.py``: point selection,
presets, another tree's preset translated to this tree's schema, and the one before -> after table.

The benchmarks themselves synthesise every config (minutes to hours of yosys); these tests check
the parts that decide which configs run and how the two sides meet, on real configs and results.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

from vdla.compiler.dse.evaluate import PointResult
from vdla.compiler.dse.workloads import LayerTime
from vdla_hw.config import load_config
from vdla_hw.hw_cost import HardwareCost

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dse(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("dse")


@pytest.fixture(scope="module")
def area(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("area_presets")


def test_only_keeps_the_points_with_every_item(dse: ModuleType) -> None:
    label = "block=8 bus=128 acc_depth=1024 inp_depth=2048 wgt_depth=1024 lut_macs=0"
    assert dse.selected(label, [])
    assert dse.selected(label, ["block=8 bus=128 acc_depth=1024"])
    assert dse.selected(label, ["block=4", "bus=128 block=8"])  # any entry, items in any order
    assert not dse.selected(label, ["block=8 bus=64"])
    assert not dse.selected(label, ["none"])


def test_presets_all_are_the_shipped_ones_but_the_peer(dse: ModuleType) -> None:
    names = dse.preset_names("all")
    assert "default" not in names and {"tiny", "wide", "ulx3s"} <= set(names)
    assert dse.preset_names("tiny, wide") == ["tiny", "wide"]
    with pytest.raises(SystemExit, match="--presets: .*nosuch"):
        dse.preset_names("tiny,nosuch")


def test_another_trees_preset_drops_unknown_fields(area: ModuleType, tmp_path: Path) -> None:
    data = json.loads((ROOT / "vdla_hw" / "configs" / "tiny.json").read_text())
    data["future_field"] = 1
    data["timing"]["future_timing"] = 2
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    cfg, note = area.worker_config(str(path))
    assert cfg.digest == load_config("tiny").digest  # what is left is this tree's tiny
    assert "future_field" in note and "timing.future_timing" in note
    cfg, note = area.worker_config("tiny")
    assert cfg.digest == load_config("tiny").digest and note == ""


def test_another_trees_preset_takes_the_default_timing_when_refused(area: ModuleType, tmp_path: Path) -> None:
    data = json.loads((ROOT / "vdla_hw" / "configs" / "tiny.json").read_text())
    data["timing"]["gemm_pipeline_depth"] = 2  # below what this tree's RTL builds
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))
    cfg, note = area.worker_config(str(path))
    default = load_config("default").timing
    assert cfg.timing.gemm_pipeline_depth == default.gemm_pipeline_depth
    assert cfg.timing.alu_pipeline_depth == default.alu_pipeline_depth
    assert cfg.timing.dram_latency == data["timing"]["dram_latency"]  # the memory's own timing is kept
    assert cfg.block_in == load_config("tiny").block_in
    assert "default preset" in note and "gemm_pipeline_depth" in note


def _point(label: str, luts: int, cycles: int, mhz: float = 100.0) -> PointResult:
    hw = HardwareCost(luts=luts, ffs=luts // 2, dsps=17, bram36=7.0, fmax_mhz=mhz, fmax_source="config clock_mhz")
    return PointResult(label, "tiny", "d", {}, hardware=hw, layers=(LayerTime("C5", "w", 100, cycles),))


def test_before_after_rows_meet_by_label(dse: ModuleType) -> None:
    after = [_point("default (peer)", 32_000, 2_000_000), _point("preset=tiny", 11_508, 9_000_000),
             _point("block=4 bus=64", 9_000, 40_000_000)]
    before = {"default (peer)": {**_point("default (peer)", 31_091, 2_868_117).to_dict(), "source": "record"},
              "preset=tiny": {**_point("preset=tiny", 10_000, 10_000_000).to_dict(), "source": "tree abc",
                              "note": ""}}
    models = {"mobilenet_v2": {"points": [{**_point("default (peer)", 32_000, 5_124_581).to_dict()}]}}
    rows = dse.before_after(after, before, models)
    assert [r["label"] for r in rows] == ["default (peer)", "preset=tiny", "block=4 bus=64"]
    assert rows[0]["before"]["luts"] == 31_091 and rows[0]["after"]["cycles"] == 2_000_000
    assert rows[0]["mobilenet_v2_ms"] == pytest.approx(51.24581)
    assert rows[2]["before"] is None and rows[2]["mobilenet_v2_ms"] is None
    table = dse.format_before_after(rows)
    assert "31,091 -> 32,000 (+2.9%)" in table
    assert "28.68 -> 20.00 (-30.3%)" in table  # latency at 100 MHz
    assert "10,000 -> 11,508 (+15.1%)" in table
    line = next(ln for ln in table.splitlines() if ln.startswith("block=4"))
    assert "->" not in line and "9,000" in line  # no before: the value after only


def test_before_after_plot_is_written(dse: ModuleType, tmp_path: Path) -> None:
    rows = dse.before_after([_point("preset=tiny", 11_508, 9_000_000), _point("block=4", 9_000, 40_000_000)],
                            {"preset=tiny": _point("preset=tiny", 10_000, 10_000_000).to_dict()}, {})
    png = dse.plot_before_after(rows, tmp_path / "ba.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000


def test_rerender_fills_preset_resources_and_compares_model_cycles(dse: ModuleType) -> None:
    rows = [{"label": "preset=wide", "before": {"cycles": 34_177, "latency_ms": 0.228},
             "after": {"cycles": 32_044, "latency_ms": 0.214},
             "mobilenet_v2_ms": 3.5, "mobilenet_v2_detail": {"vdla_cycles": 240_000, "vdla_kernels": 36},
             "mobilenet_v2_before": {"vdla_cycles": 261_448, "vdla_kernels": 35}},
            {"label": "block=4 bus=64", "before": None, "after": {"cycles": 9, "latency_ms": 1.0, "luts": 9_817}}]
    area = {"presets": {"wide": {"before": {"xc7": {"luts": 40_000, "ffs": 17_000, "dsps": 1_089, "bram36": 214.0}},
                                 "after": {"xc7": {"luts": 44_000, "ffs": 18_000, "dsps": 1_089, "bram36": 214.0,
                                                   "yosys": "Yosys 0.70 (pyosys, native)"}}}}}
    dse.fill_resources(rows, [], area)
    assert rows[0]["before"]["luts"] == 40_000 and rows[0]["after"]["luts"] == 44_000
    assert "pyosys" in rows[0]["after"]["resources"]
    assert rows[1]["after"]["luts"] == 9_817 and rows[1]["before"] is None  # kept; no preset, no area row
    table = dse.format_before_after(rows)
    assert "40,000 -> 44,000 (+10.0%)" in table
    assert "261,448 (35) -> 240,000 (36) (-8.2%)" in table  # each tree's VDLA kernels, counted
