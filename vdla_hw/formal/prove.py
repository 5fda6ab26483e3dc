"""``vdla hw prove``: every proof task of a config, one after another, and their report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.formal.sby import ProofResult, run_task
from vdla_hw.formal.tasks import ProofTask, proof_tasks
from vdla_hw.progress import bar


def prove(cfg: HwConfig | str, tasks: Sequence[ProofTask] | None = None, *, rtl_dir: Path | str | None = None,
          solver: str | None = None, timeout: float = 1800.0) -> list[ProofResult]:
    """Run ``tasks`` (default: all of ``cfg``'s) one at a time (solvers are CPU-hungry)."""
    cfg = load_config(cfg)
    todo = list(tasks) if tasks is not None else proof_tasks(cfg)
    results = []
    with bar(total=len(todo), desc=f"proving {cfg.name}", unit="task") as progress:
        for task in todo:
            progress.set_postfix_str(task.name)
            results.append(run_task(cfg, task, rtl_dir=rtl_dir, solver=solver, timeout=timeout))
            progress.update()
    return results


def format_results(results: Sequence[ProofResult]) -> str:
    """A table of the verdicts, then each failure's assertion, cycle and counterexample trace."""
    lines = [f"{'task':22} {'top':20} {'method':24} {'engine':9} {'result':8} {'s':>6}"]
    for r in results:
        lines.append(f"{r.task.name:22} {r.task.top:20} {r.task.method:24} {r.solver:9} {r.status:8} {r.seconds:6.1f}")
    for r in results:
        if r.passed:
            continue
        lines.append("")
        lines.append(f"{r.task.name}: {r.status}" + (f" - {r.message}" if r.message else ""))
        for f in r.failed:
            lines.append(f"  failed: {f.describe()}")
        if r.trace:
            lines.append(f"  counterexample: {r.trace}")
        if r.log:
            lines.append(f"  log: {r.log}")
    passed = sum(r.passed for r in results)
    lines.append(f"\n{passed}/{len(results)} tasks passed")
    return "\n".join(lines)
