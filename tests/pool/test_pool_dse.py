"""``vdla dse --pool``: the same sweep on real `vdla pool` processes on 127.0.0.1 gives the same
results as in-process (cycle counts are deterministic, synthesis is the same yosys run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main

ARGS = ["--quiet", "dse", "--layers", "resnet18:C11", "--config", "tiny", "--sweep", "alu_ii=1,2", "--no-cache"]


def _points(out: Path) -> dict[str, dict]:
    return {p["label"]: p for p in json.loads((out / "dse.json").read_text())["points"]}


@pytest.mark.slow  # ~20 s idle, a minute on a loaded machine: lint and simulations twice
def test_dse_on_the_pool_matches_the_local_run(pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sched = pool.scheduler()
    # the hardware job (lint + synthesis) needs a cpu worker, each compiled layer a vdla-cycle one
    pool.worker(sched.address, "w1", "--device", "cpu", "--device", "vdla-cycle")
    assert main([*ARGS, "--pool", sched.address, "--jobs", "2", "-o", str(tmp_path / "pool")]) == 0
    assert main([*ARGS, "-o", str(tmp_path / "local")]) == 0
    remote, local = _points(tmp_path / "pool"), _points(tmp_path / "local")
    assert remote["alu_ii=1"]["failure"] == local["alu_ii=1"]["failure"] == "validation"
    measured = remote["alu_ii=2"]
    assert measured["ok"] and not measured["cached"]
    assert measured["layers"] == local["alu_ii=2"]["layers"]
    assert measured["hardware"] == local["alu_ii=2"]["hardware"]
