"""Benchmark: how many trials each tuner needs to reach 95% of the best of N random trials, on ResNet-18's
C6 (CPU and VDLA), its C2 (CPU; and C2 on a 7x7 plane at 16 and at 64 channels, each measured whole), its C9 (CPU,
256 channels on 14x14) and a MobileNet depthwise layer.

Per task, a reference pool of N random legal configs (``--pool``, the issue's 1,000; the whole legal
space when it is smaller; the default config always in) is measured for real (CPU: seconds of
single-thread runs; VDLA: cycle-model cycles, checked bit-exactly); the best of the
pool is the reference.  Then each tuner (xgb, random, ga) searches the pool with ``--seeds`` seeds,
every trial answered from the table, starting from nothing (not from the default config), and
the trials it needed to get within 95% of the reference, and to the reference itself, are counted
(median and range over the seeds).  The issue's target: xgb needs at most half of random's trials.
Where the template has an analytic prior, how it orders the pool is reported too (Spearman rank
correlation with the measured costs, its ranks of the configs within 95%).

Measurements are cached per task, config space and config under ``$VDLA_CACHE_DIR/tuner_bench`` (VDLA
cycles do not depend on the host; CPU task keys name the host), so a rerun measures only what is new.  The
CPU ground truth is robust to a shared machine's load: every config is built and timed once (a
round of 5 repeats), then the 24 fastest (``--refine``) and the default are measured in 6 more
rounds (``--rounds``) spread over the run, and a config's cost is the median over its rounds of
each round's fastest repeat -- so the reference is not one lucky (or loaded) sample.  The table
also gives the trials to 90% of the reference, less sensitive to which of a cluster of near-equal
configs the noise puts first.  A VDLA trial of C6 costs ~1-15 s of building and cycle-model time (configs with many small tiles emit many
instructions), so its default pool is 96, not 1,000: the tuners then search that pool, and the
reference is the best of 96 random trials.

Run: ``python bench/tuner.py [--pool 1000] [--vdla-pool 96] [--seeds 25] [--quick] [--out tuner]``; writes
``bench/results/<out>.json`` and a tuning-curve PNG per task, xgb vs random vs ga
(``bench/results/<out>_<task>.png``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)

from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import MeasureOptions, Measurer
from vdla.compiler.autotune.space import Config, ConfigSpace
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import Template
from vdla.compiler.autotune.tuner import XGBTuner, make_tuner
from vdla_hw.config import load_config
from host import host_line, host_record  # noqa: E402

C6_CPU = {"n": 1, "ic_outer": 8, "h": 28, "w": 28, "ic_block": 16, "oc_outer": 8, "kh": 3, "kw": 3,
          "oc_block": 16, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
C2_CPU = dict(C6_CPU, ic_outer=4, h=56, w=56, oc_outer=4)  # ResNet-18's layer1 3x3 conv, 64 -> 64 channels
# C2 reduced to 16 -> 16 channels on a 7x7 plane: the same knobs, but a legal space of a few hundred configs,
# small enough to measure whole (an exhaustive ground truth, where C2's is the best of a random pool).
C2_SMALL = dict(C2_CPU, ic_outer=1, h=7, w=7, oc_outer=1)
# ResNet-18's layer3 3x3 conv, 256 -> 256 channels on 14x14 (C9): a third ground truth, for a prior built
# with C2's and C2 small's tables in view (F(5x5) is the AVX-512 default there, direct/F(4x4) on the others).
C9_CPU = dict(C2_CPU, ic_outer=16, h=14, w=14, oc_outer=16)
# C2's 64 -> 64 channels on a 7x7 plane: a second layer measured whole (910 legal configs), with calls of
# ~40 us, where C2 small's ~12 us leave which configs fall within 5% of the best mostly to timing noise.
C2_MID = dict(C2_CPU, h=7, w=7)
#: The conv2d_nchwc tasks of ``--tasks`` by name: their names in the tables and their workloads.
CONV_TASKS = {"cpu": ("C6 cpu", C6_CPU), "c2": ("C2 cpu", C2_CPU), "c2small": ("C2 small cpu", C2_SMALL),
              "c2mid": ("C2 mid cpu", C2_MID), "c9": ("C9 cpu", C9_CPU)}
C6_VDLA = {"n": 1, "ic": 128, "h": 28, "w": 28, "oc": 128, "kh": 3, "kw": 3, "stride": 1, "pad": 1}
DEPTHWISE = {"n": 1, "c": 144, "h": 56, "w": 56, "kh": 3, "kw": 3, "stride_h": 1, "stride_w": 1, "pad_h": 1,
             "pad_w": 1}
TUNERS = ("xgb", "random", "ga")
RESULTS = Path(__file__).resolve().parent / "results"


def _cache_path(task: Task, space: ConfigSpace, method: str = "") -> Path:
    """The cache file of ``task`` measured over ``space``: a changed space (a knob added, removed or given
    other values) starts a new file, since a config key may then name another program.  ``method`` names
    another way of measuring (:func:`measure_whole`'s rounds, repeats and replicate) and starts its own
    file; the default (empty) keeps the files written before it existed."""
    root = Path(os.environ.get("VDLA_CACHE_DIR", Path.home() / ".cache" / "vdla")) / "tuner_bench"
    axes = json.dumps([[a.name, list(a.values)] for a in space.axes])
    key = f"{task.key}\n{axes}" + (f"\n{method}" if method else "")
    return root / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".json")


def _cost(samples: list[float], repeats: int = 5) -> float:
    """A config's cost from all its samples, stored round after round (``repeats`` per round): the median
    over the rounds of each round's fastest repeat (inf for a failure).  Within a round the fastest repeat
    is the run least slowed by other processes; across rounds spread over time, the median needs most of
    them to be lucky (or loaded) to move, which one lucky sample -- the old reference -- could not."""
    if not samples or not all(math.isfinite(c) for c in samples):
        return math.inf
    return statistics.median(min(samples[k:k + repeats]) for k in range(0, len(samples), repeats))


def _optimistic(samples: list[float]) -> float:
    """The fastest sample: how a config is ranked for re-measurement (a run slowed by another process
    must not keep a fast config out of the ground truth)."""
    return min(samples) if samples and all(math.isfinite(c) for c in samples) else math.inf


def measure_pool(name: str, measurer: Measurer, pool: int, seed: int, refine: int,
                 rounds: int = 4) -> dict[int, float]:
    """Costs of every config of the pool (index -> cost; inf for failures), cached per task.

    CPU configs keep every timed repeat.  The ``refine`` fastest of the pool (ranked by their fastest
    sample) and the default are then measured in ``rounds`` more rounds -- each round a fresh build and
    run of every one of them, so their samples are spread over time and load -- and every config's
    cost is :func:`_cost` of its samples: the reference (the pool's best) is a median over at least
    ``rounds + 1`` rounds, not one noisy run."""
    from tqdm import tqdm

    template = measurer.template
    space = template.space
    legal = space.legal_indices()
    default = space.index_of(template.default())
    rng = random.Random(seed)
    chosen = legal if len(legal) <= pool else sorted(set(rng.sample(legal, pool - 1)) | {default})
    path = _cache_path(measurer.task, space)
    cached: dict[str, list[float]] = json.loads(path.read_text()) if path.exists() else {}
    cached = {k: v if isinstance(v, list) else [v] for k, v in cached.items()}

    def run(indices: list[int], desc: str) -> None:
        with tqdm(total=len(indices), desc=desc, disable=not sys.stderr.isatty()) as bar:
            for k in range(0, len(indices), 8):
                part = indices[k:k + 8]
                for i, r in zip(part, measurer.measure([space.get(i) for i in part])):
                    cached.setdefault(space.get(i).key, []).extend(r.costs if r.cost < math.inf else [math.inf])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(cached))
                bar.update(len(part))

    run([i for i in chosen if space.get(i).key not in cached], f"measure {name}")
    if template.unit == "s":
        repeats = measurer.options.repeats
        ranked = sorted(chosen, key=lambda i: _optimistic(cached[space.get(i).key]))
        top = list(dict.fromkeys(ranked[:refine] + [default]))
        for r in range(rounds):
            again = [i for i in top if len(cached[space.get(i).key]) < (r + 2) * repeats]
            run(again, f"re-measure {name} ({r + 1}/{rounds})")
    repeats = measurer.options.repeats if template.unit == "s" else 1
    return {i: _cost(cached[space.get(i).key], repeats) for i in chosen}


def measure_whole(name: str, measurer: Measurer, rounds: int, repeats: int, replicate: str) -> dict[int, float]:
    """A CPU ground truth of the whole legal space for a layer whose calls are too short for
    :func:`measure_pool`'s rule (index -> cost; inf for failures), cached per task, repeats and
    ``replicate``: a second replicate is an independent measurement of the same table, ``"a+b"`` pools
    the rounds of replicates ``a`` and ``b`` (measuring whichever is not cached); more rounds extend
    the cached ones, fewer use the first ones.

    Every config is built once; then ``rounds`` rounds each run every config (in a fresh random order,
    so a burst of load or a slow phase of the machine falls on different configs each round) for
    ``repeats`` timed calls after the warm-up.  A config's cost is :func:`_cost` of its samples: the
    median over the rounds of each round's fastest repeat.  A build is the costly part of a
    measurement (~0.1-0.2 s here against ~12 us a call of C2 small), so timing a build many times is
    cheap where building it many times is not."""
    from tqdm import tqdm

    from vdla.compiler.autotune.measure import build_job, run_job

    if measurer.template.unit != "s":
        raise ValueError(f"--gt-rounds measures CPU seconds; {name} is measured in {measurer.template.unit}")
    template, task = measurer.template, measurer.task
    space = template.space
    legal = space.legal_indices()
    if "+" in replicate:
        # Replicates pooled: each measured (or read from its cache), every config's rounds together.
        parts = replicate.split("+")
        for part in parts:
            measure_whole(name, measurer, rounds, repeats, part)
        pooled = [json.loads(_cache_path(task, space, f"whole repeats={repeats} replicate={p}")
                             .read_text()) for p in parts]
        return {i: _cost([x for c in pooled for x in c[space.get(i).key][:rounds * repeats]], repeats)
                for i in legal}
    path = _cache_path(task, space, f"whole repeats={repeats} replicate={replicate}")
    cached: dict[str, list[float]] = json.loads(path.read_text()) if path.exists() else {}
    todo = [i for i in legal if len(cached.get(space.get(i).key, [])) < rounds * repeats]
    if todo:
        options = dataclasses.replace(measurer.options, repeats=repeats)
        executor = measurer.executor
        artifacts: dict[int, bytes | None] = {}
        futures = {i: executor.submit(build_job, task.to_json(), None, space.get(i).to_dict(),
                                      device_kind=task.device_kind, timeout_s=options.build_timeout_s)
                   for i in todo}
        for i, future in tqdm(futures.items(), desc=f"build {name}", disable=not sys.stderr.isatty()):
            try:
                artifacts[i] = future.result()
            except Exception as exc:  # noqa: BLE001 - a config that does not build is a failure of the table (inf)
                print(f"{name}: {space.get(i).key} did not build: {exc}", file=sys.stderr)
                artifacts[i] = None
        rng = random.Random(f"{replicate}")
        for r in range(rounds):
            order = [i for i in todo if len(cached.get(space.get(i).key, [])) < (r + 1) * repeats]
            rng.shuffle(order)
            for i in tqdm(order, desc=f"time {name} ({r + 1}/{rounds})", disable=not sys.stderr.isatty()):
                key = space.get(i).key
                try:
                    if artifacts[i] is None:
                        raise RuntimeError("build failed")
                    outcome = executor.submit(run_job, task.to_json(), None, artifacts[i], options,
                                              device_kind=task.device_kind, timeout_s=options.run_timeout_s,
                                              exclusive=True).result()
                    costs = list(outcome.costs) if outcome.correct else [math.inf] * repeats
                except Exception as exc:  # noqa: BLE001 - a crash or timeout is this config's failure (inf)
                    print(f"{name}: {key} did not run: {exc}", file=sys.stderr)
                    costs = [math.inf] * repeats
                cached.setdefault(key, []).extend(costs)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cached))
    return {i: _cost(cached[space.get(i).key][:rounds * repeats], repeats) for i in legal}


def round_spread(samples: list[float], repeats: int) -> float:
    """The interquartile range of a config's round minima over their median: how far one round's
    measurement of it moves (the ground truth's noise at that config)."""
    minima = [min(samples[k:k + repeats]) for k in range(0, len(samples), repeats)]
    q1, _, q3 = statistics.quantiles(minima, n=4)
    return (q3 - q1) / statistics.median(minima)


def restrict(template: Template, members: set[int]) -> None:
    """Make the template's space legal only on the measured pool."""
    space = template.space

    def legal(c: Config) -> None:
        if space.index_of(c) not in members:
            raise ValueError("not in the measured pool")

    template._space = ConfigSpace(space.axes, legal)


def search(tuner_name: str, template: Template, costs: dict[int, float], seed: int, batch: int,
           features: dict[int, np.ndarray], reference: float) -> list[float]:
    """Run one tuner over the table until it finds the reference (the pool's best): the best cost after
    each trial.  The tuner starts from nothing: given the default config first, every tuner would
    reach the target at once on a task whose default is already within 5% of the best."""
    # "xgb-noprior": the learned model alone, without the template's analytic estimate.
    view = _NoPrior(template) if tuner_name == "xgb-noprior" else template
    tuner = make_tuner(tuner_name.split("-")[0], view, seed)  # type: ignore[arg-type]
    if isinstance(tuner, XGBTuner):
        tuner._features = dict(features)  # the pool's features are computed once for all seeds
    curve: list[float] = []
    best = math.inf
    while len(curve) < len(costs) and best > reference:
        indices = tuner.next_batch(min(batch, len(costs) - len(curve)))
        if not indices:
            break
        got = [costs[i] for i in indices]
        for c in got:
            best = min(best, c)
            curve.append(best)
        tuner.update(indices, got)
    return curve


class _NoPrior:
    """A view of a template without its analytic prior."""

    prior_feature = None

    def __init__(self, template: Template) -> None:
        self._template = template

    def __getattr__(self, name: str) -> object:
        return getattr(self._template, name)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, ties given their group's average rank."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (ties given their average rank)."""
    return float(np.corrcoef(_average_ranks(np.asarray(x)), _average_ranks(np.asarray(y)))[0, 1])


def prior_agreement(template: Template, costs: dict[int, float], features: dict[int, np.ndarray],
                    reference: float) -> dict | None:
    """How the template's analytic prior orders the measured pool: its Spearman rank correlation with the
    costs, and the prior's rank of each config within 95% of the reference (1 + how many the prior puts
    strictly before it; ``ties``: how many share its estimate).  None without a prior."""
    if template.prior_feature is None:
        return None
    ok = [i for i, c in costs.items() if math.isfinite(c)]
    prior = np.asarray([features[i][template.prior_feature] for i in ok], np.float64)
    cost = np.asarray([costs[i] for i in ok])
    rho = spearman(prior, cost)
    within = [k for k in range(len(ok)) if cost[k] <= reference / 0.95]
    ranks = sorted((int((prior < prior[k]).sum()) + 1, int((prior == prior[k]).sum())) for k in within)
    return {"spearman": round(rho, 3), "ranks_within_95": [r for r, _ in ranks], "ties": [t for _, t in ranks]}


def trials_to(curve: list[float], target: float) -> int:
    """The first trial whose best is within ``target`` (the whole curve's length + 1 if never)."""
    return next((k + 1 for k, c in enumerate(curve) if c <= target), len(curve) + 1)


def plot(name: str, unit: str, curves: dict[str, list[list[float]]], reference: float, out: Path) -> None:
    """Median (and range over seeds) of the best cost found so far, relative to the reference, per tuner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for tuner, runs in curves.items():
        length = max(len(r) for r in runs)
        rel = np.array([[reference / (r[min(k, len(r) - 1)]) for k in range(length)] for r in runs])
        x = np.arange(1, length + 1)
        ax.plot(x, np.median(rel, axis=0), label=tuner)
        ax.fill_between(x, rel.min(axis=0), rel.max(axis=0), alpha=0.15)
    ax.axhline(0.95, color="gray", linestyle="--", linewidth=0.8, label="95% of the reference")
    ax.set_xscale("log")
    ax.set_xlabel("trials")
    ax.set_ylabel(f"reference / best so far ({unit})")
    ax.set_title(f"{name}: best so far (median over seeds, band = range)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pool", type=int, default=1000, help="random configs measured per CPU task (default: 1000)")
    ap.add_argument("--vdla-pool", type=int, default=96, help="random configs measured for VDLA C6 (default: 96)")
    ap.add_argument("--seeds", type=int, default=25, help="tuner seeds per task (default: 25)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--refine", type=int, default=24,
                    help="CPU: the fastest configs re-measured for the ground truth (default: 24)")
    ap.add_argument("--rounds", type=int, default=6, help="CPU: re-measurement rounds of those (default: 6)")
    ap.add_argument("--gt-rounds", type=int, default=0,
                    help="CPU, a space measured whole: time every config in this many rounds of --gt-repeats "
                         "(built once; its own cached table) instead of the pool rule (default: 0, the pool rule)")
    ap.add_argument("--gt-repeats", type=int, default=21, help="timed calls per round with --gt-rounds (default: 21)")
    ap.add_argument("--gt-replicate", default=None,
                    help="with --gt-rounds: which independent measurement of the table; 'a+b' pools the rounds "
                         "of replicates a and b (default: a)")
    ap.add_argument("--tasks", default="cpu,c2,depthwise,vdla", help="which tasks, of cpu,c2,c2small,c2mid,c9,depthwise,vdla (default: cpu,c2,depthwise,vdla)")
    ap.add_argument("--quick", action="store_true", help="pools of 48, 3 seeds")
    ap.add_argument("--out", default="tuner",
                    help="results name: bench/results/<out>.json and <out>_<task>.png (default: tuner)")
    args = ap.parse_args()
    if args.gt_replicate is not None and not args.gt_rounds:
        ap.error("--gt-replicate names an independent measurement of a space measured whole: give --gt-rounds N too")
    args.gt_replicate = args.gt_replicate or "a"
    if not re.fullmatch(r"[A-Za-z0-9]+(\+[A-Za-z0-9]+)*", args.gt_replicate):
        ap.error(f"--gt-replicate {args.gt_replicate!r}: a replicate's name (letters/digits, e.g. 'b') or names joined "
                 f"by '+' to pool them (e.g. 'a+b')")
    if args.quick:
        args.pool, args.vdla_pool, args.seeds = 48, 48, 3
    print(host_line())
    hw = load_config("default").to_dict()
    known = {code: (name, make_task("conv2d_nchwc", wl), None, args.pool) for code, (name, wl) in CONV_TASKS.items()}
    known |= {"depthwise": ("depthwise cpu", make_task("depthwise_conv2d_nchw", DEPTHWISE), None, args.pool),
             "vdla": ("C6 vdla", make_task("vdla_conv2d", C6_VDLA), hw, args.vdla_pool)}
    if not set(args.tasks.split(",")) <= set(known):
        ap.error(f"--tasks: choose from {','.join(known)}")
    tasks = [known[k] for k in args.tasks.split(",")]
    rows = []
    RESULTS.mkdir(parents=True, exist_ok=True)
    with LocalExecutor(workers=args.workers) as ex:
        for name, task, hw_config, pool in tasks:
            measurer = Measurer(task, ex, MeasureOptions(repeats=5), hw_config)
            template = measurer.template
            size, legal = template.space.size, len(template.space.legal_indices())
            t0 = time.perf_counter()
            if args.gt_rounds:
                if legal > pool:
                    ap.error(f"--gt-rounds measures a space whole: {name} has {legal} legal configs, more than "
                             f"--pool {pool}; raise --pool or leave --gt-rounds out")
                costs = measure_whole(name, measurer, args.gt_rounds, args.gt_repeats, args.gt_replicate)
                truth = {"rule": "whole", "rounds": args.gt_rounds, "repeats": args.gt_repeats,
                         "replicate": args.gt_replicate}
            else:
                costs = measure_pool(name, measurer, pool, 0, args.refine, args.rounds)
                truth = {"rule": "pool", "refine": args.refine, "rounds": args.rounds}
            measure_s = time.perf_counter() - t0
            restrict(template, set(costs))
            features = {i: template.features(template.space.get(i)) for i in costs}
            ok = [c for c in costs.values() if math.isfinite(c)]
            reference = min(ok)
            default_cost = costs[template.space.index_of(template.default())]
            row = {"task": name, "key": task.key, "unit": template.unit, "space": size, "legal": legal,
                   "ground_truth": truth, "pool": len(costs), "ok": len(ok), "best": reference, "default": default_cost,
                   "within_95": sum(c <= reference / 0.95 for c in ok), "measure_s": round(measure_s, 1),
                   "trials": {}, "table": {template.space.get(i).key: c for i, c in costs.items()}}
            row["prior"] = prior_agreement(template, costs, features, reference)
            curves: dict[str, list[list[float]]] = {}
            row["trials_to_best"], row["trials_90"], row["trials_85"] = {}, {}, {}
            row["within_90"] = sum(c <= reference / 0.90 for c in ok)
            row["within_85"] = sum(c <= reference / 0.85 for c in ok)
            for tuner in TUNERS + (("xgb-noprior",) if template.prior_feature is not None else ()):
                curves[tuner] = [search(tuner, template, costs, s, args.batch, features, reference)
                                 for s in range(args.seeds)]
                for key, target in (("trials", reference / 0.95), ("trials_90", reference / 0.90),
                                    ("trials_85", reference / 0.85),
                                    ("trials_to_best", reference)):
                    runs = [trials_to(c, target) for c in curves[tuner]]
                    row[key][tuner] = {"median": statistics.median(runs), "min": min(runs), "max": max(runs),
                                       "runs": runs}
            png = RESULTS / f"{args.out}_{name.replace(' ', '_')}.png"
            plot(name, template.unit, curves, reference, png)
            row["plot"] = str(png.relative_to(RESULTS.parent.parent))
            rows.append(row)
    columns = TUNERS + ("xgb-noprior",)
    print(f"\n{'task':<14}{'space':>7}{'legal':>7}{'pool':>6}{'<=95%':>6}{'best':>11}{'default':>11}"
          + "".join(f"{t:>20}" for t in columns) + f"{'xgb/random':>11}")
    for r in rows:
        cells = "".join(f"{_fmt(r['trials'].get(t)):>20}" for t in columns)
        ratio = r["trials"]["xgb"]["median"] / r["trials"]["random"]["median"]
        print(f"{r['task']:<14}{r['space']:>7}{r['legal']:>7}{r['pool']:>6}{r['within_95']:>6}{r['best']:>11.4g}"
              f"{r['default']:>11.4g}{cells}{ratio:>11.2f}")
    print("(trials to reach 95% of the pool's best, median [min-max] over the seeds; '<=95%': pool configs within "
          "it; target: xgb/random <= 0.5)")
    for key, what, within in (("trials_90", "90% of the pool's best", "within_90"),
                              ("trials_85", "85% of the pool's best", "within_85"),
                              ("trials_to_best", "the pool's best itself", "within_90")):
        print(f"\ntrials to reach {what} ('within': pool configs within {within[-2:]}%):\n{'task':<14}{'within':>6}"
              + "".join(f"{t:>20}" for t in columns) + f"{'xgb/random':>11}")
        for r in rows:
            cells = "".join(f"{_fmt(r[key].get(t)):>20}" for t in columns)
            ratio = r[key]["xgb"]["median"] / r[key]["random"]["median"]
            print(f"{r['task']:<14}{r[within]:>6}{cells}{ratio:>11.2f}")
    for r in rows:
        if r["prior"] is not None:
            print(f"{r['task']}: the prior's Spearman rank correlation with the measured costs {r['prior']['spearman']:.3f}; "
                  f"its ranks of the pool's configs within 95% {r['prior']['ranks_within_95']}")
    print("(CPU costs: the median over measurement rounds of each round's fastest repeat; "
          + (f"every config built once and timed in {args.gt_rounds} rounds of {args.gt_repeats} repeats, replicate "
             f"{args.gt_replicate})" if args.gt_rounds else
             f"the {args.refine} fastest configs and the default re-measured in {args.rounds} more rounds)"))
    out = RESULTS / f"{args.out}.json"
    out.write_text(json.dumps({"host": host_record(), "pool": args.pool, "vdla_pool": args.vdla_pool,
                               "seeds": args.seeds, "batch": args.batch, "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


def _fmt(t: dict | None) -> str:
    return "-" if t is None else f"{t['median']:g} [{t['min']}-{t['max']}]"


if __name__ == "__main__":
    sys.exit(main())
