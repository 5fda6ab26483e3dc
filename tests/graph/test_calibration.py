"""Calibration methods (max / percentile / KL), the per-channel multipliers' overflow bound, SQNR."""

from __future__ import annotations

import numpy as np
import pytest
from vdla_hw.errors import UsageError

from vdla.compiler.graph import GraphBuilder, run_all
from vdla.compiler.graph.passes import calibrate, parse_calibration, quantize_model
from vdla.compiler.graph.passes.calibration import Calibration
from vdla.compiler.graph.passes.quantize import requant_multipliers
from vdla.compiler.graph.passes.sqnr import format_sqnr, layer_sqnr
from helpers import rand


def _outlier_graph():  # type: ignore[no-untyped-def]
    b = GraphBuilder()
    x = b.input("x", (1, 4096), "float32")
    g = b.build([b.op("relu", [b.op("tanh", [x], "t")], "r"), b.op("add", [x, x], "s")])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4096)).astype(np.float32)
    x[0, :4] = [40, -35, 30, 25]  # a few outliers far out in the tail
    return g, [{"x": x}]


@pytest.mark.parametrize("spec,want", [("max", Calibration("max")), ("KL", Calibration("kl")),
                                       ("percentile", Calibration("percentile", 99.99)),
                                       ("percentile:99.9", Calibration("percentile", 99.9))])
def test_parse_calibration(spec: str, want: Calibration) -> None:
    assert parse_calibration(spec) == want


@pytest.mark.parametrize("spec", ["mse", "percentile:0", "percentile:101", "percentile:abc", "kl:3", "max:1"])
def test_bad_calibration_names_the_allowed_methods(spec: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_calibration(spec)
    assert "max, percentile[:P], kl" in (info.value.hint or "")


def test_histogram_methods_clip_outliers_but_outputs_keep_their_range() -> None:
    g, samples = _outlier_graph()
    t = {m: calibrate(g, samples, m) for m in ("max", "percentile:99.9", "kl")}
    assert t["max"]["x"] == pytest.approx(40)
    for m in ("percentile:99.9", "kl"):
        assert 2.5 < t[m]["x"] < 10, (m, t[m]["x"])  # inside the Gaussian's tail, far below the outliers
        assert t[m]["s"] == t["max"]["s"] and t[m]["r"] == t["max"]["r"]  # graph outputs: full range
    assert t["percentile:99.9"]["t"] <= t["max"]["t"]


def test_multipliers_use_the_finest_shift_that_cannot_overflow() -> None:
    ratio = np.array([1e-3, 3e-4, 2.5e-3])
    bound = np.array([2e6, 7e6, 1e6])
    m, s, r = requant_multipliers(ratio, bound)
    assert np.all((bound + r) * m < 2 ** 31)
    m2 = np.rint(ratio * 2.0 ** (s + 1))
    r2 = np.rint(2.0 ** s / m2)
    assert np.any((bound + r2) * m2 >= 2 ** 31)  # one more bit would overflow some channel
    np.testing.assert_allclose(m * 2.0 ** -s, ratio, rtol=2e-3)


def test_sqnr_report_ranks_layers_worst_first_and_improves_per_channel() -> None:
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "float32")
    w1 = rand(rng, (32, 16, 3, 3), 0.2) * np.geomspace(0.02, 2, 32, dtype=np.float32)[:, None, None, None]
    y = b.op("relu", [b.op("conv2d", [x, b.const(w1), b.const(rand(rng, (32,), 0.1))], "c1", padding=(1, 1, 1, 1))],
             "r1")
    y = b.op("conv2d", [y, b.const(rand(rng, (16, 32, 1, 1), 0.2)), b.const(rand(rng, (16,), 0.1))], "c2")
    g = b.build([y])
    samples = [{"x": rand(rng, (1, 16, 8, 8))} for _ in range(4)]
    rows = {}
    for pc in (False, True):
        model = quantize_model(g, samples, skip_first_conv=False, per_channel=pc)
        rows[pc] = layer_sqnr(model, samples)
        assert [r.name for r in rows[pc]] and sorted(r.sqnr_db for r in rows[pc]) == [r.sqnr_db for r in rows[pc]]
        assert {r.name for r in rows[pc]} == {"r1", "c2"}
        # The report's numbers are the dequantized int8 values against the float ones.
        r1 = next(layer for layer in model.layers if layer.name == "r1")
        f = np.concatenate([run_all(g, s)["r1"].ravel() for s in samples]).astype(np.float64)
        q = np.concatenate([run_all(model.graph, s)[r1.value].ravel() for s in samples]) * r1.scale
        want = 10 * np.log10(np.sum(f ** 2) / np.sum((f - q) ** 2))
        assert next(r.sqnr_db for r in rows[pc] if r.name == "r1") == pytest.approx(want, rel=1e-9)
    sq = {pc: {r.name: r.sqnr_db for r in rows[pc]} for pc in rows}
    assert sq[True]["r1"] > sq[False]["r1"] + 3
    worst = rows[True][0].name
    table = format_sqnr(rows[True], limit=1)
    assert worst in table and rows[True][1].name not in table and "1 more layers" in table
