"""The ULX3S SoC: simulated-SoC cycles vs the cycle model, the link, and the digits CNN end to end.

For the board's config (the board table's ``default_config``):

1. **Cycles.** Programs (system programs, random programs, small compiled conv layers) run on the
   whole SoC under Verilator (UART bridge, LiteDRAM + SDRAM model, accelerator; driven by the serial
   driver through a pty) and on the cycle model with the board's DRAM timing (the board table's
   ``dram_timing``: latency, cycles per bus beat of the 16-bit SDRAM, per-burst cost; reads and
   writes share it), read off the SoC's traced memory path (docs/fpga_ulx3s.md, "Where the cycles
   go").  ``--fit`` searches those values around the board's, to see how far a fit would move them.  The rtl backend (the harness's fixed-latency DRAM at the preset's latency)
   runs beside them.  Error = (model - SoC) / SoC; the target is 5%.
2. **Link.** Modeled time to move each program's image over the UART bridge at the bitstream's
   baud: 10 bits per byte, 6 header bytes per 255-word frame, one read frame in flight with the
   FTDI's USB turnaround per read frame (``--usb-turnaround-ms``; 1 ms needs the ftdi_sio
   latency_timer set to 1).
3. **Digits CNN.** The README's digits model compiled for the board's config: per VDLA node the
   link time (image up, stored bytes down) plus the cycle model's cycles at the SoC clock, plus the
   host's CPU nodes, against onnxruntime on this host (the peer, same run).

Run: ``python bench/ulx3s.py [--randoms N]``; writes ``bench/results/ulx3s.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from host import host_line, host_record
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import Conv2dWorkload, Requantize, compile_conv2d, random_conv_data, requant_shift
from vdla.runtime.backends import run
from vdla.runtime.fpga.relocate import store_ranges
from vdla.runtime.fpga.serial_board import open_serial_board
from vdla.runtime.fpga.serial_link import MAX_WORDS
from vdla.runtime.program import Program
from vdla.runtime.system_programs import build_case, case_names
from vdla_hw.config import HwConfig, load_config
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.ulx3s_sim import SimulatedUlx3s

TARGET = 0.05
ROOT = Path(__file__).resolve().parents[1]


def programs(cfg: HwConfig, randoms: int) -> list[tuple[str, Program]]:
    rows = [(name, build_case(cfg, name)) for name in case_names(randoms)]
    target = VdlaTarget.from_config(cfg.name)
    for wl in (Conv2dWorkload(cfg.batch, 4 * cfg.block_in, 8, 8, 4 * cfg.block_out, 1, 1, 1, 0),
               Conv2dWorkload(cfg.batch, 2 * cfg.block_in, 8, 8, 2 * cfg.block_out, 3, 3, 1, 1)):
        compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=requant_shift(wl)))
        rows.append((f"conv {wl.kh}x{wl.kw} {wl.ic}->{wl.oc} {wl.h}x{wl.w}",
                     compiled.module.bind(*compiled.pack_inputs(*random_conv_data(wl)))))
    return rows


def with_timing(program: Program, timing: dict[str, int]) -> Program:
    """``program`` with DRAM timing fields of its config replaced (what the cycle model reads)."""
    return dataclasses.replace(program, config=program.config.replace(timing=timing))


def fit_timing(jobs: list[tuple[str, Program]], soc: list[int], start: dict[str, int]) -> dict[str, int]:
    """The DRAM timing around ``start`` with the least mean |error| against ``soc`` (coordinate descent)."""
    def mean_err(timing: dict[str, int]) -> float:
        cycles = [run(with_timing(p, timing), "cycle").cycles or 0 for _, p in jobs]
        return float(np.mean([abs(m - s) / s for m, s in zip(cycles, soc)]))

    best, err = dict(start), mean_err(start)
    steps = {"dram_latency": 1, "dram_beat_cycles": 1, "dram_burst_cycles": 1}
    improved = True
    with tqdm(desc="fitting the DRAM timing", unit="config") as bar:
        while improved:
            improved = False
            for key, step in steps.items():
                for delta in (-step, step):
                    trial = {**best, key: best[key] + delta}
                    if trial[key] < (1 if key == "dram_beat_cycles" else 0):
                        continue
                    e = mean_err(trial)
                    bar.update()
                    if e < err:
                        best, err, improved = trial, e, True
    return best


def link_seconds(up: int, down: int, baud: int, turnaround_s: float) -> float:
    """Modeled seconds to write ``up`` and read ``down`` bytes over the bridge (see the docstring)."""
    frame = 4 * MAX_WORDS
    up_wire = up + 6 * -(-up // frame)
    down_frames = -(-down // frame)
    down_wire = down + 6 * down_frames
    return (up_wire + down_wire) * 10 / baud + down_frames * turnaround_s


def digits(cfg: HwConfig, clk_hz: float, timing: dict[str, int], baud: int, turnaround_s: float) -> dict:
    """The digits CNN compiled for ``cfg``: modeled end-to-end time on the board, and onnxruntime's."""
    sys.path.insert(0, str(ROOT / "tests" / "graph"))
    from make_models import digits_split  # noqa: PLC0415

    from vdla.compiler.examples import MODEL_PATH
    from vdla.runtime.graph_executor import load

    x_tr, _, x_te, _ = digits_split()
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "calib.npz", x=x_tr[:16])
        model = Path(tmp) / "digits.vdla"
        subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "compile", str(MODEL_PATH), "--target", "vdla",
                        "--config", cfg.name, "--calibrate", str(Path(tmp) / "calib.npz"), "-o", str(model)],
                       check=True, capture_output=True)
        module = load(model)
        x = x_te[:1]
        _, profile = module.profile(x, backend="cycle", repeat=5)
    cpu_s = profile.cpu_seconds
    vdla_s, up_total, down_total, cycles_total = 0.0, 0, 0, 0
    nodes = [n for n in module.graph["nodes"] if n.get("program") is not None]
    for program in (module.programs[n["program"]] for n in nodes):
        p = with_timing(program, timing)
        cycles = run(p, "cycle").cycles or 0
        up = program.dram.size
        down = sum(e - s for s, e in store_ranges(program))
        vdla_s += cycles / clk_hz + link_seconds(up, down, baud, turnaround_s)
        up_total, down_total, cycles_total = up_total + up, down_total + down, cycles_total + cycles
    import onnxruntime as ort  # noqa: PLC0415

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(MODEL_PATH), opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: x})
    t0 = time.perf_counter()
    for _ in range(20):
        sess.run(None, {name: x})
    ort_s = (time.perf_counter() - t0) / 20
    return {"vdla_programs": len(nodes), "upload_bytes": up_total, "download_bytes": down_total,
            "cycles": cycles_total, "board_seconds": vdla_s + cpu_s, "vdla_seconds": vdla_s, "host_cpu_seconds": cpu_s,
            "onnxruntime_host_seconds": ort_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--randoms", type=int, default=4, help="random programs (default 4)")
    parser.add_argument("--usb-turnaround-ms", type=float, default=1.0, help="USB latency per read frame (default 1)")
    parser.add_argument("--no-digits", action="store_true", help="skip the digits CNN")
    parser.add_argument("--fit", action="store_true", help="fit the DRAM timing again, from the board's")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "ulx3s.json"))
    args = parser.parse_args()

    board_info = get_board("ulx3s")
    cfg = load_config(board_info.default_config)
    timing = dict(board_info.dram_timing)
    print(f"{host_line()} (simulation speed only; cycle counts do not depend on it)")
    print(f"board: ulx3s, config {cfg.label()}")
    jobs = programs(cfg, args.randoms)
    soc_rows = []
    with SimulatedUlx3s(cfg) as sim:
        info = sim.info
        board = open_serial_board(sim.folder, sim.port, timeout=120)
        try:
            for name, program in tqdm(jobs, desc="SoC simulation"):
                t0 = time.perf_counter()
                r = board.run(program)
                fsim = run(program, "fsim")
                rtl = run(program, "rtl")
                soc_rows.append({"program": name, "instructions": program.insn_count, "soc_cycles": r.cycles,
                                 "rtl_cycles": rtl.cycles, "bit_exact": bool(np.array_equal(r.dram, fsim.dram)),
                                 "upload_bytes": r.extra["upload_bytes"], "download_bytes": r.extra["download_bytes"],
                                 "sim_wall_seconds": time.perf_counter() - t0})
        finally:
            board.close()
    if args.fit:
        timing = fit_timing(jobs, [r["soc_cycles"] for r in soc_rows], timing)
    model = [run(with_timing(p, timing), "cycle").cycles for _, p in jobs]
    latency_only = [run(with_timing(p, {"dram_latency": timing["dram_latency"]}), "cycle").cycles for _, p in jobs]
    clk, baud, turn = info["sys_clk_hz"], info["baud"], args.usb_turnaround_ms * 1e-3
    for r, m, lo in zip(soc_rows, model, latency_only):
        r["latency_only_cycles"] = lo
        r["cycle_model_cycles"] = m
        r["relative_error"] = (m - r["soc_cycles"]) / r["soc_cycles"]
        r["link_seconds"] = link_seconds(r["upload_bytes"], r["download_bytes"], baud, turn)
        r["run_seconds"] = r["soc_cycles"] / clk

    shown = ", ".join(f"{k} = {v}" for k, v in timing.items())
    print(f"\nSoC (simulated, SDRAM {info['sdram_module']} at {clk / 1e6:g} MHz) vs the cycle model with the board's "
          f"DRAM timing ({shown}; the preset: dram_latency = {cfg.timing.dram_latency}, one beat per cycle); "
          f"error = (model - SoC) / SoC; 'latency only' = the model with just that latency")
    head = (f"{'program':<28} {'insns':>6} {'SoC cycles':>11} {'model':>9} {'error':>7} {'latency only':>12} "
            f"{'rtl (fixed lat)':>15} "
            f"{'exact':>5} {'up B':>7} {'down B':>7} {'link ms':>8} {'run ms':>7}")
    print(head)
    print("-" * len(head))
    for r in soc_rows:
        flag = "" if abs(r["relative_error"]) <= TARGET else " >5%"
        print(f"{r['program']:<28} {r['instructions']:>6} {r['soc_cycles']:>11,} {r['cycle_model_cycles']:>9,} "
              f"{r['relative_error']:>+7.1%} {(r['latency_only_cycles'] - r['soc_cycles']) / r['soc_cycles']:>+12.1%} "
              f"{r['rtl_cycles']:>15,} {str(r['bit_exact']):>5} {r['upload_bytes']:>7,} "
              f"{r['download_bytes']:>7,} {1e3 * r['link_seconds']:>8.2f} {1e3 * r['run_seconds']:>7.3f}{flag}")
    within = sum(abs(r["relative_error"]) <= TARGET for r in soc_rows)
    mean_abs = float(np.mean([abs(r["relative_error"]) for r in soc_rows]))
    print(f"within 5%: {within}/{len(soc_rows)}; mean |error| {mean_abs:.1%}")
    print(f"link: UART bridge at {baud:,} baud = {baud / 10 / 1e3:.0f} kB/s raw; USB turnaround "
          f"{args.usb_turnaround_ms:g} ms per read frame of {4 * MAX_WORDS} bytes")

    out = {"host": host_record(), "config": cfg.name, "sys_clk_hz": clk, "baud": baud,
           "dram_timing": timing, "fitted": args.fit, "target": TARGET, "rows": soc_rows, "within_target": within,
           "mean_abs_error": mean_abs}
    if not args.no_digits:
        d = digits(cfg, clk, timing, baud, turn)
        out["digits"] = d
        print(f"\ndigits CNN on the board (modeled): {1e3 * d['board_seconds']:.1f} ms = VDLA {1e3 * d['vdla_seconds']:.1f} "
              f"ms ({d['vdla_programs']} programs, {d['cycles']:,} cycles, {d['upload_bytes']:,} B up, "
              f"{d['download_bytes']:,} B down) + host CPU nodes {1e3 * d['host_cpu_seconds']:.2f} ms; "
              f"peer: onnxruntime on this host {1e3 * d['onnxruntime_host_seconds']:.3f} ms")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
