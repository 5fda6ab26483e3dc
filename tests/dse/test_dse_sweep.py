"""Sweep specifications (``vdla dse --sweep``) and Pareto fronts: pure functions, no tools."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.cli.main import main
from vdla.compiler.dse.pareto import pareto_front
from vdla.compiler.dse.sweep import parse_sweep, sweep_points
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError


@pytest.mark.parametrize("specs,message", [
    ([], "the sweep is empty"),
    (["block"], "'block' is not NAME=V1,V2"),
    (["=8"], "is not NAME=V1,V2"),
    (["blocks=8,16"], "unknown sweep parameter 'blocks'"),
    (["block="], "has an empty value"),
    (["block=8,,16"], "has an empty value"),
    (["block=8,x"], r"block='x' is not an integer"),
    (["block=12"], "block=12 is not a power of two"),
    (["acc_depth=1000"], "acc_depth=1000 is not a power of two"),
    (["clock=fast"], "clock='fast' is not a number"),
    (["bus=64", "bus=128"], "'bus' is given twice"),
    (["block=8,8"], "repeats a value"),
    (["block=8", "block_in=16"], "block and block_in set the same config field"),
    (["timing.alu_ii=2", "alu_ii=3"], "timing.alu_ii and alu_ii set the same config field"),
])
def test_bad_sweeps_are_usage_errors_naming_the_item(specs: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_sweep(specs)
    assert info.value.hint is None or info.value.hint


def test_bad_sweep_on_the_command_line_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["dse", "--layers", "resnet18", "--sweep", "block=12", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "block=12 is not a power of two" in err and "Traceback" not in err
    assert main(["dse", "--layers", "resnet18:C99", "--sweep", "block=8", "-o", str(tmp_path)]) == 2
    assert "ResNet-18 has no VDLA conv layer(s) ['C99']" in capsys.readouterr().err


def test_points_are_the_product_in_natural_units() -> None:
    base = load_config("default")
    points = sweep_points(base, parse_sweep(["block=8,32", "bus=64,128", "inp_depth=2048", "acc_depth=2048", "wgt_depth=1024", "lut_macs=0"]))
    assert [p.label for p in points] == [
        "block=8 bus=64 inp_depth=2048 acc_depth=2048 wgt_depth=1024 lut_macs=0", "block=8 bus=128 inp_depth=2048 acc_depth=2048 wgt_depth=1024 lut_macs=0",
        "block=32 bus=64 inp_depth=2048 acc_depth=2048 wgt_depth=1024 lut_macs=0", "block=32 bus=128 inp_depth=2048 acc_depth=2048 wgt_depth=1024 lut_macs=0"]
    for p in points:
        cfg = p.config
        assert cfg is not None and p.error is None
        values = dict(p.values)
        assert cfg.block_in == cfg.block_out == int(values["block"])
        assert cfg.bus_width == int(values["bus"])
        # the depth is in elements of the point's own accumulator tile (which the block sizes)
        assert cfg.acc_buff_depth == 2048 and cfg.wgt_buff_depth == 1024 and cfg.gemm_lut_macs == 0
        assert cfg.inp_buff_depth == 2048 and cfg.log_uop_buff_size == base.log_uop_buff_size and cfg.timing.alu_ii == base.timing.alu_ii


def test_a_point_that_breaks_a_rule_carries_the_rule() -> None:
    points = sweep_points(load_config("default"), parse_sweep(["alu_ii=1,2"]))
    bad, good = points
    assert bad.config is None and "timing.alu_ii = 1 must be >= 2" in (bad.error or "")
    # default's 96 LUT multipliers are more than an 8x8 core has
    small = sweep_points(load_config("default"), parse_sweep(["block=8"]))[0]
    assert small.config is None and "gemm_lut_macs = 96 exceeds the GEMM core's 64 multipliers" in (small.error or "")
    assert good.config is not None and good.config.digest == load_config("default").digest
    assert good.config.name == "default", "a point equal to the base keeps its name (and its build caches)"


def _dominated(p: tuple[float, float], q: tuple[float, float]) -> bool:
    return q[0] <= p[0] and q[1] <= p[1] and q != p


def test_pareto_front_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        pts = [tuple(map(float, rng.integers(0, 8, 2))) for _ in range(int(rng.integers(1, 25)))]
        front = pareto_front(pts)
        want = [i for i, p in enumerate(pts) if not any(_dominated(p, q) for q in pts)]
        assert sorted(front) == want
        assert [pts[i][0] for i in front] == sorted(pts[i][0] for i in front)


def test_pareto_front_small_cases() -> None:
    assert pareto_front([]) == []
    assert pareto_front([(1, 5), (2, 3), (3, 4), (4, 1)]) == [0, 1, 3]
    assert pareto_front([(2, 2), (2, 2), (3, 3)]) == [0, 1]
    assert pareto_front([(1, 2), (1, 1)]) == [1]
