"""The cycle model's error against the RTL on the fuzzer's random programs (issue 24 part 5).

For each preset, programs ``draw_plan(cfg, seed, max_rounds=6)`` / ``build_program`` for seeds
``0..count-1`` (the programs ``vdla fuzz --config C --seed 0`` runs) run on the ``cycle`` backend
and on the ``rtl`` backend (the Verilated RTL, the peer), and the relative error
``(cycle - rtl) / rtl`` is summarised: median, p95 and max of its magnitude, the worst seed.

RTL runs dominate the time (each runs with ``no_precheck``: the cycle model has just run the same
program through the shared semantics, which raise on any fault, so fsim's pre-check would only
repeat that).  The JSON is rewritten after every preset and every ``--save-every`` programs, so an
interrupted campaign keeps what it measured (a preset cut short says so: ``programs`` < ``--count``).  ``--rtl-from PATH`` takes each seed's RTL cycle count from an earlier
run's JSON (``rows``) instead, so a cycle-model change is re-measured on the same programs in
minutes (a seed whose instruction count differs from the saved row runs on the RTL again: the generator moved); use it only while the RTL's timing is unchanged (``--check N`` re-runs the first N seeds
on the RTL and stops if any count differs).

    python bench/fuzz_cycle_error.py --configs tiny --count 1000 --out bench/results/fuzz_cycle_error.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from vdla.fuzz.generator import build_program, draw_plan
from vdla.runtime.backends import get_backend
from vdla_hw.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: this file may be loaded by path (a test does)
from host import host_line, host_record  # noqa: E402

ROW_FIELDS = ("seed", "rtl_cycles", "cycle_cycles", "instructions", "error")


def summarise(rows: list[list[float]]) -> dict[str, float | int]:
    """Median, p95 and max of |error| and the seed of the max."""
    errs = np.array([abs(r[4]) for r in rows])
    worst = int(np.argmax(errs))
    return {"programs": len(rows), "median": float(np.median(errs)), "p95": float(np.percentile(errs, 95)),
            "max": float(errs[worst]), "worst_seed": int(rows[worst][0]), "worst_error": float(rows[worst][4]),
            "above_4pct": int((errs > 0.04).sum())}


def read_saved(path: Path) -> dict[str, dict[int, tuple[int, int]]]:
    """Per preset, each seed's (RTL cycles, instruction count) from an earlier run.

    ``path`` is this script's JSON (``presets.*.rows``) or a ``vdla.fuzz.pool_campaign`` journal
    (``*.jsonl``: one line per chunk, ``records`` with ``cycles.rtl``), which holds the same programs
    (``draw_plan(cfg, seed, max_rounds=6)``).
    """
    if not path.is_file():
        raise SystemExit(f"--rtl-from {path}: no such file; give a JSON of this script or a pool campaign's journal")
    saved: dict[str, dict[int, tuple[int, int]]] = {}
    if path.suffix == ".jsonl":
        for line in path.read_text().splitlines():
            chunk = json.loads(line)
            for rec in chunk.get("records", []):
                rtl = (rec.get("cycles") or {}).get("rtl")
                if rtl is not None and rec.get("failure") is None:
                    saved.setdefault(chunk["config"], {})[int(rec["seed"])] = (int(rtl), int(rec["instructions"]))
        return saved
    for config, p in json.loads(path.read_text())["presets"].items():
        fields = p.get("row_fields", list(ROW_FIELDS))
        saved[config] = {int(r[fields.index("seed")]): (int(r[fields.index("rtl_cycles")]), int(r[fields.index("instructions")]))
                         for r in p["rows"]}
    return saved


def measure(config: str, count: int, saved: dict[int, tuple[int, int]] | None, check: int,
            checkpoint: Callable[[list[list[float]]], None], every: int, saved_only: bool = False,
            first: int = 0) -> list[list[float]]:
    cfg = load_config(config)
    cycle, rtl = get_backend("cycle"), get_backend("rtl")
    rows: list[list[float]] = []
    for seed in tqdm(range(first, first + count), desc=f"{config} cycle vs rtl", unit="prog"):
        program, _ = build_program(cfg, draw_plan(cfg, seed, max_rounds=6))
        # A seed whose program changed since the saved run (its instruction count differs: the
        # generator moved) is run on the RTL again.
        same = saved is not None and seed in saved and saved[seed][1] == program.insn_count
        if saved_only and not same:
            continue
        c = cycle.run(program).cycles
        if same and seed >= first + check:
            r = saved[seed][0]
        else:
            r = rtl.run(program, no_precheck=True).cycles
            if same and saved[seed][0] != r:
                raise SystemExit(f"{config} seed {seed}: the RTL now takes {r} cycles, the saved run {saved[seed][0]}: "
                                 "the RTL's timing changed; re-run without --rtl-from")
        rows.append([seed, r, c, program.insn_count, round((c - r) / r, 5)])
        if len(rows) % every == 0:
            checkpoint(rows)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", default=["tiny", "default", "wide"])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="first seed (default 0): seeds FIRST..FIRST+COUNT-1, to share "
                    "a campaign over processes")
    ap.add_argument("--rtl-from", type=Path, default=None,
                    help="JSON of an earlier run, or a pool campaign's journal (.jsonl): its RTL cycles per seed")
    ap.add_argument("--check", type=int, default=20, help="with --rtl-from: seeds re-run on the RTL (default 20)")
    ap.add_argument("--saved-only", action="store_true",
                    help="with --rtl-from: leave out the seeds it has no RTL count for (or a different program)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/fuzz_cycle_error.json"))
    ap.add_argument("--save-every", type=int, default=50, help="rewrite the JSON every N programs (default 50)")
    args = ap.parse_args()

    old = read_saved(args.rtl_from) if args.rtl_from else {}
    print(f"{host_line()}; programs: draw_plan(seed, max_rounds=6), seeds {args.first}..{args.first + args.count - 1}")
    presets: dict[str, dict] = {}
    t0 = time.time()

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"how": __doc__.splitlines()[0], "host": host_record(),
                                        "seconds": round(time.time() - t0, 1), "count": args.count,
                                        "presets": presets}, indent=1) + "\n")

    for config in args.configs:
        saved = old.get(config)

        def record(rows: list[list[float]], config: str = config, saved: dict[int, tuple[int, int]] | None = saved) -> None:
            presets[config] = {"summary": summarise(rows), "rtl_from": str(args.rtl_from) if saved else None,
                               "row_fields": list(ROW_FIELDS), "rows": rows}
            save()

        record(measure(config, args.count, saved, args.check, record, args.save_every, args.saved_only and saved is not None,
                       args.first))
    print(f"\n{'preset':<8} {'programs':>8} {'median':>8} {'p95':>8} {'max':>8} {'worst seed':>10} {'>4%':>5}")
    for config, p in presets.items():
        s = p["summary"]
        print(f"{config:<8} {s['programs']:>8} {s['median']:>8.2%} {s['p95']:>8.2%} {s['max']:>8.2%} "
              f"{s['worst_seed']:>10} {s['above_4pct']:>5}")
    save()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
