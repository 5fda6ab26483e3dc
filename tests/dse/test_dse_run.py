"""``vdla dse`` end to end on a small sweep: real lint, yosys and cycle-model runs, failing points
reported with their reasons, the outputs written, and the result cache hit on a re-run.

The sweep is 2 x 2 points on the tiny preset with the --quick layers, chosen so that only one point
needs synthesis: ``alu_ii=1`` breaks a validation rule, ``acc_depth=64`` leaves no tiling of the
layers (refused by the compiler in seconds, before any synthesis), and ``alu_ii=2 acc_depth=512``
is the tiny preset itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla.compiler.dse.workloads import QUICK_LAYERS
from vdla.compiler.vdla.topi import RESNET18_CONVS
from vdla_hw.config import load_config

SWEEP = ["alu_ii=1,2", "acc_depth=64,512"]


def _run(out: Path, *extra: str) -> dict:
    argv = ["--quiet", "dse", "--layers", "resnet18", "--quick", "--config", "tiny", "--sweep", *SWEEP, "-o", str(out)]
    assert main(argv + list(extra)) == 0
    return json.loads((out / "dse.json").read_text())


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("dse")
    # --no-cache: measured now even when an earlier test session stored these points
    return out, _run(out, "--no-cache", "--jobs", "2")


def test_every_point_is_reported_with_its_outcome(first_run: tuple[Path, dict]) -> None:
    _, doc = first_run
    points = {p["label"]: p for p in doc["points"]}
    assert list(points) == ["alu_ii=1 acc_depth=64", "alu_ii=1 acc_depth=512", "alu_ii=2 acc_depth=64",
                            "alu_ii=2 acc_depth=512"]
    for label in ("alu_ii=1 acc_depth=64", "alu_ii=1 acc_depth=512"):
        assert points[label]["failure"] == "validation"
        assert "timing.alu_ii = 1 must be >= 2" in points[label]["reason"]
    tight = points["alu_ii=2 acc_depth=64"]
    assert tight["failure"] == "fit" and "fits no tiling" in tight["reason"] and "log_acc_buff_size" in tight["reason"]
    assert not tight["ok"] and tight["hardware"] is None


def test_the_measured_point_has_resources_boards_and_latency(first_run: tuple[Path, dict]) -> None:
    _, doc = first_run
    point = next(p for p in doc["points"] if p["ok"])
    tiny = load_config("tiny")
    assert point["digest"] == tiny.digest and point["config"] == "tiny"
    assert [lt["name"] for lt in point["layers"]] == list(QUICK_LAYERS)
    for lt in point["layers"]:
        # no layer beats the GEMM core's peak
        assert lt["cycles"] >= RESNET18_CONVS[lt["name"]].macs / tiny.macs_per_cycle
    hw = point["hardware"]
    assert hw["luts"] > 0 and hw["ffs"] > 0 and hw["dsps"] > 0 and hw["bram36"] > 0
    assert hw["fmax_mhz"] == tiny.clock_mhz and hw["fmax_source"] == "config clock_mhz"
    assert hw["boards"]["pynq-z2"] == "yes" and hw["boards"]["zcu104"] == "yes"
    assert hw["boards"]["ulx3s"] == "?", "without --fmax the ECP5 fit is not decided"
    assert point["cycles"] == sum(lt["cycles"] for lt in point["layers"])
    assert point["latency_ms"] == pytest.approx(point["cycles"] / (tiny.clock_mhz * 1e3))
    assert doc["pareto"]["luts"] == ["alu_ii=2 acc_depth=512"]
    assert doc["boards"]["pynq-z2"] == ["alu_ii=2 acc_depth=512"]


def test_outputs_are_written(first_run: tuple[Path, dict]) -> None:
    out, _ = first_run
    png = (out / "pareto.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_a_rerun_hits_the_cache(first_run: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = first_run
    again = _run(tmp_path)
    table = capsys.readouterr().out
    before = {p["label"]: p for p in doc["points"]}
    for p in again["points"]:
        if p["failure"] == "validation":
            continue  # not cached: validation is instant
        assert p["cached"], p["label"]
        assert not before[p["label"]]["cached"]
        assert p["layers"] == before[p["label"]]["layers"] and p["hardware"] == before[p["label"]]["hardware"]
    assert "FAILED (validation)" in table and "FAILED (fit)" in table and "alu_ii=2 acc_depth=512" in table


def test_a_model_sweep_times_the_layers_the_graph_compiler_puts_on_the_vdla(
        first_run: tuple[Path, dict], tmp_path: Path) -> None:
    """A real torch-exported ONNX model: its first conv stays float on the CPU, the other two run on
    the VDLA; the int8 max pool between them goes where ``vdla compile`` puts it (the cost rule moves it to the
    board's host; ``--placement all`` keeps it on the VDLA); the latency is end to end, VDLA + host (the synthesis
    of tiny is the first run's, from the cache)."""
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
                              torch.nn.Conv2d(32, 16, 1), torch.nn.ReLU())
    torch.manual_seed(0)
    model = tmp_path / "net.onnx"
    torch.onnx.export(net.eval(), torch.randn(1, 8, 8, 8), str(model), input_names=["x"], output_names=["y"],
                      opset_version=18, dynamo=False)
    points = {}
    for placement in ("cost", "all"):
        out = tmp_path / placement
        assert main(["--quiet", "dse", "--model", str(model), "--config", "tiny", "--sweep", "alu_ii=2",
                     "--placement", placement, "-o", str(out)]) == 0
        (points[placement],) = json.loads((out / "dse.json").read_text())["points"]
    tiny = load_config("tiny")
    for placement, point in points.items():
        assert point["ok"] and point["digest"] == tiny.digest
        vdla = [lt for lt in point["layers"] if lt["device"] == "vdla"]
        host = [lt for lt in point["layers"] if lt["device"] == "host"]
        assert sorted(lt["macs"] for lt in vdla if lt["macs"]) == [32 * 16 * 16, 32 * 32 * 9 * 64]
        assert all(lt["cycles"] >= lt["macs"] / tiny.macs_per_cycle for lt in vdla)
        assert host and all(lt["host_ms"] > 0 and lt["cycles"] == 0 for lt in host)  # the float stem, the borders
        assert point["latency_ms"] == pytest.approx(point["vdla_ms"] + point["host_ms"])
        assert point["vdla_ms"] == pytest.approx(point["cycles"] / (point["hardware"]["fmax_mhz"] * 1e3))
        assert point["hardware"] == next(p for p in first_run[1]["points"] if p["ok"])["hardware"]
    moved = [lt for lt in points["cost"]["layers"] if "moved to the host by the cost rule" in lt["workload"]]
    assert len(moved) == 1 and moved[0]["workload"].startswith("max_pool2d")
    kept = [lt for lt in points["all"]["layers"] if lt["name"] == moved[0]["name"]]
    assert len(kept) == 1 and kept[0]["device"] == "vdla" and kept[0]["cycles"] > 0
