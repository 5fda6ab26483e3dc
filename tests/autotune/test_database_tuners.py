"""The tuning log (append-only, resumable, apply-best) and the tuners on real measurements."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vdla.compiler.autotune.database import ApplyBest, Database, Record, read_log
from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import Measurer
from vdla.compiler.autotune.space import Config, ConfigSpace
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.autotune.tuner import TUNERS, XGBTuner, make_tuner, tune_task
from vdla_hw.errors import BadFileError


def _record(task: Task, hw_config: dict, index: int, cost: float) -> Record:
    template = template_for(task, hw_config)
    config = template.space.get(template.space.legal_indices()[index])
    return Record.make(task, config, "ok", [cost], template.unit, features=template.features(config))


def test_log_is_append_only_and_survives_a_cut_last_line(tmp_path, vdla_task: Task, hw_config: dict) -> None:
    path = tmp_path / "tune.jsonl"
    db = Database(path)
    db.append(_record(vdla_task, hw_config, 0, 500.0))
    db.append(_record(vdla_task, hw_config, 1, 300.0))
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:40])  # a writer killed mid-line
    again = Database(path)
    assert [r.cost for r in again.records] == [500.0, 300.0]
    again.append(_record(vdla_task, hw_config, 2, 400.0))
    assert [r.cost for r in read_log(path)] == [500.0, 300.0, 400.0]
    assert again.best(vdla_task).cost == 300.0
    assert len(again.measured_keys(vdla_task)) == 3
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    with pytest.raises(BadFileError, match=r"tune.jsonl:2"):
        read_log(path)


def test_apply_best_gives_the_best_knobs_and_names_fallbacks(vdla_task: Task, hw_config: dict,
                                                             small_vdla_conv: dict) -> None:
    records = [_record(vdla_task, hw_config, 0, 500.0), _record(vdla_task, hw_config, 3, 200.0)]
    apply = ApplyBest(records, target="vdla")
    knobs = apply.query("vdla_conv2d", vdla_task.wl)
    template = template_for(vdla_task, hw_config)
    assert knobs == template.knobs(template.space.from_dict(records[1].config))
    other = dict(small_vdla_conv, oc=64)
    assert apply.query("vdla_conv2d", other) is None
    assert list(apply.fallbacks.values()) == ["not in the log (for this target and host)"]
    assert apply.query("conv2d_nchwc", {"n": 1}) is None  # a CPU kernel of a VDLA model: not this target's task


def _restricted(template, keep: int):  # type: ignore[no-untyped-def]
    """``template`` with only ``keep`` of its legal configs left legal (a small space)."""
    space = template.space
    members = set(space.legal_indices()[::3][:keep])

    def legal(c: Config) -> None:
        if space.index_of(c) not in members:
            raise ValueError("outside the subset")

    template._space = ConfigSpace(space.axes, legal)
    return template


@pytest.mark.parametrize("name", TUNERS + ("xgb-whole",))
def test_tuners_propose_unique_legal_unvisited_configs(name: str, vdla_task: Task, hw_config: dict) -> None:
    template = template_for(vdla_task, hw_config)
    if name == "xgb-whole":
        template = _restricted(template, 40)
    tuner = make_tuner(name.split("-")[0], template, seed=1)
    if isinstance(tuner, XGBTuner):
        tuner.sa_steps = 4  # keeps the test short; the walk itself is what is exercised
        # "xgb" walks with annealing; "xgb-whole" has a space small enough to be scored whole.
        tuner.exhaustive = 64 if name == "xgb-whole" else 0
        assert (tuner.small_space() is None) == (name == "xgb")
    legal = set(template.space.legal_indices())
    first = tuner.next_batch(6)
    assert len(first) == len(set(first)) == 6 and set(first) <= legal
    costs = [1000.0 + 10 * k for k in range(6)]
    tuner.update(first, costs)
    second = tuner.next_batch(6)
    assert len(second) == len(set(second)) == 6 and set(second) <= legal and not set(second) & set(first)


def test_xgb_learns_from_similar_tasks_before_measuring(vdla_task: Task, hw_config: dict,
                                                        small_vdla_conv: dict) -> None:
    other = make_task("vdla_conv2d", dict(small_vdla_conv, oc=64))
    transfer = [_record(other, hw_config, k, 100.0 + k) for k in range(8)]
    template = template_for(vdla_task, hw_config)
    tuner = XGBTuner(template, seed=0, transfer=transfer, sa_steps=6, exhaustive=0)
    assert tuner.model is not None
    batch = tuner.next_batch(4)
    assert len(set(batch)) == 4
    assert np.isfinite(tuner.predict(batch)).all()


def test_tune_task_measures_default_first_and_resumes_without_remeasuring(tmp_path, vdla_task: Task,
                                                                           hw_config: dict) -> None:
    path = tmp_path / "t.jsonl"
    with LocalExecutor(workers=2) as ex:
        m = Measurer(vdla_task, ex, hw_config=hw_config)
        db = Database(path)
        tune_task(make_tuner("random", m.template), m, db, trials=3, batch=2)
        first = read_log(path)
        assert first[0].config == m.template.default().to_dict()
        db = Database(path)
        best = tune_task(make_tuner("ga", m.template, seed=5), m, db, trials=6, batch=3)
    records = read_log(path)
    assert [r.config_key for r in records[:3]] == [r.config_key for r in first]
    assert len(records) == 6 and len({r.config_key for r in records}) == 6
    assert best.cost == min(r.cost for r in records) <= records[0].cost
    assert all(json.loads(line)["task_key"] == vdla_task.key for line in path.read_text().splitlines())


def test_a_spent_time_budget_leaves_each_task_its_first_batch(tmp_path, vdla_task: Task, hw_config: dict,
                                                               small_vdla_conv: dict) -> None:
    from vdla.compiler.autotune.session import tune_tasks

    tasks = [vdla_task, make_task("vdla_conv2d", dict(small_vdla_conv, oc=64))]
    db = Database(tmp_path / "t.jsonl")
    with LocalExecutor(workers=2) as ex:
        outcomes = tune_tasks(tasks, db, ex, trials=6, tuner="random", batch=2, hw_config=hw_config, quiet=True,
                              budget_s=1e-9)
    for task, outcome in zip(tasks, outcomes):
        records = db.of_task(task)
        # The budget is spent before the second batch of every task: the default and one more, no further.
        assert len(records) == 2 and records[0].config == template_for(task, hw_config).default().to_dict()
        assert outcome.best is not None


def test_xgb_batches_trade_score_for_diversity(vdla_task: Task, hw_config: dict) -> None:
    import itertools

    from vdla.compiler.vdla.topi import estimate_cycles

    def spread(diversity: float) -> tuple[list[int], float]:
        template = _restricted(template_for(vdla_task, hw_config), 60)
        tuner = XGBTuner(template, seed=0, diversity=diversity, epsilon=0.0, exhaustive=64)
        first = tuner.small_space()[:8]
        # Costs from the tiling model stand in for measurements: what is tested is the batch selection.
        tuner.update(first, [estimate_cycles(template.workload, template.knobs(template.space.get(i)),
                                             template.target.config) for i in first])
        batch = tuner.next_batch(8)
        pairs = list(itertools.combinations(batch, 2))
        return batch, sum(tuner._similarity(a, b) for a, b in pairs) / len(pairs)

    greedy, greedy_similarity = spread(0.0)
    diverse, diverse_similarity = spread(1.0)
    assert greedy[0] == diverse[0]  # the best-scored config leads both batches
    assert diverse_similarity < greedy_similarity
