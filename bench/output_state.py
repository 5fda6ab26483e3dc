"""Benchmark: does the output region's cache state change a task's predicted speed-up?

The tuner times a call after a flush of the model's weight bytes with the kernel's activation inputs rewritten
(``measure.time_cpu``, ``model``); the output buffer is left as the flush leaves it.  In the model the output
region of the arena was written by other nodes shortly before.  Per task of a tuning log, the default and the log's
best are built once and timed in turns, in ``--rounds`` rounds of ``--repeats`` calls each (fastest call kept), in
two states: the tuner's, and the tuner's with the output also rewritten in place just before each call (its lines
in cache and modified, as a producer leaves them).  With ``--producer TASK=PRODUCER``, a third state: after the
flush, the producer task's default kernel runs (its own activations rewritten) and writes the task's input, as the
node before does in the model, instead of the input being rewritten.  Printed: each config's time and default /
best per state.

Run: ``python bench/output_state.py --tuning-log LOG --tasks NAME,... [--producer NAME=PRODUCER] [--rounds 15]
[--flush-mib 13.3]``; writes ``bench/results/output_state.json``.
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

from vdla.compiler.autotune.database import ranked, read_log, records_by_task
from vdla.compiler.autotune.measure import build_job
from vdla.compiler.autotune.template import template_for
from vdla.runtime.cpu_module import aligned_copy, aligned_zeros, load_module

ROOT = Path(__file__).resolve().parents[1]
#: The cache states timed: whether the output is rewritten before each call (and, with a producer, the state
#: after it: ``producer``).
STATES = {"tuner": False, "output rewritten": True}


def loaded(task: Any, config: dict[str, Any], path: Path) -> tuple[Any, Any]:
    """The built ``config`` of ``task``, loaded: (module, function)."""
    path.write_bytes(build_job(task.to_json(), None, config))
    module = load_module(path)
    module.set_num_threads(1)
    return module, module[module.entry_name]


def bench_task(records: list[Any], rounds: int, repeats: int, flush_bytes: int, tmp: Path,
               producer: list[Any] | None = None) -> dict[str, Any]:
    """Fastest call (s) of the default and the log's best in each of :data:`STATES` (and after ``producer``'s
    default kernel, whose output is this task's input, when given)."""
    task = records[0].task
    template = template_for(task)
    best = min(ranked(records).values(), key=lambda r: r.cost)
    configs = {"default": template.default().to_dict(), "best": template.space.from_dict(best.config).to_dict()}
    calls = {label: loaded(task, config, tmp / f"{task.name}_{label}.so") for label, config in configs.items()}
    ins = [aligned_copy(a) for a in template.inputs()]
    _, out_t = template.tensors()
    out = aligned_zeros(tuple(int(s.value) for s in out_t.shape), np.float32)
    produced = ins[:template.produced_inputs]
    before: Any = None
    states = dict(STATES)
    if producer:
        ptask = producer[0].task
        ptemplate = template_for(ptask)
        _, pfn = loaded(ptask, ptemplate.default().to_dict(), tmp / f"{ptask.name}_producer.so")
        pins = [aligned_copy(a) for a in ptemplate.inputs()]
        if ins[0].shape != tuple(int(s.value) for s in ptemplate.tensors()[1].shape):
            raise SystemExit(f"{ptask.name}'s output {ptemplate.tensors()[1].shape} is not {task.name}'s input {ins[0].shape}")
        pargv = pfn.pack((*pins, ins[0]))
        pproduced = pins[:ptemplate.produced_inputs]

        def before() -> None:
            for a in pproduced:
                np.multiply(a, 1.0, out=a)
            pfn.call_unchecked(pargv)
        states["producer"] = False
    flush = np.zeros(max(flush_bytes // 8, 1))
    fastest = {state: {label: float("inf") for label in configs} for state in states}
    for _ in range(rounds):
        for state, rewrite in states.items():
            for label, (_, fn) in calls.items():
                argv = fn.pack((*ins, out))
                for _ in range(repeats):
                    flush += 1.0
                    if state == "producer":
                        before()
                    else:
                        for a in produced:
                            np.multiply(a, 1.0, out=a)
                    if rewrite:
                        np.multiply(out, 1.0, out=out)
                    t0 = time.thread_time()
                    fn.call_unchecked(argv)
                    fastest[state][label] = min(fastest[state][label], time.thread_time() - t0)
    return {"task": task.name, "producer": producer[0].task.name if producer else None, "configs": configs,
            "seconds": fastest, "speedup": {state: v["default"] / v["best"] for state, v in fastest.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tuning-log", required=True)
    ap.add_argument("--tasks", required=True, help="comma-separated task names")
    ap.add_argument("--producer", action="append", default=[], metavar="TASK=PRODUCER",
                    help="also time TASK after PRODUCER's default kernel wrote its input (both tasks of the log)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--flush-mib", type=float, default=13.3, help="the flush before each call (MobileNetV2's weights)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "output_state.json"))
    args = ap.parse_args()
    if args.rounds < 1 or args.repeats < 1:
        ap.error("--rounds and --repeats must be at least 1")
    by_name = records_by_task(read_log(args.tuning_log))
    names = [n for n in args.tasks.split(",") if n]
    if not names:
        ap.error("--tasks names no task")
    producers: dict[str, str] = {}
    for item in args.producer:
        task, eq, producer = item.partition("=")
        if not (eq and task and producer):
            ap.error(f"--producer {item!r}: expected TASK=PRODUCER (two task names of the log)")
        if task not in names:
            ap.error(f"--producer {item}: {task} is not one of --tasks {names}")
        producers[task] = producer
    missing = [n for n in names + list(producers.values()) if n not in by_name]
    if missing:
        ap.error(f"tasks {missing} are not in {args.tuning_log}; it has {sorted(by_name)}")
    unmeasured = [n for n in names if not any(r.ok for r in by_name[n])]
    if unmeasured:
        ap.error(f"tasks {unmeasured} have no successful measurement in {args.tuning_log}; tune them first")
    print(host_line())
    load_before = os.getloadavg()
    print(f"load {load_before[0]:.1f}; one thread; thread CPU time; {args.flush_mib} MiB flush")
    results = []
    with tempfile.TemporaryDirectory(prefix="output_state_") as tmp:
        for name in names:
            r = bench_task(by_name[name], args.rounds, args.repeats, int(args.flush_mib * 2**20), Path(tmp),
                           by_name[producers[name]] if name in producers else None)
            for state, v in r["seconds"].items():
                print(f"{name:<28} {state:<17} default {v['default'] * 1e3:.4f} ms  best {v['best'] * 1e3:.4f} ms  "
                      f"default/best {r['speedup'][state]:.3f}", flush=True)
            results.append(r)
    finish_run({"host": host_record(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
                "clock": "thread CPU time", "tuning_log": args.tuning_log, "rounds": args.rounds,
                "repeats": args.repeats, "flush_mib": args.flush_mib, "results": results}, args.output)


if __name__ == "__main__":
    main()
