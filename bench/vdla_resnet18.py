"""ResNet-18 conv layers C2-C12 compiled for VDLA and timed on the cycle model.

Per layer: cycles and GEMM utilization with 1 and 2 virtual threads (the STORE requantizes:
shift, ReLU and clip happen on the way out, and adds the bias; each tile's first reduction step is
a GEMM with the ``overwrite`` bit, so nothing initialises the accumulators; the prologue's weight LOADs
and the drain's last GEMMs and STOREs are split by block), the same with 2 threads without that split
("no split": ``Requantize(split_edges=False)``) and the two earlier bias paths as peers in the same run ("MOV": the accumulators start as an ALU MOV
of the bias, ``Requantize(bias_store=False)``; "before": a GEMM reset and an ALU ADD per output tile,
``Requantize(bias_init=False)``), the roofline bound
of the 2-thread program (max of its compute cycles and DRAM bytes / bus bytes per cycle)
and the achieved fraction, equivalent GOPS at the config clock, and, as the peer baseline
in the same run, the hand-built tiled GEMM of ``vdla.runtime.workloads`` on the layer's
im2col matrix (same MACs, 2 virtual threads).  Every compiled output is checked
bit-exactly against NumPy.  Per layer also, from the 2-thread program's timeline, the cycles before its first
GEMM (prologue) and after its last (drain) and the GEMM utilization in between (steady): what the edges cost
and what the tiles reach; with ``--peer-knobs`` an earlier run's knob choice runs in the same run as a peer
("earlier knobs": the same compiler at those knobs).  Published reference (VTA on PYNQ, 16x16 int8 core at 100 MHz
= 51.2 GOPS peak): latency hiding raised peak compute utilization from 70% to 88%; tuned
ResNet-18 conv tasks reached 2.2-31.3 GOPS.

With ``--model`` it measures the whole model instead, as a user compiles it: the zoo's ResNet-18 (torchvision,
random weights, exported to ONNX as ``tests/models/zoo.py`` does) through ``build_model(target="vdla")`` with no
tuning log, on the cycle model, compiled by this tree and by ``--peer`` (default ``main``: its tree unpacked, each in
its own subprocess, ``bench/vdla_model_cycles.py``) in the same run: total accelerator cycles and every VDLA kernel's
cycles side by side, the 1x1 convs marked; both sides checked bit-exact (fsim against the int8 reference, cycle
against fsim).  Writes ``results/vdla_resnet18_model.json``.

    python bench/vdla_resnet18.py --model [--peer main] [--resolution 224] [--schemes per-channel,per-tensor]
    python bench/vdla_resnet18.py [--config default] [--layers C2,C9] [--candidates 16|0] [--no-baseline] [--no-old-peers]
                                  [--no-vt1] [--knobs-from results/vdla_resnet18_knobs.json --out ...]
                                  [--peer-knobs results/vdla_resnet18.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host import host_line, host_record  # noqa: E402
from vdla.compiler.vdla.target import VdlaTarget  # noqa: E402
from vdla.compiler.vdla.topi import (RESNET18_CONVS, CompiledConv, Conv2dKnobs, Requantize, ResidentKnobs, check_conv2d,  # noqa: E402
                                    compile_conv2d, requant_shift, tune_conv2d)
from vdla.compiler.vdla.topi.resident import conv2d_resident  # noqa: E402
from vdla.runtime.backends import run  # noqa: E402
from vdla.runtime.workloads import tiled_gemm_program  # noqa: E402

VTA_REFERENCE = "VTA/PYNQ 16x16 int8 @100 MHz: peak 51.2 GOPS; utilization 70% -> 88% with latency hiding; " \
                "tuned ResNet-18 convs 2.2-31.3 GOPS"


def bench_layer(name: str, target: VdlaTarget, baseline: bool, candidates: int, old_peers: bool = True,
                vt1: bool = True, fixed: dict[str, Conv2dKnobs | ResidentKnobs] | None = None,
                peer: Conv2dKnobs | ResidentKnobs | None = None) -> dict[str, object]:
    wl = RESNET18_CONVS[name]
    cfg = target.config
    row: dict[str, object] = {"layer": name, "workload": str(wl), "macs": wl.macs}
    variants = [("vt1", 1, True, True, True)] if vt1 else []
    variants += [("vt2", 2, True, True, True), ("nosplit_vt2", 2, True, True, False)]
    if peer is not None:
        variants += [("peer_vt2", 2, True, True, True)]
    if old_peers:
        variants += [("mov_vt2", 2, True, False, True), ("before_vt2", 2, False, False, True)]
    for key, vt, bias_init, bias_store, split in variants:
        ep = Requantize(shift=requant_shift(wl), bias_init=bias_init, bias_store=bias_store, split_edges=split)
        if key == "peer_vt2":
            compiled = compile_conv2d(wl, target, knobs=peer, epilogue=ep)
        elif fixed is not None and key in fixed:
            compiled = compile_conv2d(wl, target, knobs=fixed[key], epilogue=ep)
        elif candidates != 1:
            compiled = tune_conv2d(wl, target, vt, candidates, epilogue=ep, progress=candidates <= 0,
                                   resident=split)  # the "no split" peer: the tiled template alone
        else:
            compiled = compile_conv2d(wl, target, epilogue=ep, virtual_threads=vt)
        if key == "vt2":
            vt2 = compiled
        if key == "peer_vt2" and str(peer) == row["vt2"]["knobs"]:  # type: ignore[index]
            row[key] = dict(row["vt2"])  # type: ignore[call-overload]  # same program: the model is deterministic
            continue
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "trace.json" if key == "vt2" else None
            ok, result, _, _ = check_conv2d(compiled, backend="cycle", **({"trace": str(trace)} if trace else {}))
            spans = gemm_span(trace) if trace else None
        if not ok:
            raise AssertionError(f"{name} ({key}) is not bit-exact vs NumPy")
        st = result.extra["stats"]
        row[key] = {"cycles": result.cycles, "gemm_utilization": st["gemm_utilization"],
                          "roofline_cycles": st["roofline_cycles"], "compute_bound": st["compute_bound_cycles"],
                          "memory_bound": st["memory_bound_cycles"], "roofline_fraction": st["roofline_fraction"],
                          "gops": 2 * wl.macs / (result.cycles / (cfg.clock_mhz * 1e6)) / 1e9,
                          "instructions": compiled.module.program.insn_count, "knobs": str(compiled.knobs),
                          # GEMM cycles / compute-bound cycles: the utilization no schedule can exceed
                          # while the fused epilogue runs on the same core.
                          "gemm_utilization_ceiling": wl.macs / cfg.macs_per_cycle / st["compute_bound_cycles"]}
        if spans is not None:
            first, last = spans
            row[key].update({"prologue": first, "drain": result.cycles - last,  # type: ignore[union-attr]
                             "steady_utilization": wl.macs / cfg.macs_per_cycle / (last - first)})
    if isinstance(vt2.knobs, ResidentKnobs) and vt2.knobs.used_pixels:
        # The peer of the gathering LOAD, in the same run: the same program with one LOAD per used row (the ISA
        # before elem_stride); its own row is in the JSON as "per_row_vt2".
        per_row = CompiledConv(wl, vt2.knobs, vt2.epilogue, conv2d_resident(wl, vt2.knobs, target, vt2.epilogue,
                                                                           gather=False), False)
        ok, result, _, _ = check_conv2d(per_row, backend="cycle")
        if not ok:
            raise AssertionError(f"{name} (per-row LOADs) is not bit-exact vs NumPy")
        st = result.extra["stats"]
        row["per_row_vt2"] = {"cycles": result.cycles, "gemm_utilization": st["gemm_utilization"],
                              "roofline_fraction": st["roofline_fraction"],
                              "instructions": per_row.module.program.insn_count, "knobs": str(vt2.knobs)}
    if baseline:
        m, k, n = wl.oh * wl.ow, wl.ic * wl.kh * wl.kw, wl.oc
        program, _ = tiled_gemm_program(cfg, m, k, n, virtual_threads=2)
        res = run(program, backend="cycle")
        row["hand_gemm_cycles"] = res.cycles
    return row


def gemm_span(trace: Path) -> tuple[int, int]:
    """(start of the first GEMM, end of the last) in a cycle-model Chrome trace: before and after them the GEMM
    core has no work whatever the schedule of the tiles in between (the prologue and the drain)."""
    events = [e for e in json.loads(trace.read_text())["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "insn" and e["name"].startswith("GEMM")]
    return (min(e["args"]["start_cycle"] for e in events),
            max(e["args"]["start_cycle"] + e["args"]["cycles"] for e in events))


def knobs_from(path: str, option: str = "--knobs-from") -> dict[str, dict[str, Conv2dKnobs | ResidentKnobs]]:
    """The knobs per layer and variant recorded in an earlier run's JSON (``"knobs"`` is the knobs' repr: the
    tiled template's ``Conv2dKnobs(...)`` or the resident 1x1 template's ``ResidentKnobs(...)``)."""
    fields = re.compile(r"(\w+)=('?[\w]+'?)")
    out: dict[str, dict[str, Conv2dKnobs | ResidentKnobs]] = {}
    try:
        rows = json.loads(Path(path).read_text())["layers"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{option} {path}: not a JSON written by this benchmark ({exc}); "
                         "give bench/results/vdla_resnet18.json or another run's --out file")
    for row in rows:
        for key, val in row.items():
            if isinstance(val, dict) and "knobs" in val:
                kw = {f: (v.strip("'") if v.startswith("'") else None if v == "None" else
                          v == "True" if v in ("True", "False") else int(v)) for f, v in fields.findall(val["knobs"])}
                kind = ResidentKnobs if val["knobs"].startswith("ResidentKnobs") else Conv2dKnobs
                out.setdefault(row["layer"], {})[key] = kind(**kw)  # type: ignore[arg-type]
    return out


def model_side(tree: Path, files: list[Path], config: str, scheme: str) -> dict[str, object]:
    """Compile and run the model with the compiler of ``tree`` (a subprocess that sees only that tree)."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).parent / "vdla_model_cycles.py"), *map(str, files), "--config", config]
    cmd += ["--per-tensor"] if scheme == "per-tensor" else []
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(f"the model run on {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_model(peer: str, config: str, resolution: int, out: Path, schemes: list[str]) -> int:
    """ResNet-18 as a user compiles it, on this tree and on ``peer``'s, in one run (see the module doc)."""
    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
    from peer_tree import ROOT, peer_tree
    from zoo import export, make_model

    print(host_line())
    start = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, resolution, resolution)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="resnet18_") as tmp:
        files = [Path(tmp) / "resnet18.onnx", Path(tmp) / "samples.npy", Path(tmp) / "feed.npy"]
        files[0].write_bytes(export(make_model("resnet18", seed=0), torch.from_numpy(x), "torchscript").SerializeToString())
        np.save(files[1], rng.standard_normal((2, 1, 3, resolution, resolution)).astype(np.float32))
        np.save(files[2], x)
        with peer_tree(peer) as (commit, tree):
            runs = [(scheme, label, where) for scheme in schemes
                    for label, where in ((f"peer {commit}", tree), ("this tree", ROOT))]
            sides: dict[str, dict[str, dict[str, object]]] = {}
            for scheme, label, where in tqdm(runs, desc="builds", unit="build"):
                sides.setdefault(scheme, {})[label] = model_side(where, files, config, scheme)
    wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    results = {}
    for scheme, pair in sides.items():
        results[scheme] = model_table(scheme, pair, config, resolution)
    print(f"({wall:.0f} s wall, {cpu:.0f} s CPU in this process; each build in its own subprocess)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "config": config, "resolution": resolution, "peer": peer,
                               "wall_s": wall, "cpu_s": cpu, "sides": sides, "kernels": results}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


def model_table(scheme: str, pair: dict[str, dict[str, object]], config: str, resolution: int) -> list[dict[str, object]]:
    """Print one scheme's before/after table; returns its rows (every VDLA kernel both sides ran)."""
    (before_label, before), (after_label, after) = pair.items()
    after_nodes = {n["name"]: n for n in after["nodes"]}  # type: ignore[union-attr]
    print(f"ResNet-18 (zoo ONNX, int8 {scheme}, {resolution}x{resolution}, no tuning log) on the cycle model, "
          f"config {config!r}")
    print(f"{'kernel':<44}{'MACs':>11}{before_label:>16}{after_label:>12}{'change':>9}")
    rows = []
    for n in before["nodes"]:  # type: ignore[union-attr]
        a = after_nodes.get(n["name"])
        if a is None or not n["cycles"]:
            continue
        change = a["cycles"] / n["cycles"] - 1
        one_by_one = n["macs"] and "conv2d" in n["ops"] and bool(re.search(r"downsample|1x1", n["name"]))
        rows.append({"kernel": n["name"], "ops": n["ops"], "macs": n["macs"], "before": n["cycles"],
                     "after": a["cycles"], "change": change})
        if change or one_by_one:
            print(f"{n['name'][:43]:<44}{n['macs']:>11}{n['cycles']:>16}{a['cycles']:>12}{100 * change:>+8.1f}%")
    tb, ta = before["vdla_cycles"], after["vdla_cycles"]
    print(f"{'total VDLA cycles (' + str(len(rows)) + ' kernels)':<55}{tb:>16}{ta:>12}{100 * (ta / tb - 1):>+8.2f}%")
    print(f"(kernels whose cycles did not change and are not 1x1 convs are not listed; compile {before['compile_s']:.0f} s "
          f"/ {after['compile_s']:.0f} s)")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="store_true", help="the whole zoo ResNet-18 as a user compiles it, before/after")
    p.add_argument("--peer", default="main", help="with --model: the commit compiled as the 'before' side")
    p.add_argument("--resolution", type=int, default=224, help="with --model: the input image size")
    p.add_argument("--schemes", default="per-channel,per-tensor",
                   help="with --model: weight scales, per-channel (vdla compile's default) and/or per-tensor")
    p.add_argument("--config", default="default")
    p.add_argument("--layers", default=",".join(RESNET18_CONVS))
    p.add_argument("--candidates", type=int, default=16,
                   help="knob settings measured per layer (best of the cost model's top N; 1 = cost model only; "
                        "0 = every tiling of the layer: the search then sees what startup and drain cost each one)")
    p.add_argument("--no-baseline", action="store_true", help="skip the hand-built im2col GEMM baseline")
    p.add_argument("--no-old-peers", action="store_true",
                   help="skip the two earlier bias paths (MOV, reset + ADD): the run takes ~40%% less time")
    p.add_argument("--no-vt1", action="store_true", help="skip the one-thread column")
    p.add_argument("--knobs-from", default=None, metavar="JSON",
                   help="compile each layer and variant with the knobs an earlier run of this bench chose (no search): "
                        "a quick re-measure of a compiler change at fixed tilings")
    p.add_argument("--peer-knobs", default=None, metavar="JSON",
                   help="also run each layer (2 threads) at the knobs an earlier run of this bench picked: the peer "
                        "'earlier knobs' column (e.g. the committed bench/results/vdla_resnet18.json)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "vdla_resnet18.json"))
    args = p.parse_args(argv)
    if args.model:
        out = Path(args.out if args.out != p.get_default("out") else Path(args.out).with_name("vdla_resnet18_model.json"))
        return bench_model(args.peer, args.config, args.resolution, out, args.schemes.split(","))
    target = VdlaTarget.from_config(args.config)
    names = args.layers.split(",")
    start = time.perf_counter()
    fixed = knobs_from(args.knobs_from) if args.knobs_from else {}
    peers = knobs_from(args.peer_knobs, "--peer-knobs") if args.peer_knobs else {}
    rows = [bench_layer(n, target, not args.no_baseline, args.candidates, not args.no_old_peers, not args.no_vt1,
                        fixed.get(n), peers.get(n, {}).get("vt2")) for n in tqdm(names, desc="layers", unit="layer")]
    head = (f"{'layer':<5} {'cycles vt1':>11} {'util vt1':>8} {'before vt2':>11} {'util':>6} {'MOV vt2':>11} "
            f"{'util':>6} {'no split':>11} {'util':>6} {'cycles vt2':>11} "
            f"{'util vt2':>8} {'ceiling':>8} {'roofline':>10} {'bound':>7} {'achieved':>8} {'GOPS':>6} "
            f"{'hand GEMM':>10} {'ratio':>6}")
    print("\n" + host_line() + "; the figures are the cycle model's, not the host's")
    print(f"VDLA ResNet-18 convs on {target.config.name!r} (cycle model, {target.config.clock_mhz:g} MHz, "
          f"peak {target.config.peak_gops:.1f} GOPS)")
    print(head)
    fracs, utils, ceilings, before, mov, nosplit = [], [], [], [], [], []
    missing = {"cycles": 0, "gemm_utilization": float("nan")}
    for r in rows:
        v1, v2, n2 = r.get("vt1", missing), r["vt2"], r["nosplit_vt2"]  # type: ignore[index,union-attr]
        b2, m2 = r.get("before_vt2", missing), r.get("mov_vt2", missing)  # type: ignore[union-attr]
        bound = "compute" if v2["compute_bound"] >= v2["memory_bound"] else "memory"
        hand = r.get("hand_gemm_cycles")
        ratio = f"{hand / v2['cycles']:.2f}" if hand else "-"
        print(f"{r['layer']:<5} {v1['cycles']:>11,} {v1['gemm_utilization']:>8.1%} {b2['cycles']:>11,} "
              f"{b2['gemm_utilization']:>6.1%} {m2['cycles']:>11,} {m2['gemm_utilization']:>6.1%} {n2['cycles']:>11,} "
              f"{n2['gemm_utilization']:>6.1%} {v2['cycles']:>11,} "
              f"{v2['gemm_utilization']:>8.1%} {v2['gemm_utilization_ceiling']:>8.1%} {v2['roofline_cycles']:>10,} "
              f"{bound:>7} {v2['roofline_fraction']:>8.1%} {v2['gops']:>6.1f} {hand or '-':>10} {ratio:>6}")
        fracs.append(v2["roofline_fraction"])
        if bound == "compute":
            utils.append(v2["gemm_utilization"])
            ceilings.append(v2["gemm_utilization_ceiling"])
            nosplit.append(n2["gemm_utilization"])
            if "before_vt2" in r:
                before.append(b2["gemm_utilization"])
                mov.append(m2["gemm_utilization"])
    geo = math.exp(sum(math.log(f) for f in fracs) / len(fracs))
    print(f"roofline fraction: min {min(fracs):.1%}, geomean {geo:.1%} (targets >= 70% each, >= 85% geomean)")
    if utils:
        print(f"mean GEMM utilization with 2 virtual threads over compute-bound layers: {sum(utils) / len(utils):.1%} "
              f"(target >= 96%; ceiling: {sum(ceilings) / len(ceilings):.1%}); "
              f"without the prologue/drain split: {sum(nosplit) / len(nosplit):.1%}"
              + (f"; MOV of the bias: {sum(mov) / len(mov):.1%}; before (GEMM reset + bias ADD): "
                 f"{sum(before) / len(before):.1%}" if before else ""))
        nfr = [r["nosplit_vt2"]["roofline_fraction"] for r in rows]  # type: ignore[index]
        print(f"roofline fraction without the split: min {min(nfr):.1%}, geomean "
              f"{math.exp(sum(math.log(f) for f in nfr) / len(nfr)):.1%}")
    print(f"\n{'layer':<5} {'earlier knobs':>36} {'cycles':>9} {'util':>6} {'knobs now':>36} {'cycles':>9} {'util':>6} "
          f"{'prologue':>8} {'drain':>6} {'steady':>7}")
    for r in rows:
        v2, pv = r["vt2"], r.get("peer_vt2")  # type: ignore[union-attr]
        short = lambda k: (re.sub(r"Conv2dKnobs\((.*)\)", r"\1", k).replace("virtual_threads=2, ", "").replace(", ow_tile=None", "")
                           .replace("ResidentKnobs(", "resident ").replace(", virtual_threads=1", "")
                           .replace(", first_b1=0", "").replace(", used_pixels=False)", "").replace("used_pixels=True)", "pixels").replace("first_piece", "fp")
                           .replace("last_group", "lg").replace("late_bias=False, ", "").replace("first_rows", "rows")
                           .replace("bias_after", "ba").replace("piece", "p").replace("group", "g"))
        before_txt = (f"{short(pv['knobs']):>36} {pv['cycles']:>9,} {pv['gemm_utilization']:>6.1%}" if pv
                      else f"{'-':>36} {'-':>9} {'-':>6}")
        print(f"{r['layer']:<5} {before_txt} {short(v2['knobs']):>36} {v2['cycles']:>9,} {v2['gemm_utilization']:>6.1%} "
              f"{v2['prologue']:>8,} {v2['drain']:>6,} {v2['steady_utilization']:>7.1%}")
    peer_utils = [r["peer_vt2"]["gemm_utilization"] for r in rows if "peer_vt2" in r]  # type: ignore[index]
    if peer_utils and len(peer_utils) == len(rows):
        print(f"mean GEMM utilization at the earlier knobs: {sum(peer_utils) / len(peer_utils):.1%}; "
              f"at the knobs measured now: {sum(utils) / len(utils):.1%}")
    gathered = [r for r in rows if "per_row_vt2" in r]
    if gathered:
        print("\nused pixels as gathering LOADs (elem_stride) against one LOAD per used row, same knobs, same run:")
        print(f"{'layer':<5} {'per-row insns':>13} {'cycles':>9} {'roofline':>8} {'gather insns':>12} {'cycles':>9} "
              f"{'roofline':>8}")
        for r in gathered:
            a, b = r["per_row_vt2"], r["vt2"]  # type: ignore[index]
            print(f"{r['layer']:<5} {a['instructions']:>13} {a['cycles']:>9,} {a['roofline_fraction']:>8.1%} "
                  f"{b['instructions']:>12} {b['cycles']:>9,} {b['roofline_fraction']:>8.1%}")
    print("prologue = cycles before the first GEMM starts, drain = cycles after the last GEMM ends, steady = GEMM "
          "utilization between the two (2 threads, the timeline of the same program)")
    print(f"reference: {VTA_REFERENCE}")
    print("ceiling = GEMM cycles / compute-bound cycles (GEMM + any accumulator init: none with the bias on the "
          "STORE; MOV: the bias MOV at alu_copy_ii per output tile; before: a reset + the bias ADD at alu_ii)")
    print(f"ratio = hand-built im2col GEMM cycles / compiled conv cycles (same MACs); wall time "
          f"{time.perf_counter() - start:.0f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "config": target.config.name, "candidates": args.candidates, "layers": rows, "geomean_roofline_fraction": geo,
                               "mean_gemm_utilization": sum(utils) / len(utils) if utils else None,
                               "mean_gemm_utilization_nosplit": sum(nosplit) / len(nosplit) if nosplit else None,
                               "mean_gemm_utilization_before": sum(before) / len(before) if before else None,
                               "mean_gemm_utilization_mov": sum(mov) / len(mov) if mov else None,
                               "mean_gemm_utilization_peer_knobs": (sum(peer_utils) / len(peer_utils)
                                                                    if peer_utils and len(peer_utils) == len(rows) else None),
                               "min_roofline_fraction": min(fracs),
                               "min_roofline_fraction_nosplit": min(r["nosplit_vt2"]["roofline_fraction"] for r in rows),  # type: ignore[index]
                               "reference": VTA_REFERENCE}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
