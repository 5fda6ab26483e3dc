"""A fuzz campaign: many seeds, one verdict table, coverage, and shrunk regressions of the failures.

Program ``i`` of a campaign with seed ``S`` is :func:`draw_plan(cfg, S + i)`, so
any finding is reproduced by its seed alone.  With ``jobs > 1`` the programs run
in worker processes (each with its own backends, the RTL library built once and
cached).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from tqdm import tqdm

from vdla_hw.config import HwConfig, load_config

from vdla.fuzz.coverage import Coverage, bins_of
from vdla.fuzz.generator import build_program, draw_plan
from vdla.fuzz.rtl_coverage import RtlCoverage
from vdla.fuzz.runner import DEFAULT_BACKENDS, Failure, Runner


@dataclass(frozen=True)
class Settings:
    """What a campaign runs: ``count`` programs from ``seed`` (or until ``time_limit`` seconds)."""

    config: str
    count: int = 100
    seed: int = 0
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    jobs: int = 1
    time_limit: float | None = None
    cycle_threshold: float = 0.25
    max_rounds: int = 6
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    stop_on_failure: bool = False


@dataclass(frozen=True)
class ProgramRecord:
    """The verdict on one program of the campaign."""

    seed: int
    instructions: int
    cycles: dict[str, int | None]
    cycle_error: float | None
    failure: Failure | None
    rtl_coverage_file: str | None = None


@dataclass
class CampaignResult:
    settings: Settings
    records: list[ProgramRecord]
    coverage: Coverage
    seconds: float
    rtl_coverage: RtlCoverage | None = None

    @property
    def failures(self) -> list[ProgramRecord]:
        return [r for r in self.records if r.failure is not None]

    def cycle_errors(self) -> dict[str, Any] | None:
        """Median, p95 and max of |cycle - rtl| / rtl, and the worst program's seed."""
        errs = [(abs(r.cycle_error), r.seed, r.cycle_error) for r in self.records if r.cycle_error is not None]
        if not errs:
            return None
        values = sorted(e for e, _, _ in errs)
        worst = max(errs)
        p95 = values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
        return {"median": statistics.median(values), "p95": p95, "max": worst[0], "worst_seed": worst[1],
                "worst_signed": worst[2], "mean_signed": statistics.fmean(e for _, _, e in errs)}

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary of the whole campaign."""
        kinds: dict[str, int] = {}
        for r in self.failures:
            key = f"{r.failure.kind}:{r.failure.backend}"  # type: ignore[union-attr]
            kinds[key] = kinds.get(key, 0) + 1
        return {
            "settings": {**asdict(self.settings), "options": {k: dict(v) for k, v in self.settings.options.items()}},
            "programs": len(self.records),
            "instructions": sum(r.instructions for r in self.records),
            "agreeing": len(self.records) - len(self.failures),
            "failures": kinds,
            "failing_seeds": [r.seed for r in self.failures][:50],
            "cycle_error": self.cycle_errors(),
            "coverage": self.coverage.summary(),
            "rtl_coverage": self.rtl_coverage.to_dict() if self.rtl_coverage else None,
            "seconds": self.seconds,
        }

    def format(self) -> str:
        """The summary table printed at the end of a run."""
        s = self.summary()
        rows = [("config", self.settings.config), ("backends", ",".join(self.settings.backends)),
                ("programs", f"{s['programs']} (seeds {self.settings.seed}..{self.settings.seed + s['programs'] - 1})"),
                ("instructions", f"{s['instructions']:,}"),
                ("agreeing", f"{s['agreeing']}/{s['programs']}"),
                ("failures", ", ".join(f"{k}={v}" for k, v in s["failures"].items()) or "none")]
        ce = s["cycle_error"]
        if ce:
            rows.append(("cycle vs rtl |err|", f"median {ce['median']:.2%}  p95 {ce['p95']:.2%}  max {ce['max']:.2%} "
                                               f"(seed {ce['worst_seed']}, {ce['worst_signed']:+.2%})"))
        rows.append(("coverage", f"{s['coverage']['reached']}/{s['coverage']['total']} bins"))
        rows.append(("time", f"{s['seconds']:.1f} s ({s['programs'] / max(s['seconds'], 1e-9):.1f} programs/s)"))
        width = max(len(k) for k, _ in rows)
        text = "\n".join(f"{k:<{width}}  {v}" for k, v in rows) + "\n" + self.coverage.format()
        return text + ("\n" + self.rtl_coverage.format() if self.rtl_coverage else "")


# ---- running ---------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def init_worker(settings: Settings) -> None:
    """Set up this process to run programs of ``settings`` with :func:`run_one`."""
    _WORKER["cfg"] = load_config(settings.config)
    _WORKER["runner"] = Runner(settings.backends, cycle_threshold=settings.cycle_threshold, options=settings.options)
    _WORKER["max_rounds"] = settings.max_rounds


def run_one(seed: int) -> tuple[ProgramRecord, set[str]]:
    """Draw, run and judge program ``seed`` in this process (after :func:`init_worker`)."""
    cfg: HwConfig = _WORKER["cfg"]
    plan = draw_plan(cfg, seed, max_rounds=_WORKER["max_rounds"])
    program, _ = build_program(cfg, plan)
    outcome, results = _WORKER["runner"].run(program)
    cov_file = results["rtl"].extra.get("coverage_file") if "rtl" in results else None
    record = ProgramRecord(seed, program.insn_count, dict(outcome.cycles), outcome.cycle_error, outcome.failure,
                           cov_file)
    return record, bins_of(cfg, plan, program.instructions, outcome.stats)


def _results(settings: Settings) -> Iterator[tuple[ProgramRecord, set[str]]]:
    seeds = range(settings.seed, settings.seed + settings.count)
    init_worker(settings)  # here too: a bad backend or option is reported before any worker starts
    if settings.jobs <= 1:
        yield from map(run_one, seeds)
        return
    pool = ProcessPoolExecutor(settings.jobs, initializer=init_worker, initargs=(settings,))
    try:
        yield from pool.map(run_one, seeds, chunksize=4)
    finally:
        # A time limit or a first failure stops early: drop the programs not started yet.
        pool.shutdown(wait=True, cancel_futures=True)


def run_campaign(settings: Settings, *, quiet: bool = False,
                 on_failure: Callable[[ProgramRecord], None] | None = None) -> CampaignResult:
    """Run the campaign ``settings`` describes, with a tqdm bar unless ``quiet`` (or not a TTY)."""
    cfg = load_config(settings.config)
    coverage = Coverage.for_config(cfg)
    records: list[ProgramRecord] = []
    rtl_cov = RtlCoverage() if settings.options.get("rtl", {}).get("coverage_dir") else None
    t0 = time.perf_counter()
    deadline = t0 + settings.time_limit if settings.time_limit else None
    bar = tqdm(total=settings.count, unit="prog", desc=f"fuzz {cfg.name}", disable=quiet or None, leave=False)
    results = _results(settings)
    try:
        for record, hit in results:
            records.append(record)
            coverage.add(hit)
            if rtl_cov is not None and record.rtl_coverage_file:
                rtl_cov.merge_file(record.rtl_coverage_file)
            bar.update(1)
            if record.failure is not None:
                bar.set_postfix(failures=sum(r.failure is not None for r in records))
                if on_failure:
                    on_failure(record)
                if settings.stop_on_failure:
                    break
            if deadline is not None and time.perf_counter() > deadline:
                break
    finally:
        results.close()  # type: ignore[attr-defined]
        bar.close()
    return CampaignResult(settings, records, coverage, time.perf_counter() - t0, rtl_cov)


def write_json(result: CampaignResult, path: str | Path, extra: Mapping[str, Any] | None = None) -> Path:
    """Write the campaign summary (plus ``extra``) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**result.summary(), **(extra or {})}
    path.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")
    return path


def _json_default(obj: object) -> object:
    if isinstance(obj, Failure):
        return asdict(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON-serializable: {obj!r}")

