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


def test_a_round_of_more_passes_ranks_each_config_by_its_median(cpu_task: Task) -> None:
    # Config 1 has one slow pass of five (a burst of load), config 0 is steadily slower: with the slowest
    # pass config 0 would win, with the median (the upper median: for two passes, the slower) config 1 does.
    round1 = [_rec(cpu_task, 1, c, RETIMED, "round 1", t) for t, c in enumerate((1.0, 1.1, 9.0, 1.0, 1.2))]
    round1 += [_rec(cpu_task, 0, c, RETIMED, "round 1", 10 + t) for t, c in enumerate((2.0, 2.1, 2.0, 2.2, 2.0))]
    standing = ranked(round1)
    assert standing[_config(cpu_task, 1).key].cost == 1.1 and standing[_config(cpu_task, 0).key].cost == 2.0
    assert best_record(round1).config_key == _config(cpu_task, 1).key
    two = [_rec(cpu_task, 1, 1.0, RETIMED, "round 1", 0), _rec(cpu_task, 1, 3.0, RETIMED, "round 1", 1)]
    assert ranked(two)[_config(cpu_task, 1).key].cost == 3.0  # two passes: the slower, as before


def test_retime_again_times_the_leaders_and_an_unmeasured_default(tmp_path, cpu_task: Task) -> None:
    """A finished log (nothing new to measure) gets a new round with ``retime_again``, of the requested number
    of passes, and the default is a leader even when the log never measured it (a default rule changed)."""
    db = Database(tmp_path / "t.jsonl")
    template = template_for(cpu_task)
    others = [i for i in range(len(template.space.legal_indices()))
              if _config(cpu_task, i).key != template.default().key][:2]
    for i, cost in zip(others, (1e-3, 2e-3)):
        db.append(Record.make(cpu_task, _config(cpu_task, i), "ok", [cost], "s", "", "xgb"))
    with LocalExecutor(workers=1) as ex:
        m = Measurer(cpu_task, ex, MeasureOptions(repeats=2, warmup=1))
        assert template.default().key in {c.key for c in leaders(db, m, 1)}
        tune_task(make_tuner("random", m.template, seed=1), m, db, trials=1, retime=2, retime_passes=3)
        assert {r.detail for r in db.of_task(cpu_task) if r.tuner == RETIMED} == {"round 1"}
        tune_task(make_tuner("random", m.template, seed=1), m, db, trials=1, retime=2)
        assert {r.detail for r in db.of_task(cpu_task) if r.tuner == RETIMED} == {"round 1"}  # nothing new
        tune_task(make_tuner("random", m.template, seed=1), m, db, trials=1, retime=2, retime_passes=3,
                  retime_again=True)
    rounds = [r for r in read_log(tmp_path / "t.jsonl") if r.tuner == RETIMED]
    assert {r.detail for r in rounds} == {"round 1", "round 2"}
    round2 = [r for r in rounds if r.detail == "round 2"]
    assert len(round2) == 3 * 2 and template.default().key in {r.config_key for r in round2}
