"""The search side of ``bench/tuner.py``: its reduced C2 task (measured whole), the ground truth's cost
rule, and a tuner searching a table restricted to the measured pool.

The benchmark itself measures hundreds of configs (tens of minutes); these tests check, on the real
``conv2d_nchwc`` space and a table of made-up costs, the parts that decide what is measured and how the
trials to a target are counted.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for


#: The target of the benchmark's tables (docs/autotune.md), given by its features so that an AVX2-only host
#: builds the same 512-bit spaces (its own C2 space, 16 registers, holds fewer than the pool's 1,000 configs).
AVX512 = "llvm -mcpu=znver4 -mattr=+avx512f,+avx2,+fma"


@pytest.fixture(scope="module")
def tb(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("tuner")


def test_reduced_c2_has_c2s_knobs_and_a_space_small_enough_to_measure_whole(tb: ModuleType) -> None:
    full = template_for(make_task("conv2d_nchwc", tb.C2_CPU, target=AVX512), None).space
    small = template_for(make_task("conv2d_nchwc", tb.C2_SMALL, target=AVX512), None).space
    assert [a.name for a in small.axes] == [a.name for a in full.axes]
    legal = small.legal_indices()
    # Exhaustive under the default --pool (1,000): the pool is then the whole legal space.
    assert 100 <= len(legal) <= 1000 < len(full.legal_indices())
    algorithms = {small.get(i).to_dict()["algorithm"] for i in legal}
    assert {"direct", "winograd_2", "winograd_4", "winograd_5"} <= algorithms


def test_cost_is_the_median_of_each_rounds_fastest_repeat(tb: ModuleType) -> None:
    # Three rounds of 5 repeats; round minima 1.0, 3.0, 2.0 -> median 2.0 (not the overall minimum 1.0).
    samples = [5.0, 1.0, 4.0, 4.0, 4.0, 3.0, 9.0, 9.0, 9.0, 9.0, 2.0, 8.0, 8.0, 8.0, 8.0]
    assert tb._cost(samples, 5) == 2.0
    assert tb._cost(samples[:5] + [math.inf], 5) == math.inf  # a failed round fails the config
    assert tb.trials_to([9.0, 4.0, 4.0, 2.0], 4.0) == 2
    assert tb.trials_to([9.0, 4.0], 1.0) == 3  # never reached: the curve's length + 1


@pytest.mark.parametrize("tuner", ["random", "ga", "xgb", "xgb-noprior"])
def test_each_tuner_searches_only_the_pool_until_it_finds_the_best(tb: ModuleType, tuner: str) -> None:
    template = template_for(make_task("conv2d_nchwc", tb.C2_SMALL), None)
    space = template.space
    pool = random.Random(3).sample(space.legal_indices(), 40)
    rng = random.Random(4)
    costs = {i: rng.uniform(1.0, 2.0) for i in pool}
    tb.restrict(template, set(costs))
    space = template.space  # restrict() replaced it: legal only on the pool
    outside = next(i for i in range(space.size) if i not in costs)
    assert space.why_illegal(space.get(outside)) is not None
    assert set(space.legal_indices()) == set(costs)
    features = {i: template.features(space.get(i)) for i in costs}
    reference = min(costs.values())
    curve = tb.search(tuner, template, costs, 0, 8, features, reference)  # a trial outside the pool: KeyError
    assert curve[-1] == reference and len(curve) <= len(costs)
    assert all(b <= a for a, b in zip(curve, curve[1:]))
    assert len(curve) - 8 < tb.trials_to(curve, reference) <= len(curve)  # found in the last batch of 8
    assert np.isfinite(curve).all()


def test_prior_agreement_ranks_the_pool_by_the_templates_estimate(tb: ModuleType) -> None:
    template = template_for(make_task("conv2d_nchwc", tb.C2_SMALL), None)
    pool = random.Random(5).sample(template.space.legal_indices(), 60)
    features = {i: template.features(template.space.get(i)) for i in pool}
    prior = {i: float(features[i][template.prior_feature]) for i in pool}
    # Costs in the prior's order: rank correlation 1, the best config first in the prior's order.
    agree = tb.prior_agreement(template, {i: 2.0 ** p for i, p in prior.items()}, features, 2.0 ** min(prior.values()))
    assert agree["spearman"] == pytest.approx(1.0) and agree["ranks_within_95"][0] == 1
    # Reversed: -1, and the best config is last but its ties.
    worst = max(prior.values())
    flipped = tb.prior_agreement(template, {i: 2.0 ** -p for i, p in prior.items()}, features, 2.0 ** -worst)
    assert flipped["spearman"] == pytest.approx(-1.0)
    ties = sum(p == worst for p in prior.values())
    assert flipped["ranks_within_95"][0] == len(pool) - ties + 1
    assert list(tb._average_ranks(np.asarray([3.0, 1.0, 2.0, 2.0]))) == [4.0, 1.0, 2.5, 2.5]


def test_xgb_first_batch_holds_the_priors_best_in_a_space_too_big_to_score_whole(tb: ModuleType) -> None:
    from vdla.compiler.autotune.tuner import make_tuner

    template = template_for(make_task("conv2d_nchwc", tb.C2_CPU, target=AVX512), None)
    pool = random.Random(6).sample(template.space.legal_indices(), 200)
    tb.restrict(template, set(pool))  # 200 legal of 36,864: one-knob steps rarely land on another
    tuner = make_tuner("xgb", template, 0)
    assert tuner.small_space() is None  # scored by the annealing walk, not whole
    estimate = {i: template.prior_estimate(template.space.get(i)) for i in pool}
    first = min(estimate.values())
    assert tuner.by_prior()[0] in pool and estimate[tuner.by_prior()[0]] == first
    batch = tuner.next_batch(8)
    assert any(estimate[i] == first for i in batch)


def test_a_space_measured_whole_times_every_config_in_rounds_and_caches_them_per_replicate(
        tb: ModuleType, executor, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vdla.compiler.autotune.measure import MeasureOptions, Measurer

    monkeypatch.setenv("VDLA_CACHE_DIR", str(tmp_path))
    measurer = Measurer(make_task("conv2d_nchwc", tb.C2_SMALL), executor, MeasureOptions(repeats=5))
    template = measurer.template
    pool = random.Random(7).sample(template.space.legal_indices(), 4)
    tb.restrict(template, set(pool))
    costs = tb.measure_whole("c2small", measurer, 2, 3, "t")
    assert set(costs) == set(pool) and all(0 < c < 1 for c in costs.values())  # seconds of real runs
    path = tb._cache_path(measurer.task, template.space, "whole repeats=3 replicate=t")
    cached = json.loads(path.read_text())
    assert sorted(len(v) for v in cached.values()) == [6] * 4  # 2 rounds of 3 repeats each
    for i, c in costs.items():
        assert c == tb._cost(cached[template.space.get(i).key], 3)
    # Another method, another file; the pool rule's file (no method) is the one written before methods existed.
    assert path != tb._cache_path(measurer.task, template.space, "whole repeats=3 replicate=u")
    assert tb._cache_path(measurer.task, template.space) != path
    # A rerun measures nothing: the cached samples answer it.
    before = path.stat().st_mtime_ns
    assert tb.measure_whole("c2small", measurer, 2, 3, "t") == costs and path.stat().st_mtime_ns == before
    # Fewer rounds: the first ones.
    first = tb.measure_whole("c2small", measurer, 1, 3, "t")
    assert all(c == tb._cost(cached[template.space.get(i).key][:3], 3) for i, c in first.items())
    # Two replicates pooled: the second is measured, then each config's 4 rounds give its cost.
    pooled = tb.measure_whole("c2small", measurer, 2, 3, "t+u")
    other = json.loads(tb._cache_path(measurer.task, template.space, "whole repeats=3 replicate=u").read_text())
    for i, c in pooled.items():
        key = template.space.get(i).key
        assert len(other[key]) == 6 and c == tb._cost(cached[key] + other[key], 3)


def test_round_spread_is_the_interquartile_range_of_round_minima_over_their_median(tb: ModuleType) -> None:
    # Round minima 1, 2, 3, 4, 5 (two repeats a round): quartiles 1.5 and 4.5 (exclusive method), median 3.
    samples = [1.0, 9.0, 2.0, 9.0, 9.0, 3.0, 4.0, 8.0, 5.0, 7.0]
    assert tb.round_spread(samples, 2) == pytest.approx((4.5 - 1.5) / 3)
    assert tb.round_spread([2.0, 2.0, 2.0, 2.0, 2.0, 2.0], 2) == 0.0


def test_spearman_of_a_monotone_map_is_one_and_of_its_reverse_minus_one(tb: ModuleType) -> None:
    x = np.asarray([3.0, 1.0, 2.0, 7.0])
    assert tb.spearman(x, np.exp(x)) == pytest.approx(1.0)
    assert tb.spearman(x, -x ** 3) == pytest.approx(-1.0)


def test_tuner_prior_scores_a_table_in_the_priors_order_and_compares_two_measurements(
        tb: ModuleType, bench_script: Callable[[str], ModuleType]) -> None:
    tp = bench_script("tuner_prior")
    template = template_for(make_task("conv2d_nchwc", tb.C2_SMALL), None)
    space = template.space
    keys = [space.get(i).key for i in random.Random(8).sample(space.legal_indices(), 50)]
    prior = dict(zip(keys, tp.prior_of(template, keys)))
    # Costs in the prior's order: Spearman 1, its first pick the best.
    agree = tp.agreement(template, {k: 2.0 ** p for k, p in prior.items()})
    assert agree["spearman"] == pytest.approx(1.0) and agree["ranks_within_95"][0] == 1
    assert agree["first_picks"][0] == 1.0 and agree["first_pick_within_95"] >= 1
    # Two measurements: b is a, 10% slower, with its best and its 26th swapped; the 95% sets are the best
    # of each (the rest 3x away or more), not the same config.
    a = {k: 1.0 + 2.0 * n for n, k in enumerate(keys)}
    b = {k: 1.1 * v for k, v in a.items()}
    b[keys[0]], b[keys[25]] = b[keys[25]], b[keys[0]]
    twin = tp.reproducibility(a, b)
    assert twin["within_95"] == [1, 1] and twin["shared_95"] == 0 and twin["overlap_95"] == 0.0
    assert twin["best_ratio"] == pytest.approx(1.1) and not twin["best_a_in_b_95"]
    assert twin["margins"]["0.8"]["within"] == [1, 1]
    # Spearman with two ranks 25 apart of 50: 1 - 6 (2 x 25^2) / (50 (50^2 - 1)).
    assert twin["spearman"] == pytest.approx(1 - 6 * 2 * 25 ** 2 / (50 * (50 ** 2 - 1)), abs=1e-3)


@pytest.mark.parametrize("argv, cause", [
    (["--gt-replicate", "b"], "give --gt-rounds N too"),
    (["--gt-rounds", "3", "--gt-replicate", "a+"], "names joined by '+'"),
])
def test_a_bad_ground_truth_replicate_is_refused_before_any_work(argv: list[str], cause: str) -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "tuner.py"
    run = subprocess.run([sys.executable, str(script), "--tasks", "c2small", *argv], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and cause in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
