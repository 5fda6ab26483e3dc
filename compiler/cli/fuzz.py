"""``vdla fuzz --config C``: differential fuzzing of the backends with random legal programs.

Every program runs on each chosen backend (default fsim, cycle, rtl); the DRAM
images must be bit-identical, and the cycle model's count is compared with the
RTL's.  A failing program is shrunk to a small one and saved (``.vdlaprog``,
assembly, a pytest regression test) under ``--out``.  Exit status 1 when any
program failed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vdla_hw.config import load_config
from vdla_hw.errors import UsageError

from vdla.fuzz.campaign import ProgramRecord, Settings, run_campaign, write_json
from vdla.fuzz.generator import draw_plan
from vdla.fuzz.rtl_coverage import reset_coverage
from vdla.fuzz.runner import DEFAULT_BACKENDS, Runner
from vdla.fuzz.shrink import DEFAULT_BUDGET, save_regression, shrink_plan

RTL_MAX_SECONDS = 60.0
"""Wall-clock watchdog of one RTL run while fuzzing."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("fuzz", help="differential fuzzing of fsim, cycle and rtl with shrinking and coverage",
                              description=__doc__)
    p.add_argument("--config", required=True, help="hardware config: a preset name (tiny, default, wide) or a JSON file")
    p.add_argument("--count", type=int, default=100, help="programs to run (default: 100)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first program; program i uses seed+i (default: 0)")
    p.add_argument("--backends", default=",".join(DEFAULT_BACKENDS),
                   help="comma-separated backends; the first is the reference (default: fsim,cycle,rtl)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default: 1)")
    p.add_argument("--time", type=float, default=None, metavar="SECONDS", help="stop after this many seconds")
    p.add_argument("--max-rounds", type=int, default=6, help="most rounds per program (default: 6)")
    p.add_argument("--cycle-threshold", type=float, default=0.25, metavar="FRACTION",
                   help="fail a program whose cycle count is off the RTL's by more than this (default: 0.25)")
    p.add_argument("--out", default="fuzz-out", help="folder for shrunk failures and the JSON (default: fuzz-out)")
    p.add_argument("--json", default=None, metavar="PATH", help="summary JSON path (default: OUT/summary.json)")
    p.add_argument("--no-shrink", action="store_true", help="report failures without shrinking them")
    p.add_argument("--shrink-budget", type=int, default=DEFAULT_BUDGET, help="most runs per shrink")
    p.add_argument("--max-failures", type=int, default=3, help="failures (distinct kinds) to shrink and save (default: 3)")
    p.add_argument("--stop-on-failure", action="store_true", help="stop at the first failing program")
    p.add_argument("--rtl-dir", default=None, help="run the rtl backend on the RTL sources in this folder "
                                                   "(a modified copy of vdla_hw/rtl)")
    p.add_argument("--rtl-coverage", action="store_true",
                   help="also measure Verilator line and toggle coverage of the RTL (a separate, slower build)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_fuzz)


def _settings(args: argparse.Namespace) -> Settings:
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    if not backends:
        raise UsageError("--backends names no backend", hint="e.g. --backends fsim,cycle,rtl")
    if args.count < 1 or args.jobs < 1 or args.max_rounds < 1:
        raise UsageError(f"--count ({args.count}), --jobs ({args.jobs}) and --max-rounds ({args.max_rounds}) must be >= 1")
    if args.time is not None and args.time <= 0:
        raise UsageError(f"--time must be positive, got {args.time}")
    options: dict[str, dict[str, object]] = {}
    if (args.rtl_dir or args.rtl_coverage) and "rtl" not in backends:
        raise UsageError("--rtl-dir and --rtl-coverage need the rtl backend", hint="add rtl to --backends")
    if "rtl" in backends:
        # A modified design may hang in a way the stall detector does not see (a live lock).
        rtl: dict[str, object] = {"max_seconds": RTL_MAX_SECONDS}
        if args.rtl_dir:
            if not Path(args.rtl_dir).is_dir():
                raise UsageError(f"--rtl-dir {args.rtl_dir} is not a folder", hint="point it at a copy of vdla_hw/rtl")
            rtl["rtl_dir"] = str(Path(args.rtl_dir).resolve())
        if args.rtl_coverage:
            rtl["coverage_dir"] = str((Path(args.out) / "rtl_coverage").resolve())
        options["rtl"] = rtl
    return Settings(config=args.config, count=args.count, seed=args.seed, backends=backends, jobs=args.jobs,
                    time_limit=args.time, cycle_threshold=args.cycle_threshold, max_rounds=args.max_rounds,
                    options=options, stop_on_failure=args.stop_on_failure)


def cmd_fuzz(args: argparse.Namespace) -> int:
    settings = _settings(args)
    cfg = load_config(settings.config)
    out = Path(args.out)
    if args.rtl_coverage:
        reset_coverage(out / "rtl_coverage")
    result = run_campaign(settings, quiet=args.quiet)
    print(result.format())
    extra: dict[str, object] = {}
    saved = [] if args.no_shrink else _shrink_failures(cfg, settings, result.failures, out, args)
    if saved:
        extra["regressions"] = saved
    path = write_json(result, args.json or out / "summary.json", extra)
    print(f"summary JSON: {path}")
    return 1 if result.failures else 0


def _shrink_failures(cfg, settings: Settings, failures: list[ProgramRecord], out: Path,  # type: ignore[no-untyped-def]
                     args: argparse.Namespace) -> list[dict[str, object]]:
    """Shrink the first failing program of each distinct failure kind; save each as a regression."""
    firsts: dict[tuple[str, str], ProgramRecord] = {}
    for rec in failures:
        firsts.setdefault(rec.failure.signature, rec)  # type: ignore[union-attr]
    if not firsts:
        return []
    options = {k: {o: v for o, v in opts.items() if o != "coverage_dir"} for k, opts in settings.options.items()}
    runner = Runner(settings.backends, cycle_threshold=settings.cycle_threshold, options=options)
    saved = []
    for rec in list(firsts.values())[: args.max_failures]:
        plan = draw_plan(cfg, rec.seed, max_rounds=settings.max_rounds)
        print(f"\nseed {rec.seed}: {rec.failure.kind} on {rec.failure.backend}; shrinking "  # type: ignore[union-attr]
              f"{plan.insn_count} instructions ...")
        shrunk = shrink_plan(cfg, plan, rec.failure, runner, budget=args.shrink_budget)  # type: ignore[arg-type]
        name = f"fuzz_{cfg.name}_seed{rec.seed}_{shrunk.failure.kind}_{shrunk.failure.backend}"
        paths = save_regression(shrunk, out, name, settings.backends[0], settings.cycle_threshold, options)
        print(f"shrunk to {shrunk.program.insn_count} instructions in {shrunk.runs} runs:")
        print(shrunk.failure.detail)
        for p in paths:
            print(f"  saved {p}")
        saved.append({"seed": rec.seed, "kind": shrunk.failure.kind, "backend": shrunk.failure.backend,
                      "instructions": shrunk.program.insn_count, "files": [str(p) for p in paths]})
    return saved
