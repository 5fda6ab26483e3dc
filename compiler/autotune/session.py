"""Tuning a whole model: every task in turn, with progress, a resumable log and tuning curves."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .database import RETIMED, Database, Record, ranked
from .executor import JobExecutor
from .measure import MeasureOptions, Measurer
from .task import Task
from .tuner import Progress, make_tuner, tune_task


@dataclass(frozen=True)
class TaskOutcome:
    """One task after tuning: its best record, the default config's cost, and the curve's PNG."""

    task: Task
    best: Record | None
    default_cost: float
    curve: Path | None


def plot_curve(task: Task, records: Sequence[Record], path: Path) -> Path:
    """A PNG of the best cost so far against the trial number."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best, ys = math.inf, []
    for r in records:
        best = min(best, r.cost)
        ys.append(best if math.isfinite(best) else float("nan"))
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(1, len(ys) + 1), ys, marker=".", lw=1)
    unit = records[0].unit if records else ""
    ax.set(xlabel="trial", ylabel=f"best {('time (s)' if unit == 's' else unit)}",
           title=f"{task.name} (x{task.weight})")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def tune_tasks(tasks: Sequence[Task], db: Database, executor: JobExecutor, trials: int, tuner: str = "xgb",
               batch: int = 8, hw_config: dict[str, Any] | None = None, options: MeasureOptions = MeasureOptions(),
               curves: Path | None = None, quiet: bool = False, seed: int = 0,
               budget_s: float | None = None, retime: int = 3, retime_passes: int = 2,
               retime_again: bool = False) -> list[TaskOutcome]:
    """Tune every task up to ``trials`` measured configs (those already in ``db`` count).

    With ``budget_s`` the whole run stops starting batches once that many seconds are spent: each task
    gets an equal share of what is left when it starts (time a task leaves unused goes to the next).
    ``retime``: how many leaders of a timed task are re-timed beside the default before its best is named, in
    ``retime_passes`` passes; ``retime_again``: a new round for every task, even one that measured nothing new."""
    from tqdm import tqdm

    end = None if budget_s is None else time.monotonic() + budget_s
    outcomes = []
    total = sum(max(0, trials - len(db.measured_keys(t))) for t in tasks)
    bar = tqdm(total=total, unit="trial", disable=quiet or not sys.stderr.isatty(), dynamic_ncols=True)
    try:
        for k, task in enumerate(tasks):
            measurer = Measurer(task, executor, options, hw_config)
            tuner_obj = make_tuner(tuner, measurer.template, seed + k, db.similar(task))
            bar.set_description(f"[{k + 1}/{len(tasks)}] {task.name}")

            def advance(p: Progress) -> None:
                bar.update(1)
                bar.set_postfix_str(f"best {p.best:.4g}")

            size = measurer.template.space.size
            deadline = None if end is None else time.monotonic() + (end - time.monotonic()) / (len(tasks) - k)
            best = tune_task(tuner_obj, measurer, db, min(trials, size), batch, advance, deadline, retime,
                             retime_passes, retime_again)
            space, default_key = measurer.template.space, measurer.template.default().key
            # By the config as the space reads it, not the logged key (an old log's keys name removed knobs).
            standing = ranked(db.of_task(task)).values()
            default = [r.cost for r in standing if space.from_dict(r.config).key == default_key]
            curve = None
            if curves is not None:
                search = [r for r in db.of_task(task) if r.tuner != RETIMED]
                curve = plot_curve(task, search, curves / f"{k:02d}_{task.name}.png")
            outcomes.append(TaskOutcome(task, best, min(default, default=math.inf), curve))
    finally:
        bar.close()
    return outcomes
