"""The rule the graph compiler uses without a tuning log for a 1x1 layer: the default tiling or the resident template.

For 1x1 layers (ResNet-18's, and other shapes that fit SRAM whole on the config), each run on the cycle model and
checked bit-exactly against NumPy: the default tiling (``default_knobs``, 2 virtual threads: what the graph
compiler compiled before), every setting of ``resident_fit.whole_space`` and the one ``resident_fit.default_resident`` picks
(what the graph compiler now compiles without a log; for a layer that does not fit whole, the row-tile setting of
``resident_fit.default_row_tiles``), and the rule ``compile_default_conv`` (the faster of the
default tiling and that setting, both run on the cycle model) with its time, beside the analytic estimates and what
comparing them would pick ("by est").  The JSON has every setting's cycles.

With ``--per-channel`` every layer's epilogue has a per-channel multiplier (what ``vdla compile`` does by default):
before the resident template took it (issue 24's follow-up), such a layer compiled its tiling, so the "tiling" column
is the before and the rule's pick the after, in one run.

    python bench/vdla_resident_rule.py [--config default] [--per-channel] [--out bench/results/vdla_resident_rule.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host import host_line, host_record  # noqa: E402
from vdla.compiler.vdla.target import VdlaTarget  # noqa: E402
from vdla.compiler.vdla.topi import (Conv2dWorkload, Requantize, ResidentKnobs, check_conv2d, compile_conv2d, default_knobs,  # noqa: E402
                                     compile_default_conv, default_resident, estimate_cycles, estimate_resident_cycles,
                                     requant_shift, resident_error, tiling_edges)
from vdla.compiler.vdla.topi.resident_fit import whole_space  # noqa: E402

LAYERS: dict[str, Conv2dWorkload] = {
    "C3": Conv2dWorkload(1, 64, 56, 56, 64, 1, 1, 1, 0),
    "C5": Conv2dWorkload(1, 64, 56, 56, 128, 1, 1, 2, 0),
    "C8": Conv2dWorkload(1, 128, 28, 28, 256, 1, 1, 2, 0),
    "C11": Conv2dWorkload(1, 256, 14, 14, 512, 1, 1, 2, 0),
    "512x512@7": Conv2dWorkload(1, 512, 7, 7, 512, 1, 1, 1, 0),
    "256x256@7": Conv2dWorkload(1, 256, 7, 7, 256, 1, 1, 1, 0),
    "128x128@14": Conv2dWorkload(1, 128, 14, 14, 128, 1, 1, 1, 0),
    "64x256@8": Conv2dWorkload(1, 64, 8, 8, 256, 1, 1, 1, 0),
    "256x64@14": Conv2dWorkload(1, 256, 14, 14, 64, 1, 1, 1, 0),
    "dense512x1024": Conv2dWorkload(1, 512, 1, 1, 1024, 1, 1, 1, 0),
}


def measure(wl: Conv2dWorkload, target: VdlaTarget, knobs: object, ep: Requantize) -> int:
    ok, result, _, _ = check_conv2d(compile_conv2d(wl, target, knobs=knobs, epilogue=ep), backend="cycle")  # type: ignore[arg-type]
    if not ok:
        raise SystemExit(f"{wl} with {knobs}: not bit-exact")
    return int(result.cycles)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="default")
    ap.add_argument("--per-channel", action="store_true",
                    help="a per-channel multiplier in every epilogue (the ALU multiplies before the STORE)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON (default results/vdla_resident_rule.json, _per_channel with --per-channel)")
    args = ap.parse_args()
    if args.out is None:
        suffix = "_per_channel" if args.per_channel else ""
        args.out = Path(__file__).parent / "results" / f"vdla_resident_rule{suffix}.json"
    target = VdlaTarget.from_config(args.config)
    cfg = target.config
    print(host_line())
    rows = []
    start = time.perf_counter(), time.process_time()
    for name, wl in tqdm(LAYERS.items(), desc="layers", unit="layer"):
        ep = Requantize(shift=requant_shift(wl), multiplier=args.per_channel)
        tiling = default_knobs(wl, target, 2, ep)
        row: dict[str, object] = {"layer": name, "workload": str(wl), "ideal": wl.macs // cfg.macs_per_cycle,
                                  "tiling_cycles": measure(wl, target, tiling, ep),
                                  "tiling_estimate": round(estimate_cycles(wl, tiling, cfg, ep) + tiling_edges(wl, tiling, cfg))}
        space = whole_space(wl, target, ep)  # the rule's candidates: whole-layer settings (row tiles are the tuner's)
        row["resident_cycles"] = {str(k): measure(wl, target, k, ep) for k in space}
        pick = default_resident(wl, target, ep)
        row["fits"] = pick is not None
        if pick is None:
            plain = ResidentKnobs(max(1, wl.ic // cfg.block_in // 2), 1, 1, 1)  # the simplest setting: why even it fails
            row["why_not"] = resident_error(wl, plain, target, ep) or "no setting of whole_space fits"
        else:
            row["default_resident"] = str(pick)
            row["default_resident_cycles"] = row["resident_cycles"].get(str(pick)) or measure(wl, target, pick, ep)  # type: ignore[union-attr]
            row["resident_estimate"] = round(estimate_resident_cycles(wl, pick, cfg, ep))
        t0 = time.perf_counter()
        picked = compile_default_conv(wl, target, ep, 2)
        row["rule_s"] = time.perf_counter() - t0
        row["rule"] = "resident" if picked.knobs == pick and pick is not None else "tiling"
        est = pick is not None and row["resident_estimate"] < row["tiling_estimate"]  # type: ignore[operator]
        row["estimate_rule"] = "resident" if est else "tiling"
        rows.append(row)
    wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    print(f"{'layer':<14}{'ideal':>8}{'tiling':>9}{'est':>9}{'resident*':>11}{'est':>9}{'best res':>10}{'rule':>10}"
          f"{'rule s':>8}{'gain':>8}{'by est':>10}")
    for r in rows:
        res = r.get("default_resident_cycles")
        best = min(r["resident_cycles"].values(), default=None)  # type: ignore[union-attr]
        chosen = res if r["rule"] == "resident" else r["tiling_cycles"]
        gain = f"{100 * (1 - chosen / r['tiling_cycles']):+.1f}%"  # type: ignore[operator]
        print(f"{r['layer']:<14}{r['ideal']:>8}{r['tiling_cycles']:>9}{r['tiling_estimate']:>9}"
              f"{res if res is not None else '-':>11}{r.get('resident_estimate', '-'):>9}"
              f"{best if best is not None else '-':>10}{r['rule']:>10}{r['rule_s']:>8.2f}{gain:>8}{r['estimate_rule']:>10}")
    print(f"(*: the resident setting resident_fit.default_resident picks; cycles on the cycle model, config {cfg.name!r}; "
          f"{'per-channel multiplier' if args.per_channel else 'per-tensor'} epilogue; "
          f"{wall:.0f} s wall, {cpu:.0f} s CPU)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"host": host_record(), "config": cfg.name, "per_channel": args.per_channel,
                                    "wall_s": wall, "cpu_s": cpu,
                                    "layers": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
