"""A fuzz campaign over several presets, run as jobs on the device pool (:mod:`vdla.runtime.pool`).

The seeds of each preset are cut into chunks; each chunk is one pool job that draws, runs and
judges its programs (:func:`vdla.fuzz.campaign.run_one`) on a worker offering the job's device kind
(the Verilated RTL of that preset when ``rtl`` is among the backends, else the cycle model).
The client adds up the verdicts and the coverage per preset.  Without ``--address`` the pool is a
:func:`~vdla.runtime.pool.node.local_cluster` on 127.0.0.1 started for the run::

    python -m vdla.fuzz.pool_campaign --configs tiny,default,wide --count 10000 --workers 2

With ``--journal FILE`` every finished chunk is appended to ``FILE`` (one JSON line, flushed) as
it comes back, so a run stopped by a time limit, a crash or a kill loses at most the chunks in
flight; re-running the same command with the same journal skips the chunks it already holds and
counts them in the report (a resumed campaign).

The exit status is 1 when any program failed (or a job was lost).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tqdm import tqdm

from vdla_hw.config import load_config

from vdla.fuzz.campaign import ProgramRecord, Settings, init_worker, run_one
from vdla.fuzz.coverage import Coverage
from vdla.fuzz.runner import DEFAULT_BACKENDS, Failure
from vdla.runtime.cpu_module import host_cpu_model


def run_chunk(settings: Settings, seeds: Sequence[int]) -> list[tuple[ProgramRecord, set[str]]]:
    """One pool job: the verdicts and coverage bins of ``seeds`` on ``settings.config``."""
    init_worker(settings)
    return [run_one(s) for s in seeds]


@dataclass
class PresetTally:
    """What one preset's programs gave."""

    config: str
    coverage: Coverage
    programs: int = 0
    instructions: int = 0
    failing_seeds: list[int] = field(default_factory=list)
    failure_kinds: dict[str, int] = field(default_factory=dict)
    worst_cycle_error: tuple[float, int] | None = None
    """(|cycle - rtl| / rtl, seed) of the program where the cycle model strayed furthest from the RTL."""

    def add(self, record: dict[str, Any], hit: Sequence[str]) -> None:
        """Count one program (a journal record, see :func:`record_entry`)."""
        self.programs += 1
        self.instructions += record["instructions"]
        self.coverage.add(set(hit))
        if record["failure"] is not None:
            self.failing_seeds.append(record["seed"])
            key = f"{record['failure']['kind']}:{record['failure']['backend']}"
            self.failure_kinds[key] = self.failure_kinds.get(key, 0) + 1
        err = record.get("cycle_error")
        if err is not None and (self.worst_cycle_error is None or abs(err) > self.worst_cycle_error[0]):
            self.worst_cycle_error = (abs(err), record["seed"])

    def to_dict(self) -> dict[str, Any]:
        cov = self.coverage.summary()
        worst = self.worst_cycle_error
        return {"programs": self.programs, "instructions": self.instructions, "failures": len(self.failing_seeds),
                "failure_kinds": self.failure_kinds, "failing_seeds": self.failing_seeds[:50],
                "coverage": f"{cov['reached']}/{cov['total']}", "unreached": cov["unreached"],
                "max_cycle_error": None if worst is None else {"error": worst[0], "seed": worst[1]}}


def record_entry(record: ProgramRecord, hit: set[str]) -> dict[str, Any]:
    """One program's verdict as a JSON-ready journal record."""
    failure: Failure | None = record.failure
    return {"seed": record.seed, "instructions": record.instructions, "cycles": record.cycles,
            "cycle_error": record.cycle_error, "failure": None if failure is None else asdict(failure),
            "bins": sorted(hit)}


def read_journal(path: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The chunks a journal holds, by (preset, first seed); a torn last line (a killed run) is ignored."""
    chunks: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not path.exists():
        return chunks
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        chunks[(entry["config"], entry["seeds"][0])] = entry["records"]
    return chunks


def split_count(count: int, configs: Sequence[str]) -> dict[str, int]:
    """``count`` programs shared as evenly as possible over ``configs`` (the first ones get the rest)."""
    return {c: count // len(configs) + (i < count % len(configs)) for i, c in enumerate(configs)}


def device_kind(config: str, backends: Sequence[str]) -> str:
    """The pool device a chunk of ``config`` needs."""
    from vdla.runtime.pool.kinds import backend_kind
    return backend_kind("rtl", load_config(config)) if "rtl" in backends else "vdla-cycle"


def run_pool_campaign(address: str, configs: Sequence[str], count: int, *, backends: Sequence[str] = DEFAULT_BACKENDS,
                      chunk: int = 20, time_limit: float | None = None, quiet: bool = False,
                      window: int = 8, journal: str | Path | None = None,
                      rtl_dir: str | Path | None = None) -> dict[str, Any]:
    """Run ``count`` programs over ``configs`` on the pool at ``address``; a JSON-ready report.

    With ``time_limit`` no new chunk is submitted after that many seconds (the chunks in flight finish).
    With ``journal`` each finished chunk is appended there at once, and chunks already in it are not
    run again but counted (``resumed_programs`` in the report). ``rtl_dir`` fuzzes the module files of
    that folder (a copy of ``vdla_hw/rtl``, e.g. one frozen for a long run while the tree changes).
    """
    from vdla.runtime.pool import PoolExecutor
    shares = split_count(count, configs)
    todo = [(c, list(range(s, min(s + chunk, n)))) for c, n in shares.items() for s in range(0, n, chunk)]
    todo.sort(key=lambda cs: (cs[1][0], configs.index(cs[0])))  # interleave the presets
    tallies = {c: PresetTally(c, Coverage.for_config(load_config(c))) for c in configs}
    journal_path = Path(journal) if journal else None
    done_before = read_journal(journal_path) if journal_path else {}
    resumed = 0
    for key in [(c, seeds[0]) for c, seeds in todo if (c, seeds[0]) in done_before]:
        for rec in done_before[key]:
            tallies[key[0]].add(rec, rec["bins"])
            resumed += 1
    todo = [(c, seeds) for c, seeds in todo if (c, seeds[0]) not in done_before]
    lost: list[str] = []
    t0 = time.perf_counter()
    bar = tqdm(total=sum(shares.values()), initial=resumed, unit="prog", desc="fuzz pool", disable=quiet or None)
    if journal_path:
        journal_path.parent.mkdir(parents=True, exist_ok=True)
    log = journal_path.open("a") if journal_path else None
    if log is not None and journal_path.stat().st_size and not journal_path.read_bytes().endswith(b"\n"):
        log.write("\n")  # end a line torn by a killed run, so the next chunk starts a line of its own
    with PoolExecutor(address) as ex:
        pending: dict[cf.Future, tuple[str, list[int]]] = {}
        while todo or pending:
            while todo and len(pending) < window and not (time_limit and time.perf_counter() - t0 > time_limit):
                config, seeds = todo.pop(0)
                options = {"rtl": {"rtl_dir": str(rtl_dir)}} if rtl_dir and "rtl" in backends else {}
                settings = Settings(config, count=len(seeds), backends=tuple(backends), options=options)
                fut = ex.submit(run_chunk, settings, seeds, device_kind=device_kind(config, backends))
                pending[fut] = (config, seeds)
            if time_limit and time.perf_counter() - t0 > time_limit:
                todo.clear()
            if not pending:
                break
            done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for fut in done:
                config, seeds = pending.pop(fut)
                try:
                    results = fut.result()
                except Exception as exc:  # noqa: BLE001 - a failed job is reported, with its seeds
                    lost.append(f"{config} seeds {seeds[0]}..{seeds[-1]}: {type(exc).__name__}: {exc}")
                    continue
                entries = [record_entry(record, hit) for record, hit in results]
                if log is not None:  # one line per chunk, flushed: a killed run keeps every finished chunk
                    log.write(json.dumps({"config": config, "seeds": seeds, "records": entries}) + "\n")
                    log.flush()
                for entry in entries:
                    tallies[config].add(entry, entry["bins"])
                bar.update(len(results))
    if log is not None:
        log.close()
    bar.close()
    seconds = time.perf_counter() - t0
    programs = sum(t.programs for t in tallies.values())
    return {"configs": list(configs), "backends": list(backends), "requested": count, "programs": programs,
            "resumed_programs": resumed,
            "mismatches_or_crashes": sum(len(t.failing_seeds) for t in tallies.values()), "lost_jobs": lost,
            "seconds": seconds, "programs_per_s": (programs - resumed) / max(seconds, 1e-9),
            "presets": {c: t.to_dict() for c, t in tallies.items()}}


def report_from_journal(journal: str | Path, configs: Sequence[str], count: int, *,
                        backends: Sequence[str] = DEFAULT_BACKENDS) -> dict[str, Any]:
    """The report of the programs a journal holds (of ``configs``), without running anything
    (a campaign that was stopped, or one still running)."""
    path = Path(journal)
    tallies = {c: PresetTally(c, Coverage.for_config(load_config(c))) for c in configs}
    for (config, _), records in sorted(read_journal(path).items()):
        if config in tallies:
            for rec in records:
                tallies[config].add(rec, rec["bins"])
    programs = sum(t.programs for t in tallies.values())
    return {"configs": list(configs), "backends": list(backends), "requested": count, "programs": programs,
            "resumed_programs": programs, "report_only": True,
            "mismatches_or_crashes": sum(len(t.failing_seeds) for t in tallies.values()), "lost_jobs": [],
            "seconds": 0.0, "programs_per_s": 0.0, "presets": {c: t.to_dict() for c, t in tallies.items()}}


def format_report(rep: dict[str, Any]) -> str:
    """The summary table."""
    lines = [f"{'preset':<9} {'programs':>9} {'instructions':>13} {'failures':>9} {'coverage':>9}"]
    for c, p in rep["presets"].items():
        lines.append(f"{c:<9} {p['programs']:>9,} {p['instructions']:>13,} {p['failures']:>9} {p['coverage']:>9}")
    resumed = rep.get("resumed_programs", 0)
    if rep.get("report_only"):
        lines.append(f"total {rep['programs']:,} of {rep['requested']:,} programs ({','.join(rep['backends'])}) in the "
                     f"journal; failures {rep['mismatches_or_crashes']}")
    else:
        lines.append(f"total {rep['programs']:,} of {rep['requested']:,} programs ({','.join(rep['backends'])})"
                     + (f", {resumed:,} of them from the journal," if resumed else "") +
                     f" in {rep['seconds']:.0f} s ({rep['programs_per_s']:.2f} programs/s); failures "
                     f"{rep['mismatches_or_crashes']}; lost jobs {len(rep['lost_jobs'])}")
    for c, p in rep["presets"].items():
        if p.get("failure_kinds"):
            lines.append(f"  {c} failures: {p['failure_kinds']} (seeds {p['failing_seeds'][:10]})")
        if p.get("max_cycle_error"):
            lines.append(f"  {c} cycle model vs RTL: max |error| {p['max_cycle_error']['error']:.1%} "
                         f"(seed {p['max_cycle_error']['seed']})")
    for c, p in rep["presets"].items():
        if p["unreached"] and p["programs"]:
            lines.append(f"  {c} unreached: {', '.join(p['unreached'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vdla.fuzz.pool_campaign", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="tiny,default,wide", help="comma-separated presets")
    parser.add_argument("--count", type=int, default=10_000, help="programs in all, shared over the presets")
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS))
    parser.add_argument("--chunk", type=int, default=20, help="programs per pool job")
    parser.add_argument("--time", type=float, default=None, help="submit no new job after this many seconds")
    parser.add_argument("--address", default=None, help="an existing pool's scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local cluster workers")
    parser.add_argument("--out", default="fuzz-out/pool_campaign.json")
    parser.add_argument("--rtl-dir", default=None,
                        help="fuzz the module files in this folder (a copy of vdla_hw/rtl) instead of the shipped RTL")
    parser.add_argument("--journal", default=None,
                        help="append each finished chunk to this JSON-lines file; chunks already in it are skipped")
    parser.add_argument("--report-only", action="store_true",
                        help="with --journal: print the report of the programs it holds, run nothing")
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    backends = tuple(b for b in args.backends.split(",") if b)
    if args.report_only:
        if not args.journal or not Path(args.journal).exists():
            parser.error("--report-only needs --journal FILE naming an existing journal")
        rep = report_from_journal(args.journal, configs, args.count, backends=backends)
        print(format_report(rep))
        return 1 if rep["mismatches_or_crashes"] else 0
    print(f"CPU: {host_cpu_model()}, {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.address:
        rep = run_pool_campaign(args.address, configs, args.count, backends=backends, chunk=args.chunk,
                                time_limit=args.time, journal=args.journal,
                                rtl_dir=args.rtl_dir)
    else:
        from vdla.runtime.pool.kinds import parse_device
        from vdla.runtime.pool.node import local_cluster
        devices = [parse_device("vdla-cycle", 1)]
        if "rtl" in backends:
            devices += [parse_device(f"vdla-rtl@{c}", 1) for c in configs]
        with local_cluster(args.workers, devices, port=0) as cluster:
            rep = run_pool_campaign(cluster.scheduler_address, configs, args.count, backends=backends,
                                    chunk=args.chunk, time_limit=args.time, journal=args.journal,
                                rtl_dir=args.rtl_dir)
    rep["machine"] = {"cpu": host_cpu_model(), "cores": os.cpu_count(), "load_average_1m": os.getloadavg()[0]}
    print(format_report(rep))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=2) + "\n")
    return 1 if rep["mismatches_or_crashes"] or rep["lost_jobs"] else 0


if __name__ == "__main__":
    sys.exit(main())
