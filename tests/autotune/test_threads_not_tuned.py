"""Threads are not a knob: the CPU tuner measures on one thread, so tuned kernels keep the schedule's
parallel loops, and a log written while ``parallel`` was a knob still resumes and applies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.autotune.database import ApplyBest, Database, read_log
from vdla.compiler.autotune.dispatch import dispatching
from vdla.compiler.autotune.session import tune_tasks
from vdla.compiler.autotune.task import Task, extract_tasks, make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.codegen.llvm import parallel
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model

WORKLOADS = {
    "conv2d_nchwc": {"n": 1, "ic_outer": 1, "h": 8, "w": 8, "ic_block": 16, "oc_outer": 2, "kh": 3, "kw": 3,
                     "oc_block": 16, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1},
    "depthwise_conv2d_nchw": {"n": 1, "c": 8, "h": 8, "w": 8, "kh": 3, "kw": 3, "stride_h": 1, "stride_w": 1,
                              "pad_h": 1, "pad_w": 1},
    "depthwise_conv2d_nchwc": {"n": 1, "c_outer": 2, "h": 8, "w": 8, "c_block": 16, "kh": 3, "kw": 3,
                               "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1},
    "dense_pack": {"m": 1, "k": 32, "n": 10, "n_block": 16},
    "pool2d": {"n": 1, "c": 1, "c_block": 16, "h": 9, "w": 9, "kh": 3, "kw": 3, "stride_h": 2, "stride_w": 2,
               "pad_h": 1, "pad_w": 1, "avg": 0, "count_include_pad": 0},
    "elementwise": {"outer": 64, "inner": 16, "streams": 2},
    "batch_matmul": {"batch_a": 2, "batch_b": 2, "m": 16, "k": 16, "n": 16},
}


@pytest.mark.parametrize("kind", sorted(WORKLOADS))
def test_no_cpu_space_has_a_thread_knob_and_every_config_keeps_the_default_threads(kind: str) -> None:
    template = template_for(make_task(kind, WORKLOADS[kind]))
    assert "parallel" not in template.space.names
    default = template.knobs(template.default()).parallel
    assert default is True  # these workloads are ones the lowering parallelises
    assert {template.knobs(c).parallel for c in template.space} == {default}


def test_batched_matmul_keeps_the_lowerings_thread_choice() -> None:
    # One batch: the lowering runs it on one thread (its heuristic); every config keeps that.
    template = template_for(make_task("batch_matmul", dict(WORKLOADS["batch_matmul"], batch_a=1, batch_b=1)))
    assert {template.knobs(c).parallel for c in template.space} == {False}


def _old_record(task: Task, config: dict, cost: float) -> str:
    """A log line as `vdla tune` wrote it while ``parallel`` was a knob (its key names it too)."""
    key = ",".join(f"{k}={v}" for k, v in config.items())
    return json.dumps({"format": "vdla-tuning-log", "version": 1, "task": task.to_json(), "task_key": task.key,
                       "config": config, "config_key": key, "status": "ok", "costs": [cost, cost, cost],
                       "unit": "s", "detail": "", "tuner": "xgb", "measured_on": task.host, "timestamp": 0.0,
                       "features": []})


def test_an_old_log_with_the_parallel_knob_applies_and_resumes(tmp_path: Path, cpu_task: Task, executor) -> None:
    template = template_for(cpu_task)
    default = template.default().to_dict()
    legal = template.space.legal_indices()
    other = next(template.space.get(i) for i in legal if template.space.get(i).to_dict() != default).to_dict()
    log = tmp_path / "old.jsonl"
    # The default twice (both values of the removed knob: one config now) and another config, the best.
    log.write_text("".join(_old_record(cpu_task, dict(c, parallel=p), cost) + "\n" for c, p, cost in
                           ((default, False, 3e-3), (default, True, 2e-3), (other, False, 1e-3))))

    apply = ApplyBest(read_log(log))
    knobs = apply.query(cpu_task.kind, cpu_task.wl)
    assert apply.applied == {cpu_task.name: template.space.from_dict(other).key}
    assert knobs == template.knobs(template.space.from_dict(other)) and knobs.parallel is True

    outcome, = tune_tasks([cpu_task], Database(log), executor, trials=3, tuner="random", batch=2, quiet=True,
                          retime=0)  # re-timing is tested in test_retime.py
    records = read_log(log)
    # The two old configs count as measured: exactly one new config, neither of them, without the stale key.
    assert len(records) == 4
    new = records[3].config
    assert "parallel" not in new and new not in (default, other)
    assert outcome.default_cost == pytest.approx(2e-3)  # the old default's best record, found by its config
    assert outcome.best is not None and outcome.best.cost <= 1e-3


def _two_convs() -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "float32")
    w = lambda *s: b.const((rng.standard_normal(s) * 0.2).astype(np.float32))
    y = b.op("relu", [b.op("conv2d", [x, w(32, 16, 3, 3)], "c1", padding=(1, 1, 1, 1))])
    y = b.op("relu", [b.op("conv2d", [y, w(32, 32, 3, 3)], "c2", padding=(1, 1, 1, 1))])
    return b.build([y]), rng.standard_normal((1, 16, 8, 8)).astype(np.float32)


def _parallel_bodies(ir: str) -> list[str]:
    """The parameter lists of the outlined parallel-loop bodies (what runs on libgomp's team)."""
    return re.findall(r'define internal void @"[^"]*_par\d+_body"\(([^)]*)\)', ir)


def test_a_tuned_model_runs_its_conv_kernels_on_all_threads(tmp_path: Path, executor,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The 8 x 8 convs are far below the size the codegen runs serially (tests/codegen/test_parallel_threshold.py);
    # here every parallel loop the tuned schedule keeps must become a libgomp region.
    monkeypatch.setattr(parallel, "MIN_PARALLEL_WORK", 0)
    graph, x = _two_convs()
    c1, c2 = (t for t in extract_tasks(graph) if t.kind == "conv2d_nchwc")
    log = tmp_path / "tune.jsonl"
    db = Database(log)
    tune_tasks([c1], db, executor, trials=3, tuner="random", batch=2, quiet=True)
    # c2's best comes from an old log whose tuner picked parallel=False (noise on one thread).
    template = template_for(c2)
    best_old = template.space.get(template.space.legal_indices()[0]).to_dict()
    with log.open("a") as f:
        f.write(_old_record(c2, dict(best_old, parallel=False), 1e-9) + "\n")

    apply = ApplyBest(read_log(log))
    with dispatching(apply):
        compiled = build_model(graph)
    assert apply.applied[c1.name] == db.best(c1).config_key
    assert apply.applied[c2.name] == template.space.from_dict(best_old).key
    # Each conv's reduction (the loop reading its weights) runs inside a parallel region (a `vdla_parallel` call).
    bodies = _parallel_bodies(compiled.llvm_module.ir_text)
    for conv in ("c1", "c2"):
        assert any(f'%"{conv}_w' in params for params in bodies), f"{conv} runs on one thread: {bodies}"
    np.testing.assert_allclose(compiled.run({"x": x})[0], build_model(graph).run({"x": x})[0], rtol=1e-4,
                               atol=1e-5)
