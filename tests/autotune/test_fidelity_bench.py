"""The judging side of ``bench/tune_fidelity.py``: which configs of a task are compared with the default
(the log's best, and a challenger that is never the default), and what the tuner's own log predicts.

The benchmark itself tunes, re-times and profiles whole models (tens of minutes); these tests check, on
the real ``conv2d_nchwc`` space and logs of made-up costs, the choice of what is judged.
"""

from __future__ import annotations

import shutil
from types import ModuleType
from typing import Callable

import pytest

from vdla.compiler.autotune.database import RETIMED, Record
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import template_for

WORKLOAD = {"n": 1, "ic_outer": 1, "ic_block": 16, "h": 7, "w": 7, "oc_outer": 1, "oc_block": 16,
            "kh": 3, "kw": 3, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}


@pytest.fixture(scope="module")
def fb(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("tune_fidelity")


@pytest.fixture(scope="module")
def task() -> Task:
    return make_task("conv2d_nchwc", WORKLOAD)


def configs(task: Task) -> list:
    """The default and two other legal configs of the task's space."""
    space = template_for(task).space
    default = template_for(task).default()
    others = [space.get(i) for i in space.legal_indices() if space.get(i).key != default.key][:2]
    return [default, *others]


def rec(task: Task, config, cost: float, tuner: str = "xgb", detail: str = "", stamp: float = 0.0) -> Record:
    r = Record.make(task, config, "ok", [cost], "s", detail=detail, tuner=tuner)
    return Record(r.task, r.config, r.config_key, r.status, r.costs, r.unit, r.detail, r.tuner, r.measured_on,
                  stamp, r.features)


def test_when_the_best_is_the_default_a_challenger_is_judged_too(fb: ModuleType, task: Task) -> None:
    default, a, b = configs(task)
    picks = fb.contenders(task, [rec(task, default, 1.0), rec(task, a, 1.3), rec(task, b, 1.1)])
    assert picks["best"]["is_default"] and picks["best"]["tuning_speedup"] == pytest.approx(1.0)
    # The challenger is the fastest config that is not the default: b, predicted 1.0 / 1.1.
    assert not picks["challenger"]["is_default"]
    assert template_for(task).space.from_dict(picks["challenger"]["config"]).key == b.key
    assert picks["challenger"]["tuning_speedup"] == pytest.approx(1.0 / 1.1)


def test_when_the_best_is_not_the_default_it_is_the_challenger(fb: ModuleType, task: Task) -> None:
    default, a, b = configs(task)
    picks = fb.contenders(task, [rec(task, default, 1.0), rec(task, a, 0.8), rec(task, b, 0.9)])
    assert picks["best"] == picks["challenger"]
    assert picks["best"]["tuning_speedup"] == pytest.approx(1.0 / 0.8)


def test_a_retimed_log_is_judged_by_its_retimed_passes(fb: ModuleType, task: Task) -> None:
    default, a, b = configs(task)
    # a's lucky first sample (0.5) would win; the re-timing round (default 1.0, a 1.2, b 0.9) is what counts,
    # as for ApplyBest, which applies the config the re-timing ranked first.
    log = [rec(task, default, 1.0), rec(task, a, 0.5), rec(task, b, 0.95),
           rec(task, default, 1.0, RETIMED, "round-1", 10.0), rec(task, a, 1.2, RETIMED, "round-1", 10.0),
           rec(task, b, 0.9, RETIMED, "round-1", 10.0)]
    picks = fb.contenders(task, log)
    assert template_for(task).space.from_dict(picks["best"]["config"]).key == b.key
    assert picks["best"]["tuning_speedup"] == pytest.approx(1.0 / 0.9)
    # Only the chosen config's records go to the build, so ApplyBest applies exactly that config.
    chosen = fb.picked_records(log, [task], {task.key: picks}, "best")
    assert chosen and {r.config_key for r in chosen} == {b.key}


def test_a_log_without_a_successful_measurement_is_named(fb: ModuleType, task: Task) -> None:
    default, _, _ = configs(task)
    failed = Record.make(task, default, "error", [], "s", detail="build failed")
    with pytest.raises(RuntimeError, match="no successful measurement"):
        fb.contenders(task, [failed])


def test_the_fused_node_and_the_bare_kernel_are_both_re_timed(fb: ModuleType, task: Task) -> None:
    """A task with an epilogue is re-timed as the fused node (``model``, the tuner's measurement) and as the bare
    kernel (``bare``, the measurement before), each pick beside the default; a wrong result of either raises."""
    fused = task.with_epilogue("bias+add+relu")
    default, a, _ = configs(fused)
    picks = fb.contenders(fused, [rec(fused, default, 1.0), rec(fused, a, 0.9)])
    got = fb.predict(fused, picks, 1, ("model", "bare"), 1 << 20)
    for which in ("model", "bare"):
        c = got["best"][which]
        assert 0 < c["default"] < 1 and 0 < c["config"] < 1 and c["speedup"] == pytest.approx(c["default"] / c["config"])
    assert "cold" not in got["best"] and set(fb.predicted_speedups(got["best"])) == {"log", "model", "bare"}


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_a_spilling_pick_is_dropped_for_the_next_clean_one(fb: ModuleType) -> None:
    """``--max-spill-reloads``: the stem's 2 x 14 tile (AVX-512, 17 reloads) leads the log; the spill-aware
    judge drops it and picks the fastest config that does not spill over the limit; the default stays."""
    wl = {"n": 1, "ic_outer": 3, "h": 56, "w": 56, "ic_block": 1, "oc_outer": 2, "kh": 3, "kw": 3,
          "oc_block": 16, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}
    stem = make_task("conv2d_nchwc", wl, "llvm -mcpu=skylake-avx512")
    space, default = template_for(stem).space, template_for(stem).default()
    wide = space.from_dict(dict(default.to_dict(), ow_block=14))
    narrow = space.from_dict(dict(default.to_dict(), ow_block=4))
    log = [rec(stem, default, 1.0), rec(stem, wide, 0.7), rec(stem, narrow, 0.9)]
    kept, dropped = fb.without_spilling(stem, log, 2)
    assert list(dropped) == [wide.key] and dropped[wide.key] > 2
    picks = fb.contenders(stem, kept)
    assert picks["best"]["config"] == narrow.to_dict()
    kept_all, none = fb.without_spilling(stem, log, 100)
    assert none == {} and fb.contenders(stem, kept_all)["best"]["config"] == wide.to_dict()
