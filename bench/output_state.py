"""Benchmark: does the output region's cache state change a task's predicted speed-up?

The tuner times a call after a flush of the model's weight bytes with the kernel's activation inputs rewritten
(``measure.time_cpu``, ``model``); the output buffer is left as the flush leaves it.  In the model the output
region of the arena was written by other nodes shortly before.  Per task of a tuning log, the default and the log's
best are built once and timed in turns, in ``--rounds`` rounds of ``--repeats`` calls each (fastest call kept), in
two states: the tuner's, and the tuner's with the output also rewritten in place just before each call (its lines
in cache and modified, as a producer leaves them).  Printed: each config's time and default / best per state.

Run: ``python bench/output_state.py --tuning-log LOG --tasks NAME,... [--rounds 15] [--flush-mib 13.3]``; writes
``bench/results/output_state.json``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from host import finish_run, host_line, host_record

from vdla.compiler.autotune.database import ranked, read_log
from vdla.compiler.autotune.measure import build_job
from vdla.compiler.autotune.template import template_for
from vdla.runtime.cpu_module import aligned_copy, aligned_zeros, load_module

ROOT = Path(__file__).resolve().parents[1]
#: The two cache states timed: whether the output is rewritten before each call.
STATES = {"tuner": False, "output rewritten": True}


def bench_task(records: list[Any], rounds: int, repeats: int, flush_bytes: int, tmp: Path) -> dict[str, Any]:
    """Fastest call (s) of the default and the log's best in each of :data:`STATES`."""
    task = records[0].task
    template = template_for(task)
    best = min(ranked(records).values(), key=lambda r: r.cost)
    configs = {"default": template.default().to_dict(), "best": template.space.from_dict(best.config).to_dict()}
    calls = {}
    for label, config in configs.items():
        path = tmp / f"{task.name}_{label}.so"
        path.write_bytes(build_job(task.to_json(), None, config))
        module = load_module(path)
        module.set_num_threads(1)
        calls[label] = (module, module[module.entry_name])
    ins = [aligned_copy(a) for a in template.inputs()]
    _, out_t = template.tensors()
    out = aligned_zeros(tuple(int(s.value) for s in out_t.shape), np.float32)
    produced = ins[:template.produced_inputs]
    flush = np.zeros(max(flush_bytes // 8, 1))
    fastest = {state: {label: float("inf") for label in configs} for state in STATES}
    for _ in range(rounds):
        for state, rewrite in STATES.items():
            for label, (_, fn) in calls.items():
                argv = fn.pack((*ins, out))
                for _ in range(repeats):
                    flush += 1.0
                    for a in produced:
                        np.multiply(a, 1.0, out=a)
                    if rewrite:
                        np.multiply(out, 1.0, out=out)
                    t0 = time.thread_time()
                    fn.call_unchecked(argv)
                    fastest[state][label] = min(fastest[state][label], time.thread_time() - t0)
    return {"task": task.name, "configs": configs, "seconds": fastest,
            "speedup": {state: v["default"] / v["best"] for state, v in fastest.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tuning-log", required=True)
    ap.add_argument("--tasks", required=True, help="comma-separated task names")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--flush-mib", type=float, default=13.3, help="the flush before each call (MobileNetV2's weights)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "output_state.json"))
    args = ap.parse_args()
    if args.rounds < 1 or args.repeats < 1:
        ap.error("--rounds and --repeats must be at least 1")
    by_name: dict[str, list[Any]] = {}
    for r in read_log(args.tuning_log):
        by_name.setdefault(r.task.name, []).append(r)
    names = [n for n in args.tasks.split(",") if n]
    missing = [n for n in names if n not in by_name]
    if missing:
        ap.error(f"tasks {missing} are not in {args.tuning_log}; it has {sorted(by_name)}")
    print(host_line())
    load_before = os.getloadavg()
    print(f"load {load_before[0]:.1f}; one thread; thread CPU time; {args.flush_mib} MiB flush")
    results = []
    with tempfile.TemporaryDirectory(prefix="output_state_") as tmp:
        for name in names:
            r = bench_task(by_name[name], args.rounds, args.repeats, int(args.flush_mib * 2**20), Path(tmp))
            for state, v in r["seconds"].items():
                print(f"{name:<28} {state:<17} default {v['default'] * 1e3:.4f} ms  best {v['best'] * 1e3:.4f} ms  "
                      f"default/best {r['speedup'][state]:.3f}", flush=True)
            results.append(r)
    finish_run({"host": host_record(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
                "clock": "thread CPU time", "tuning_log": args.tuning_log, "rounds": args.rounds,
                "repeats": args.repeats, "flush_mib": args.flush_mib, "results": results}, args.output)


if __name__ == "__main__":
    main()
