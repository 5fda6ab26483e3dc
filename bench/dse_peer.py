"""One tree's DSE evaluation of some presets, printed as JSON: the "before" side of ``bench/dse.py --before``.

Run by ``bench/dse.py`` in a subprocess whose working folder and ``PYTHONPATH`` are another commit's
tree (``bench/peer_tree.py``), so that tree's RTL, synthesis flow, VDLA compiler and cycle model
produce the numbers.  It imports the tree's DSE modules under whichever name the tree has them
(``vdla.compiler.dse`` since the packages were namespaced, ``compiler.dse`` before).

    python bench/dse_peer.py --config tiny --config /path/to/ulx3s.json [--quick] [--latency-only --model NAME=M.onnx]

A preset the tree lacks is given as another tree's JSON (see ``area_presets.worker_config``).
Prints one JSON list: each point's ``PointResult.to_dict()`` (label ``preset=NAME``) plus ``note``; with
``--latency-only``, each config's cycles per ResNet-18 layer and, per ``--model``, the VDLA cycles of every kernel
the tree's graph compiler puts on the VDLA for that config (the tree's own placement).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from area_presets import cached_xc7, worker_config


def dse_module(name: str):  # type: ignore[no-untyped-def]
    """``vdla.compiler.dse.<name>``, or ``compiler.dse.<name>`` in a tree from before the namespacing (decided by
    the tree itself, the working folder: an installed ``vdla`` elsewhere must not stand in for it)."""
    namespaced = (Path.cwd() / "vdla" / "__init__.py").exists()
    return importlib.import_module(f"{'vdla.' if namespaced else ''}compiler.dse.{name}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", required=True, help="preset name or config .json (repeatable)")
    p.add_argument("--quick", action="store_true", help="ResNet-18's quick subset (C5, C8, C11)")
    p.add_argument("--latency-only", action="store_true",
                   help="cycle model only; resources from the tree's synthesis cache when there (no yosys run)")
    p.add_argument("--model", action="append", default=[], metavar="NAME=PATH",
                   help="with --latency-only: also time this ONNX model's VDLA kernels (repeatable)")
    args = p.parse_args(argv)
    models = dict(m.split("=", 1) for m in args.model)
    evaluate, sweep, workloads = dse_module("evaluate"), dse_module("sweep"), dse_module("workloads")
    wl = workloads.resnet18(args.quick)
    out = []
    for spec in args.config:
        cfg, note = worker_config(spec)
        if args.latency_only:
            layers = workloads.layer_times(wl, cfg)
            out.append({"label": f"preset={cfg.name}", "digest": cfg.digest, "note": note, "mhz": cfg.clock_mhz,
                        "cycles": sum(lt.cycles for lt in layers), "layers": {lt.name: lt.cycles for lt in layers},
                        "xc7": cached_xc7(cfg), "models": {}})
            for name, path in models.items():
                try:
                    mlayers = workloads.layer_times(workloads.onnx_model(path), cfg)
                except Exception as exc:  # the tree's own error classes: reported as the row's failure
                    out[-1]["models"][name] = {"failure": f"{type(exc).__name__}: {exc}"}
                    continue
                out[-1]["models"][name] = {"vdla_cycles": sum(lt.cycles for lt in mlayers),
                                           "vdla_kernels": len(mlayers), "macs": sum(lt.macs for lt in mlayers),
                                           "kernels": {lt.name: lt.cycles for lt in mlayers}}
            print(f"{cfg.name}: {out[-1]['cycles']:,} cycles", file=sys.stderr)
            continue
        point = sweep.SweepPoint((("preset", cfg.name),), cfg)
        result = evaluate.evaluate_point(point, wl)
        out.append({**result.to_dict(), "note": note})
        print(f"{cfg.name}: {'ok' if result.ok else result.failure}", file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
