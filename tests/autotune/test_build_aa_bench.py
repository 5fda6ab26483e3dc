"""``bench/build_aa.py``: two builds of one model (``B`` optionally with one task's config changed), profiled
node by node in turns, in both orders.

Run here on MobileNetV2's small family member at 32x32 (``--family --resolution 32``), two rounds per order: the
JSON's structure (every node in both orders and builds, positive finite times, ratios and totals that are the
times' own), the config ``B`` was built with, the host record, that both profiled builds compute the same model,
and the clear errors for a bad ``--b-config`` or ``--models``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest

from vdla.compiler.autotune.task import extract_tasks
from vdla.compiler.autotune.template import template_for

MODEL, RESOLUTION = "mobilenet_v2", 32
#: ``B``'s change: the stem's output-width tile, 4 columns instead of the default's.
KNOBS = {"ow_block": 4}


@pytest.fixture(scope="module")
def aa(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("build_aa")


@pytest.fixture(scope="module")
def graph(aa: ModuleType) -> Any:
    """The graph the bench builds for ``--models mobilenet_v2 --family --resolution 32`` (same seeds)."""
    import torch

    net = aa.make_model(MODEL, image_size=RESOLUTION, family=True)
    x = np.random.default_rng(0).standard_normal((1, 3, RESOLUTION, RESOLUTION)).astype(np.float32)
    return aa.from_onnx(aa.export(net, torch.from_numpy(x), "torchscript"))


@pytest.fixture(scope="module")
def stem(graph: Any) -> str:
    """The first task (the stem convolution); it has the ``ow_block`` knob and a default other than 4."""
    task = extract_tasks(graph, "llvm")[0]
    default = template_for(task).default().to_dict()
    assert "ow_block" in default and default["ow_block"] != KNOBS["ow_block"]
    return task.name


def run_main(aa: ModuleType, monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["build_aa.py", *argv])
    aa.main()


def test_two_builds_are_profiled_in_both_orders(aa: ModuleType, graph: Any, stem: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    profiled: dict[str, Any] = {}
    real = aa.profile_orders

    def spy(modules: dict[str, Any], x: np.ndarray, rounds: int) -> Any:
        profiled.update(modules, x=x)
        return real(modules, x, rounds)

    monkeypatch.setattr(aa, "profile_orders", spy)
    out = tmp_path / "aa.json"
    run_main(aa, monkeypatch, "--models", MODEL, "--family", "--resolution", str(RESOLUTION), "--rounds", "2",
             "--nodes", "3", "--b-config", f"{stem}={json.dumps(KNOBS)}", "--output", str(out))
    got = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert printed.startswith("host: ") and f"wrote {out}" in printed and f"\n{MODEL}: per node" in printed
    assert {"isa", "cpu", "cores", "simd", "vector_bits"} <= set(got["host"]) and got["host"]["cores"] >= 1
    assert len(got["load_average_before"]) == len(got["load_average_after"]) == 3 and got["seconds"] > 0
    [r] = got["results"]
    assert (r["model"], r["family"], r["resolution"], r["rounds_per_order"]) == (MODEL, True, RESOLUTION, 2)

    # B was built with the stem's default but for the asked knob, and it took that config.
    task = next(t for t in extract_tasks(graph, "llvm") if t.name == stem)
    assert r["b_changed"] == {"task": stem, "config": {**template_for(task).default().to_dict(), **KNOBS}}
    # The two profiled builds are the same model: same nodes, same outputs (the stem's tile changes no sum).
    a, b = profiled["A"], profiled["B"]
    assert a is not b
    np.testing.assert_allclose(a.run(profiled["x"])[0], b.run(profiled["x"])[0], rtol=1e-5, atol=1e-5)

    # Every node the profile reports, in each order and build; times positive and finite; ratios and totals
    # are the times' own.
    _, prof = a.module.profile(profiled["x"], warmup=0, repeat=1, clock="thread")
    assert [row["node"] for row in r["nodes"]] == [n.name for n in prof.nodes] and len(r["nodes"]) >= 10
    for row in r["nodes"]:
        times = [row[k] for k in ("A_first_ms", "B_second_ms", "B_first_ms", "A_second_ms")]
        assert all(0 < t < math.inf for t in times), row
        assert row["A_over_B_order_AB"] == pytest.approx(row["A_first_ms"] / row["B_second_ms"])
        assert row["A_over_B_order_BA"] == pytest.approx(row["A_second_ms"] / row["B_first_ms"])
    sums = {"AB": {"A": "A_first_ms", "B": "B_second_ms"}, "BA": {"A": "A_second_ms", "B": "B_first_ms"}}
    for order, builds in sums.items():
        for build, key in builds.items():
            assert got["results"][0]["totals_ms"][order][build] == pytest.approx(sum(n[key] for n in r["nodes"]))


@pytest.mark.parametrize(("b_config", "message"), [
    ("conv_nope={{}}", "no task 'conv_nope'; the tasks are"),
    ("{stem}", "expected TASK=JSON"),
    ("={{}}", "expected TASK=JSON"),
    ("{stem}={{ow_block: 4}}", "the knobs are not JSON"),
    ("{stem}=[4]", "must be a JSON object"),
    ('{stem}={{"ow_blok": 4}}', "has no knobs ['ow_blok']"),
    ('{stem}={{"ow_block": 99}}', "knob ow_block=99 is not one of"),
    ('{stem}={{"reduce_at": "plane"}}', "not a legal config"),
])
def test_a_bad_b_config_is_named(aa: ModuleType, graph: Any, stem: str, b_config: str, message: str) -> None:
    """Refused before B is built, naming the cause (a misspelt knob would otherwise build B identical to A)."""
    with pytest.raises(SystemExit) as exc:
        aa.build_b(graph, MODEL, b_config.format(stem=stem))
    assert message in str(exc.value.code)


@pytest.mark.parametrize(("argv", "message"), [
    (("--models", "mobilenet_v9"), "--models: unknown ['mobilenet_v9']"),
    (("--models", "resnet18", "--family"), "--models: unknown ['resnet18']; with --family use some of"),
    (("--rounds", "0"), "--rounds must be at least 1"),
])
def test_a_bad_argument_is_named(aa: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        run_main(aa, monkeypatch, *argv, "--output", str(tmp_path / "o.json"))
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()
