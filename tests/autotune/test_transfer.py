"""Transfer learning: a model trained on the log of one task ranks another shape's configs."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np

from vdla.compiler.autotune.database import Record
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import Template, template_for
from vdla.compiler.autotune.tuner import XGBTuner


def _measured(task: Task, hw_config: dict, count: int) -> tuple[Template, list[int], list[float]]:
    """``count`` legal configs spread over the space, with their real cycle-model cycles."""
    template = template_for(task, hw_config)
    legal = template.space.legal_indices()
    picks = legal[:: max(1, len(legal) // count)][:count]
    cycles = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in picks:
            artifact = template.build(template.space.get(i), Path(tmp))
            cycles.append(template.run(artifact, check=False, repeats=1, warmup=0, flush_bytes=0).costs[0])
    return template, picks, cycles


def _concordance(scores: np.ndarray, costs: list[float]) -> float:
    """The share of config pairs of different cost that the scores order correctly (0.5: chance)."""
    pairs = [(a, b) for a, b in itertools.combinations(range(len(costs)), 2) if costs[a] != costs[b]]
    right = sum((scores[a] > scores[b]) == (costs[a] < costs[b]) for a, b in pairs)
    return right / len(pairs)


def test_model_from_another_shapes_log_ranks_configs_better_than_chance(hw_config: dict,
                                                                         small_vdla_conv: dict) -> None:
    seen = make_task("vdla_conv2d", dict(small_vdla_conv, h=6, w=6))
    unseen = make_task("vdla_conv2d", dict(small_vdla_conv, oc=64, h=8, w=8))
    a, a_picks, a_cycles = _measured(seen, hw_config, 12)
    log = [Record.make(seen, a.space.get(i), "ok", [c], a.unit, features=a.features(a.space.get(i)))
           for i, c in zip(a_picks, a_cycles)]
    b, b_picks, b_cycles = _measured(unseen, hw_config, 12)
    b.prior_feature = None  # what is tested is the learned model, not the tiling's analytic estimate
    tuner = XGBTuner(b, seed=0, transfer=log, exhaustive=0)
    assert not tuner.costs and tuner.model is not None  # nothing of the unseen task was measured
    scores = tuner.predict(b_picks)
    assert _concordance(scores, b_cycles) >= 0.8  # chance: 0.5 (a model of the same log, shuffled: 0.44-0.70)
