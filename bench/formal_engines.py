"""Benchmark: the proof engines of ``vdla hw prove --solver`` on the same task, in one run.

Each engine (z3, the WebAssembly boolector, yices, bitwuzla under smtbmc; ABC's ``bmc3`` on the
AIGER model) checks the same task of the same RTL, one after another (solvers are CPU-hungry
and this machine is shared). Per engine: the verdict, the wall time of the whole run (yosys's
front end included, the same work for every engine), the engine's own wall time (from
SymbiYosys's log) and the CPU seconds of all its processes (what the machine's load does not
stretch). The peer is the task's previous engine (boolector for the liveness tasks).

Run: ``python bench/formal_engines.py [--task live_finish_l2] [--solver yices --solver ...]
[--timeout S]``; writes ``bench/results/formal_engines.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from vdla_hw.formal.sby import SOLVERS, check_engine, run_task
from vdla_hw.formal.tasks import proof_tasks
from vdla_hw.rtl_build import RtlBuildError

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)
from host import host_line, host_record  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--task", default="live_finish_l2", help="a task of `vdla hw prove --list` (default: %(default)s)")
    parser.add_argument("--solver", action="append", choices=SOLVERS,
                        help="engines to time (repeatable; default: all of them)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per engine (default: %(default)s)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "formal_engines.json"))
    args = parser.parse_args(argv)

    tasks = {t.name: t for t in proof_tasks(args.config, whole_machine=True)}
    if args.task not in tasks:
        print(f"error: unknown task {args.task!r} for {args.config}; choose from {', '.join(sorted(tasks))}",
              file=sys.stderr)
        return 2
    task = tasks[args.task]
    solvers = args.solver or [s for s in SOLVERS if not (s == "abc-bmc3" and task.mode != "bmc")]
    for solver in solvers:
        try:
            check_engine(task, solver)
        except RtlBuildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    load = os.getloadavg()[0]
    print(f"{host_line()}; load average {load:.1f} at start")
    print(f"task: {task.name} ({task.method}, {args.config}); the task's own engine: {task.solver}")
    rows = []
    for solver in tqdm(solvers, desc="engines", unit="engine"):
        start = time.perf_counter()
        result = run_task(args.config, task, solver=solver, timeout=args.timeout)
        rows.append({"solver": solver, "status": result.status, "wall_s": round(time.perf_counter() - start, 1),
                     "engine_s": result.engine_seconds,
                     "cpu_s": round(result.cpu_seconds, 1) if result.cpu_seconds is not None else None,
                     "message": result.message, "load_end": round(os.getloadavg()[0], 1)})

    print(f"\n{'engine':10} {'result':8} {'wall s':>8} {'engine s':>9} {'CPU s':>8} {'load':>5}")
    for r in rows:
        eng = f"{r['engine_s']:.0f}" if r["engine_s"] is not None else "-"
        cpu_s = f"{r['cpu_s']:.1f}" if r["cpu_s"] is not None else "-"
        print(f"{r['solver']:10} {r['status']:8} {r['wall_s']:8.1f} {eng:>9} {cpu_s:>8} {r['load_end']:5.1f}")
    for r in rows:
        if r["message"]:
            print(f"{r['solver']}: {r['message']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "formal_engines", "config": args.config, "task": task.name,
                               "method": task.method, "host": host_record(), "load_start": load,
                               "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["status"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
