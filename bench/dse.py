"""Design-space exploration of ResNet-18 (and MobileNetV2) on VDLA: a 12-point sweep plus the default preset
as the peer.

Every point: its RTL linted, yosys xc7 resources, the boards it fits, ResNet-18's conv layers
C2-C12 compiled and timed on the cycle model (bit-exact against NumPy).  The default preset is
evaluated in the same run and each point's speed-up and LUT ratio are reported against it.  Names
the Pareto-optimal configs (latency against LUTs, among the configs that fit the board) for the
PYNQ-Z2 and the ZCU104, and writes JSON and the Pareto plots to bench/results/.

    python bench/dse.py [--jobs 2] [--quick] [--fmax] [--models resnet18,mobilenet_v2] [--resolution 224]
                        [--presets all] [--only "block=8 bus=128 acc_depth=1024"] [--before REV] [--before-record FILE]

``--presets`` adds the named presets as points beside the default peer (``all``: every preset).
``--only`` keeps the sweep points whose label has all the given ``name=value`` items (repeatable;
``--only none`` drops the sweep): a stated subset when the whole sweep cannot be synthesised in time.
``--before REV`` evaluates the presets again on the tree of commit REV (``bench/dse_peer.py`` in a
subprocess: that tree's own RTL, synthesis, compiler and cycle model) and ``--before-record FILE``
takes the "before" of the sweep points and the default peer from an earlier run's JSON (by label);
the run then prints one table with each config's resources and latency before -> after.

``--models`` adds whole models (torchvision, random weights, exported to ONNX as users do:
``tests/models/zoo.py``): every kernel the graph compiler puts on the VDLA for the point's config
is timed, convs, dense, residual adds and pools alike (``vdla dse --model``), and the latency is
their sum at the config clock.  ``resnet18`` alone is the conv-layer table C2-C12.

The sweep (on the default preset): block 4/8 x bus 64/128 bits x accumulator depth 512/1024/2048,
with the input and weight buffers held at 2048 and 1024 elements and every multiplier on DSPs
(``lut_macs=0``; the default preset builds 96 of its 256 from LUTs, which an 8x8 core does not have).
Synthesis dominates the run: a 4x4 or 8x8 core takes minutes of yosys, the 16x16 default ~10
minutes of CPU, a 32x32 core much longer; ``--sweep block=8,16,32 ...`` runs the larger space on
a machine with the hours for it.  Results are cached per config (``vdla dse``'s cache): a re-run
re-measures only what changed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)
from host import host_line, host_record  # noqa: E402
from vdla.compiler.dse.plots import plot_pareto  # noqa: E402
from vdla.compiler.dse.evaluate import PointResult  # noqa: E402
from vdla.compiler.dse.report import board_front, format_table, to_json, write_json  # noqa: E402
from vdla.compiler.dse.run import run_sweep  # noqa: E402
from vdla.compiler.dse.sweep import SweepPoint, parse_sweep, sweep_points  # noqa: E402
from vdla.compiler.dse.workloads import Workloads, onnx_model, resnet18  # noqa: E402
from vdla_hw.errors import VdlaError  # noqa: E402
from vdla_hw.config import ConfigError, load_config  # noqa: E402
from vdla_hw.config import preset_names as all_presets  # noqa: E402

SWEEP = ["block=4,8", "bus=64,128", "acc_depth=512,1024,2048", "inp_depth=2048", "wgt_depth=1024", "lut_macs=0"]
BOARDS = ("pynq-z2", "zcu104")
RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=2, help="configs evaluated at once (processes)")
    p.add_argument("--quick", action="store_true", help="ResNet-18's quick subset (C5, C8, C11) instead of C2-C12")
    p.add_argument("--fmax", action="store_true", help="nextpnr Fmax on the ECP5-85F where a config fits")
    p.add_argument("--sweep", nargs="+", default=SWEEP, metavar="NAME=V1,V2",
                   help=f"the sweep (as for vdla dse; default: {' '.join(SWEEP)})")
    p.add_argument("--models", default="resnet18",
                   help="comma-separated: resnet18 (its conv layers) and/or whole models from the zoo (mobilenet_v2)")
    p.add_argument("--resolution", type=int, default=224, help="input size of the whole models")
    p.add_argument("--presets", default="", help="presets evaluated beside the default peer (comma-separated, or all)")
    p.add_argument("--only", action="append", default=[], metavar="LABEL",
                   help="keep the sweep points whose label has all these name=value items (repeatable; none: no sweep)")
    p.add_argument("--before", metavar="REV", help="also evaluate the presets on commit REV's tree (the 'before' side)")
    p.add_argument("--before-record", metavar="FILE",
                   help="an earlier run's JSON: the 'before' of the sweep points and the default peer, by label")
    p.add_argument("--latency-only", action="store_true",
                   help="no synthesis: the cycle model's latency per config, resources only where the synthesis "
                        "cache holds them (a stated subset when yosys cannot run in the time)")
    p.add_argument("--rerender", metavar="FILE",
                   help="with --latency-only: no simulation; FILE (an earlier --latency-only JSON of the same points) "
                        "with the resources the caches and --area hold now, written to --out with its table and plot")
    p.add_argument("--area", metavar="FILE",
                   help="bench/area_presets.py's JSON: each preset's resources before and after where this run has none")
    p.add_argument("--out", default=str(RESULTS / "dse.json"))
    args = p.parse_args(argv)
    extra = [m for m in args.models.split(",") if m and m != "resnet18"]
    if "resnet18" not in args.models.split(","):
        raise SystemExit("--models must include resnet18 (the sweep's reference table)")
    presets = preset_names(args.presets)
    record = None
    if args.before_record:
        try:
            recorded = json.loads(Path(args.before_record).read_text())
            record, measured = recorded["points"], recorded["meta"]["workloads"]
        except (OSError, ValueError, KeyError) as exc:
            raise SystemExit(f"--before-record {args.before_record}: not a bench/dse.py result ({exc}); give the "
                             "JSON an earlier run wrote") from None
        wanted = set(resnet18(args.quick).layers)
        has = {lay["name"] for lay in (recorded["points"][0].get("layers") or []) if isinstance(lay, dict)}
        if measured != resnet18(args.quick).name and not (args.latency_only and wanted <= has):
            raise SystemExit(f"--before-record {args.before_record} measured {measured}, this run "
                             f"{resnet18(args.quick).name}: give a record of the same layers (or drop --quick)")

    print(host_line())
    base = load_config("default")
    params = parse_sweep(args.sweep)
    peer = SweepPoint((), base)
    swept_points = [pt for pt in sweep_points(base, params) if selected(pt.label, args.only)]
    points = [peer] + [SweepPoint((("preset", n),), load_config(n)) for n in presets] + swept_points
    workloads = resnet18(args.quick)
    start = time.perf_counter()
    if args.latency_only and args.rerender:
        return rerender(args, points)
    if args.latency_only:
        return latency_only(args, points, presets, record, workloads, extra)
    results = run_sweep(points, workloads, jobs=args.jobs, fmax=args.fmax)
    reference, swept = results[0], results[1:]
    reference = replace(reference, label="default (peer)")
    print(f"\nVDLA {workloads.name} ({len(workloads.layers)} conv layers, cycle model) on {len(swept)} configs "
          f"({' '.join(args.sweep)}) and the default preset")
    print(format_table([reference, *swept], reference))
    picks = {}
    for board in BOARDS:
        front = board_front([reference, *swept], board)
        picks[board] = [r.label for r in front]
        names = ", ".join(f"{r.label} ({r.latency_ms:.2f} ms, {r.hardware.luts:,} LUT)" for r in front)  # type: ignore[union-attr]
        print(f"Pareto-optimal for {board} (fits its LUT/FF/DSP/BRAM; latency vs LUTs): {names or 'none fits'}")
    measured = [r for r in swept if r.ok]
    if reference.ok and measured:
        best = min(measured, key=lambda r: r.latency_ms)
        print(f"fastest swept config: {best.label}, {reference.latency_ms / best.latency_ms:.2f}x the default preset's "
              f"speed at {best.hardware.luts / reference.hardware.luts:.2f}x its LUTs")  # type: ignore[union-attr]
    out = Path(args.out)
    meta = {"workloads": workloads.name, "layers": list(workloads.layers), "base_config": base.label(), "sweep": args.sweep,
            "fmax": args.fmax, "host": host_record(), "wall_seconds": round(time.perf_counter() - start, 1)}
    doc = to_json([reference, *swept], meta, reference)
    doc["picks"] = picks
    write_json(out, doc)
    png = plot_pareto([reference, *swept], out.with_name("dse_pareto.png"), f"ResNet-18 on VDLA: {len(swept) + 1} configs")
    for name in extra:
        model = run_model(name, args.resolution, points, args.jobs, args.fmax)
        doc.setdefault("models", {})[name] = model
        write_json(out, doc)
    if args.before or record is not None:
        before: dict[str, dict] = {}  # type: ignore[type-arg]
        for p_ in record or []:
            before[p_["label"]] = {**p_, "source": f"record {args.before_record}"}
        if args.before and presets:
            for p_ in run_before(args.before, presets, args.quick):
                before[p_["label"]] = p_
        rows = before_after([reference, *swept], before, doc.get("models", {}))
        doc["before_after"] = {"before": args.before, "before_record": args.before_record, "rows": rows}
        write_json(out, doc)
        print(f"\nBefore -> after ({workloads.name}; before: {args.before or '-'} for the presets, "
              f"{args.before_record or '-'} for the sweep points)")
        print(format_before_after(rows))
        arrows = plot_before_after(rows, out.with_name(out.stem + "_before_after.png"))
        print(f"wrote {arrows}")
    print(f"wrote {out} and {png} in {time.perf_counter() - start:.0f} s")
    return 0


def latency_only(args: argparse.Namespace, points: list[SweepPoint], presets: list[str], record: list[dict] | None,  # type: ignore[type-arg]
                 workloads: Workloads, extra: list[str]) -> int:
    """``--latency-only``: every point on the cycle model (ResNet-18 and the ``--models``), resources where cached,
    the presets' "before" on ``--before``'s tree and the sweep points' from ``--before-record``; one table."""
    sys.path.insert(0, str(Path(__file__).parent))
    from area_presets import cached_xc7

    from vdla.compiler.dse.workloads import layer_times
    from vdla_hw.progress import bar

    start = time.perf_counter()
    model_wl = {name: model_workloads(name, args.resolution) for name in extra}
    rows = []
    with bar(total=len(points) * (1 + len(extra)), desc="cycle model", unit="run") as progress:
        for pt in points:
            label = "default (peer)" if not pt.values else pt.label
            row: dict = {"label": label, "before": None}  # type: ignore[type-arg]
            if pt.config is None:
                rows.append({**row, "after": None, "failure": pt.error})
                progress.update(1 + len(extra))
                continue
            cfg = pt.config
            progress.set_postfix_str(f"{label} {workloads.name}", refresh=True)
            layers = layer_times(workloads, cfg)
            cycles = sum(lt.cycles for lt in layers)
            row["after"] = {**(cached_xc7(cfg) or {}), "cycles": cycles, "mhz": cfg.clock_mhz,
                            "latency_ms": cycles / (cfg.clock_mhz * 1e3), "layers": {lt.name: lt.cycles for lt in layers}}
            progress.update(1)
            for name, wl in model_wl.items():
                progress.set_postfix_str(f"{label} {name}", refresh=True)
                try:
                    mlayers = layer_times(wl, cfg)
                except VdlaError as exc:
                    row[f"{name}_ms"] = None
                    row[f"{name}_failure"] = str(exc)
                else:
                    vdla = sum(lt.cycles for lt in mlayers)
                    host_ms = sum(lt.host_ms for lt in mlayers)
                    row[f"{name}_ms"] = vdla / (cfg.clock_mhz * 1e3) + host_ms
                    row[f"{name}_detail"] = {"vdla_cycles": vdla, "host_ms": host_ms,
                                             "vdla_kernels": sum(lt.device == "vdla" for lt in mlayers),
                                             "host_kernels": sum(lt.device == "host" for lt in mlayers),
                                             "kernels": {lt.name: lt.cycles for lt in mlayers if lt.device == "vdla"}}
                progress.update(1)
            rows.append(row)
    by_label = {row["label"]: row for row in rows}
    for p_ in record or []:
        if p_["label"] in by_label and p_.get("ok"):
            hw = p_["hardware"]
            per_layer = {lay["name"]: lay["cycles"] for lay in p_["layers"]}
            cycles = sum(per_layer[name] for name in workloads.layers)  # the record may have measured more layers
            by_label[p_["label"]]["before"] = {"luts": hw["luts"], "ffs": hw["ffs"], "dsps": hw["dsps"],
                                               "bram36": hw["bram36"], "cycles": cycles, "mhz": hw["fmax_mhz"],
                                               "latency_ms": cycles / (hw["fmax_mhz"] * 1e3),
                                               "source": f"record {args.before_record}"}
    if args.before:
        # the default peer too, and the sweep points the record holds: each on the older tree (its compiler and
        # cycle model; a recorded point with the config the record ran), latency and the --models' VDLA cycles
        specs = [("default (peer)", "default")] + [(f"preset={n}", n) for n in presets]
        for p_ in record or []:
            if p_["label"] in by_label and p_.get("config_json") and not p_["label"].startswith("preset="):
                specs.append((p_["label"], p_["config_json"]))
        model_paths = {name: str(wl.model) for name, wl in model_wl.items()}
        try:
            found = run_before(args.before, [sp for _, sp in specs], args.quick, latency_only=True, models=model_paths)
        except SystemExit as exc:  # keep the "after" side this run measured; the table says "before" is missing
            print(f"warning: {exc}", file=sys.stderr)
            found = []
        for (label, _), p_ in zip(specs, found):
            row = by_label.get(label)
            if row is None:
                continue
            old = row["before"] or {}
            kept = {k: old[k] for k in ("luts", "ffs", "dsps", "bram36") if k in old}  # the record's resources
            row["before"] = {**(p_["xc7"] or {}), **kept, "cycles": p_["cycles"], "mhz": p_["mhz"],
                             "latency_ms": p_["cycles"] / (p_["mhz"] * 1e3), "note": p_["note"],
                             "layers": p_["layers"],
                             "source": p_["source"] + (f"; resources: record {args.before_record}" if kept else "")}
            for name, m in (p_.get("models") or {}).items():
                row[f"{name}_before"] = m
    out = Path(args.out)
    doc = {"meta": {"mode": "latency-only", "workloads": workloads.name, "layers": list(workloads.layers),
                    "models": extra, "resolution": args.resolution, "before": args.before,
                    "before_record": args.before_record, "host": host_record(),
                    "wall_seconds": round(time.perf_counter() - start, 1)},
           "before_after": {"before": args.before, "before_record": args.before_record, "rows": rows}}
    write_json(out, doc)
    print(f"\nBefore -> after, cycle model ({workloads.name}; before: {args.before or '-'} for the presets, "
          f"{args.before_record or '-'} for the sweep points; resources where synthesised, else -)")
    print(format_before_after(rows))
    png = plot_before_after(rows, out.with_name(out.stem + "_before_after.png"))
    print(f"wrote {out} and {png} in {time.perf_counter() - start:.0f} s")
    return 0


def fill_resources(rows: list[dict], points: list[SweepPoint], area: dict | None) -> None:  # type: ignore[type-arg]
    """Resources where a row lacks them: "after" from this tree's synthesis caches (``cached_xc7``), and each
    preset's two sides from ``bench/area_presets.py``'s JSON ``area`` (its own flows, same sources)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from area_presets import cached_xc7

    keys = ("luts", "ffs", "dsps", "bram36")
    configs = {("default (peer)" if not pt.values else pt.label): pt.config for pt in points}
    for row in rows:
        cfg = configs.get(row["label"])
        if row["after"] is not None and row["after"].get("luts") is None and cfg is not None:
            row["after"].update(cached_xc7(cfg) or {})
        name = "default" if row["label"] == "default (peer)" else row["label"].removeprefix("preset=")
        sides = (area or {}).get("presets", {}).get(name) if row["label"].startswith(("preset=", "default")) else None
        for side in ("before", "after"):
            xc7 = ((sides or {}).get(side) or {}).get("xc7")
            if xc7 and row[side] is not None and row[side].get("luts") is None:
                row[side].update({k: xc7[k] for k in keys}, resources=f"bench/area_presets.py ({xc7.get('yosys', 'yowasp')})")


def rerender(args: argparse.Namespace, points: list[SweepPoint]) -> int:
    """``--rerender FILE``: an earlier latency-only run's rows with the resources known now; table, JSON and plot."""
    doc = json.loads(Path(args.rerender).read_text())
    rows = doc["before_after"]["rows"]
    area = json.loads(Path(args.area).read_text()) if args.area else None
    fill_resources(rows, points, area)
    doc["meta"]["resources"] = f"filled from the synthesis caches and {args.area or 'no area file'} by --rerender"
    out = Path(args.out)
    write_json(out, doc)
    print(format_before_after(rows))
    png = plot_before_after(rows, out.with_name(out.stem + "_before_after.png"))
    print(f"wrote {out} and {png}")
    return 0


def preset_names(spec: str) -> list[str]:
    """``--presets``: names (or ``all``), each a preset other than the default peer."""
    names = all_presets() if spec.strip() == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    for name in names:
        try:
            load_config(name)
        except ConfigError as exc:
            raise SystemExit(f"--presets: {exc}") from None
    return [n for n in names if n != "default"]


def selected(label: str, only: list[str]) -> bool:
    """Whether a sweep point's label has every ``name=value`` item of one ``--only`` entry (no entry: all)."""
    if not only:
        return True
    items = set(label.split())
    return any(entry != "none" and set(entry.split()) <= items for entry in only)


def run_before(rev: str, specs: list[str | dict], quick: bool, latency_only: bool = False,  # type: ignore[type-arg]
               models: dict[str, str] | None = None) -> list[dict]:  # type: ignore[type-arg]
    """Configs evaluated on ``rev``'s tree by ``bench/dse_peer.py``, in the order given: a preset name (one that tree
    lacks: this tree's JSON) or a config as a dict (an earlier run's ``config_json``). ``models`` (name -> ONNX
    path, with ``latency_only``): each config's VDLA cycles of those models too."""
    import tempfile

    from peer_tree import peer_tree

    with peer_tree(rev, prefix="dse_before_") as (commit, tree), tempfile.TemporaryDirectory() as tmp:
        args = []
        for i, spec in enumerate(specs):
            if isinstance(spec, dict):
                path = Path(tmp) / f"point{i}.json"
                path.write_text(json.dumps(spec))
                args.append(str(path))
            elif (tree / "vdla_hw" / "configs" / f"{spec}.json").exists():
                args.append(spec)
            else:
                args.append(str(Path(__file__).resolve().parents[1] / "vdla_hw" / "configs" / f"{spec}.json"))
        cmd = [sys.executable, str(Path(__file__).with_name("dse_peer.py"))]
        for arg in args:
            cmd += ["--config", arg]
        if quick:
            cmd.append("--quick")
        if latency_only:
            cmd.append("--latency-only")
            for name, path in (models or {}).items():
                cmd += ["--model", f"{name}={path}"]
        names = ", ".join(s if isinstance(s, str) else s.get("name", "?") for s in specs)
        print(f"before: {names} on {commit}'s tree (its RTL, synthesis, compiler and cycle model)")
        proc = subprocess.run(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the 'before' run on {commit} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        return [{**p_, "source": f"tree {commit}"} for p_ in json.loads(proc.stdout.strip().splitlines()[-1])]


def before_after(results: list[PointResult], before: dict[str, dict], models: dict[str, dict]) -> list[dict]:  # type: ignore[type-arg]
    """One row per config: resources, cycles and latency before (``before`` by label) and after; each model's latency after."""
    rows = []
    for r in results:
        b = before.get(r.label) or before.get(r.label.replace(" (peer)", ""))
        row: dict = {"label": r.label, "after": None, "before": None}  # type: ignore[type-arg]
        if r.ok and r.hardware is not None:
            row["after"] = {"luts": r.hardware.luts, "ffs": r.hardware.ffs, "dsps": r.hardware.dsps,
                            "bram36": r.hardware.bram36, "cycles": r.cycles, "mhz": r.hardware.fmax_mhz,
                            "latency_ms": r.latency_ms}
        if b and b.get("ok") and b.get("hardware"):
            hw = b["hardware"]
            row["before"] = {"luts": hw["luts"], "ffs": hw["ffs"], "dsps": hw["dsps"], "bram36": hw["bram36"],
                             "cycles": b["cycles"], "mhz": hw["fmax_mhz"], "latency_ms": b["latency_ms"],
                             "source": b.get("source", ""), "note": b.get("note", "")}
        for name, doc in models.items():
            m = next((p_ for p_ in doc.get("points", []) if p_["label"] == r.label), None)
            row[f"{name}_ms"] = m["latency_ms"] if m and m.get("ok") else None
        rows.append(row)
    return rows


def plot_before_after(rows: list[dict], path: Path) -> Path:  # type: ignore[type-arg]
    """Two panels (PNG): each config's latency before and after (bars), and latency against LUTs with an
    arrow from before to after where both sides' resources are known."""
    from matplotlib.figure import Figure

    shown = [r for r in rows if r["after"] is not None]
    fig = Figure(figsize=(14, 0.5 * len(shown) + 3), constrained_layout=True)
    bars, scatter = fig.subplots(1, 2)
    ys = range(len(shown))
    before = [(r["before"] or {}).get("latency_ms") or 0.0 for r in shown]
    bars.barh([y + 0.2 for y in ys], before, height=0.4, color="0.6", label="before")
    bars.barh([y - 0.2 for y in ys], [r["after"]["latency_ms"] for r in shown], height=0.4, color="tab:red",
              label="after")
    bars.set_yticks(list(ys), [r["label"] for r in shown], fontsize=7)
    bars.invert_yaxis()
    bars.set_xscale("log")
    bars.set_xlabel("latency (ms, cycle model at the config clock)")
    bars.grid(True, axis="x", which="both", alpha=0.3)
    bars.legend(fontsize=8)
    known = False
    for row in shown:
        a, b = row["after"], row["before"]
        if a.get("luts") is None:
            continue
        known = True
        scatter.scatter([a["luts"]], [a["latency_ms"]], color="tab:red", s=30, zorder=3)
        scatter.annotate(row["label"], (a["luts"], a["latency_ms"]), fontsize=7, xytext=(4, 4), textcoords="offset points")
        if b is not None and b.get("luts") is not None:
            scatter.scatter([b["luts"]], [b["latency_ms"]], color="0.55", s=30, zorder=3)
            scatter.annotate("", (a["luts"], a["latency_ms"]), (b["luts"], b["latency_ms"]),
                             arrowprops={"arrowstyle": "->", "color": "0.3"})
    if known:
        scatter.set_xscale("log")
        scatter.set_yscale("log")
    else:
        scatter.text(0.5, 0.5, "no config synthesised in this run", ha="center", transform=scatter.transAxes)
    scatter.set_xlabel("LUTs (yosys xc7)")
    scatter.set_ylabel("latency (ms)")
    scatter.grid(True, which="both", alpha=0.3)
    fig.suptitle("VDLA configs before -> after (grey before, red after)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def format_before_after(rows: list[dict]) -> str:  # type: ignore[type-arg]
    """The before -> after table: each resource and the latency as ``before -> after (change)``."""
    def pair(row: dict, key: str, fmt: str = "{:,.0f}") -> str:  # type: ignore[type-arg]
        a = (row["after"] or {}).get(key)
        b = (row["before"] or {}).get(key)
        if a is None:
            return "-" if b is None else f"{fmt.format(b)} -> -"
        if b is None:
            return fmt.format(a)
        return f"{fmt.format(b)} -> {fmt.format(a)} ({(a - b) / b:+.1%})" if b else fmt.format(a)

    models = sorted(k for row in rows for k in row if k.endswith("_ms") and k != "latency_ms")
    models = list(dict.fromkeys(models))
    compared = [m[:-3] for m in models if any(f"{m[:-3]}_before" in row for row in rows)]

    def common(row: dict, name: str) -> str:  # type: ignore[type-arg]
        """The VDLA cycles of the kernels both trees put on the VDLA (by node name): like for like."""
        a = (row.get(f"{name}_detail") or {}).get("kernels") or {}
        b = (row.get(f"{name}_before") or {}).get("kernels") or {}
        both = sorted(set(a) & set(b))
        if not both:
            return "-"
        ca, cb = sum(a[k] for k in both), sum(b[k] for k in both)
        return f"{cb:,} -> {ca:,} ({(ca - cb) / cb:+.1%}, {len(both)} kernels)"

    def kernels(row: dict, name: str) -> str:  # type: ignore[type-arg]
        """A model's VDLA cycles (and kernel count) before -> after: the part both trees time."""
        a, b = row.get(f"{name}_detail") or {}, row.get(f"{name}_before") or {}
        fa = f"{a['vdla_cycles']:,} ({a['vdla_kernels']})" if a.get("vdla_cycles") is not None else "-"
        fb = f"{b['vdla_cycles']:,} ({b['vdla_kernels']})" if b.get("vdla_cycles") is not None else "-"
        change = (f" ({(a['vdla_cycles'] - b['vdla_cycles']) / b['vdla_cycles']:+.1%})"
                  if a.get("vdla_cycles") and b.get("vdla_cycles") else "")
        return f"{fb} -> {fa}{change}"

    head = (["config", "LUT", "FF", "DSP", "BRAM36", "cycles", "latency ms"] + [m[:-3] + " ms" for m in models]
            + [f"{m} VDLA cycles (kernels)" for m in compared] + [f"{m} same kernels" for m in compared])
    table = [head]
    for row in rows:
        table.append([row["label"], pair(row, "luts"), pair(row, "ffs"), pair(row, "dsps"), pair(row, "bram36", "{:g}"),
                      pair(row, "cycles"), pair(row, "latency_ms", "{:.2f}")]
                     + [f"{row[m]:.2f}" if row.get(m) is not None else "-" for m in models]
                     + [kernels(row, m) for m in compared] + [common(row, m) for m in compared])
    widths = [max(len(r[c]) for r in table) for c in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in table]
    lines.append("before -> after (change); one value: that side only; -: not measured in this run; model latencies are "
                 "after only (VDLA kernels + host kernels); a model's VDLA cycles: every kernel each tree's compiler puts on "
                 "the VDLA (count in brackets); same kernels: those both put on the VDLA, by node name")
    return "\n".join(lines)


def model_workloads(name: str, resolution: int) -> Workloads:
    """A zoo model exported to ONNX once (under the results folder, so the DSE cache keys on its bytes)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
    from zoo import export, make_model

    path = RESULTS / "dse_models" / f"{name}_{resolution}.onnx"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        model = export(make_model(name, seed=0), torch.zeros(1, 3, resolution, resolution), "torchscript")
        path.write_bytes(model.SerializeToString())
    return onnx_model(str(path))


def run_model(name: str, resolution: int, points: list[SweepPoint], jobs: int, fmax: bool) -> dict:  # type: ignore[type-arg]
    """Sweep ``points`` on a whole model; print the table against the first point (the default preset)."""
    workloads = model_workloads(name, resolution)
    results = run_sweep(points, workloads, jobs=jobs, fmax=fmax)
    reference = replace(results[0], label="default (peer)")
    kernels = len(reference.layers) if reference.ok else 0
    print(f"\nVDLA {name} at {resolution}x{resolution}: every VDLA kernel ({kernels} on the default preset: convs, "
          f"dense, residual adds, pools), cycle model, end-to-end VDLA latency per config")
    print(format_table([reference, *results[1:]], reference))
    return to_json([reference, *results[1:]], {"model": name, "resolution": resolution}, reference)


if __name__ == "__main__":
    sys.exit(main())
