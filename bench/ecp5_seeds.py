"""Fmax of a config's ECP5 self-test build per placement seed at one target frequency, and the median.

nextpnr's placement depends on its seed: on tiny the same netlist routes anywhere in a ~8 MHz
band (docs/fpga_ecp5.md, "The placement's share"). This script places and routes the
self-test top once per seed with the LPF's FREQUENCY at the target (``build_ecp5(...,
seed=, target_mhz=)``; each seed is cached in the build cache, so a re-run only routes the
seeds it has not seen), prints a table and the median, and keeps each seed's nextpnr report
and result JSON under ``bench/results/ecp5/`` named by ``--name`` (the RTL cut measured) and
by the synthesis and nextpnr options (``--synth-options``, ``--pnr-options``, e.g.
``tiny_main-nwl_t80-tw30-ce4_seeds.json``). The
table JSON holds each bitstream's SHA-256, so two settings that gave the same placement and
routing show it.

    /work/bin/heavy python bench/ecp5_seeds.py --config tiny --seeds 1-4 --target-mhz 80 --name verdictreg

One P&R of tiny takes ~9-14 min here: run one seed per call (``--seeds 3``) to keep each
slot short; a last call over all seeds reads the cache and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import time
from pathlib import Path

import sys

from vdla_hw.fpga.ecp5_flow import parse_seeds, sweep_seeds
from vdla_hw.errors import UsageError
from vdla_hw.fpga.ecp5_pnr_options import SPEC_EXAMPLE, parse_pnr_options
from vdla_hw.fpga.ecp5_synth_options import SPEC_EXAMPLE as SYNTH_EXAMPLE
from vdla_hw.fpga.ecp5_synth_options import parse_synth_options

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)
from host import host_line, host_record  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "ecp5"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--board", default="ulx3s-selftest")
    parser.add_argument("--seeds", default="1-4", help="e.g. 1-4 or 1,3,7 (default 1-4)")
    parser.add_argument("--target-mhz", type=float, default=80.0, help="LPF FREQUENCY / nextpnr --freq (default 80)")
    parser.add_argument("--pnr-options", default=None, metavar="SPEC",
                        help=f"nextpnr placer/router options, e.g. {SPEC_EXAMPLE} (default: nextpnr's own)")
    parser.add_argument("--synth-options", default=None, metavar="FLAGS",
                        help=f"yosys synth_ecp5 flags, e.g. {SYNTH_EXAMPLE} (default: yosys's own)")
    parser.add_argument("--name", required=True, help="the cut measured; names the files in bench/results/ecp5/")
    args = parser.parse_args(argv)

    print(host_line())
    wall0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
    pnr = parse_pnr_options(args.pnr_options)
    synth = parse_synth_options(args.synth_options)
    sweep = sweep_seeds(args.config, parse_seeds(args.seeds), args.target_mhz, board=args.board, pnr=pnr, synth=synth)
    wall, cpu_s = time.perf_counter() - wall0, resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
    print(sweep.table())
    print(f"this call: {wall:.0f} s wall, {cpu_s:.0f} s CPU (seeds found in the build cache cost ~0)")

    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"{args.config}_{args.name}{synth.tag()}_t{sweep.target_mhz:g}{pnr.tag()}"
    for r in sweep.results:
        shutil.copyfile(r.report, RESULTS / f"{stem}_seed{r.seed}_report.json")
        (RESULTS / f"{stem}_seed{r.seed}_ecp5_result.json").write_text(json.dumps(r.to_json(), indent=2) + "\n")
    doc = {**sweep.to_json(), "name": args.name, "host": host_record(),
           "note": "each seed's P&R seconds are wall time on a 2-core machine shared with other jobs",
           # the bitstream's hash tells whether two settings gave the same placement and routing
           "seeds": [{**{k: v for k, v in r.to_json().items() if k not in ("logs", "utilization")},
                      "bitstream_sha256": hashlib.sha256(r.bitstream.read_bytes()).hexdigest()}
                     for r in sweep.results]}
    out = RESULTS / f"{stem}_seeds.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except UsageError as exc:  # a bad option: its message and fix, not a traceback
        print(f"error: {exc}" + (f"\nhint: {exc.hint}" if getattr(exc, "hint", None) else ""), file=sys.stderr)
        raise SystemExit(2) from None
