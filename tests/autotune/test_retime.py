"""Re-timing the leaders: a lucky first sample in the log cannot name the best config (issue 28)."""

from __future__ import annotations

import math

from vdla.compiler.autotune.database import RETIMED, ApplyBest, Database, Record, best_record, ranked, read_log
from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import MeasureOptions, Measurer
from vdla.compiler.autotune.task import Task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.autotune.tuner import make_tuner, tune_task
from vdla.compiler.autotune.tuner.retime import leaders, retime_leaders


def _config(task: Task, index: int):
    space = template_for(task).space
    return space.get(space.legal_indices()[index])


def _rec(task: Task, index: int, cost: float, tuner: str = "xgb", detail: str = "", at: float = 0.0) -> Record:
    r = Record.make(task, _config(task, index), "ok", [cost], "s", detail, tuner)
    return Record(r.task, r.config, r.config_key, r.status, r.costs, r.unit, r.detail, r.tuner, r.measured_on, at)


def test_the_latest_round_decides_each_config_by_its_slower_pass(cpu_task: Task) -> None:
    search = [_rec(cpu_task, 0, 2.0), _rec(cpu_task, 1, 1.0), _rec(cpu_task, 2, 1.5)]
    assert best_record(search).config_key == search[1].config_key  # before re-timing: the fastest sample
    round1 = [_rec(cpu_task, 1, 1.9, RETIMED, "round 1", 10), _rec(cpu_task, 0, 1.8, RETIMED, "round 1", 11),
              _rec(cpu_task, 1, 2.4, RETIMED, "round 1", 12), _rec(cpu_task, 0, 1.7, RETIMED, "round 1", 13)]
    standing = ranked(search + round1)
    assert set(standing) == {search[0].config_key, search[1].config_key}  # config 2 was not a leader
    assert standing[search[1].config_key].cost == 2.4 and standing[search[0].config_key].cost == 1.8
    assert best_record(search + round1).config_key == search[0].config_key
    round2 = [_rec(cpu_task, 1, 1.0, RETIMED, "round 2", 20), _rec(cpu_task, 0, 3.0, RETIMED, "round 2", 21)]
    assert best_record(search + round1 + round2).config_key == search[1].config_key  # only the latest round


def test_apply_best_follows_the_retimed_round(cpu_task: Task) -> None:
    records = [_rec(cpu_task, 1, 1e-9), _rec(cpu_task, 0, 2.0),
               _rec(cpu_task, 1, 3.0, RETIMED, "round 1", 5), _rec(cpu_task, 0, 2.0, RETIMED, "round 1", 6)]
    apply = ApplyBest(records, target="llvm")
    knobs = apply.query(cpu_task.kind, cpu_task.wl)
    assert knobs == template_for(cpu_task).knobs(_config(cpu_task, 0))


def test_a_lucky_sample_is_timed_again_beside_the_default(tmp_path, cpu_task: Task) -> None:
    """A record claiming 1 ns (no kernel runs that fast: a lucky or corrupted sample) leads the search; the
    re-timing round measures it for real beside the default, and the log's best is then a real time."""
    db = Database(tmp_path / "t.jsonl")
    template = template_for(cpu_task)
    lucky = next(i for i in range(len(template.space.legal_indices()))
                 if _config(cpu_task, i).key != template.default().key)
    with LocalExecutor(workers=1) as ex:
        m = Measurer(cpu_task, ex, MeasureOptions(repeats=3, warmup=1))
        db.append(Record.make(cpu_task, _config(cpu_task, lucky), "ok", [1e-9], "s", "", "xgb"))
        tune_task(make_tuner("random", m.template, seed=1), m, db, trials=3, batch=2, retime=0)
        assert db.best(cpu_task).cost == 1e-9  # without re-timing the lucky sample names the best
        assert template.default().key in {c.key for c in leaders(db, m, 2)}
        best = retime_leaders(db, m, k=2)
    round1 = [r for r in read_log(tmp_path / "t.jsonl") if r.tuner == RETIMED]
    assert {r.detail for r in round1} == {"round 1"}
    assert len(round1) == 2 * len({r.config_key for r in round1}) >= 4  # two passes over leaders + default
    assert best is not None and best.tuner == RETIMED and math.isfinite(best.cost) and best.cost > 1e-7
    assert ranked(db.of_task(cpu_task))[_config(cpu_task, lucky).key].cost > 1e-7


def test_cycle_counted_tasks_are_not_retimed(tmp_path, vdla_task: Task, hw_config: dict) -> None:
    db = Database(tmp_path / "v.jsonl")
    with LocalExecutor(workers=1) as ex:
        m = Measurer(vdla_task, ex, hw_config=hw_config)
        tune_task(make_tuner("random", m.template), m, db, trials=2, batch=2)
    assert not any(r.tuner == RETIMED for r in db.of_task(vdla_task))
