"""Benchmark (object code, not time): the vector spills of conv configs, per target, or of every config a tuning log measured.

Per layer (a ``conv2d_nchwc`` task, blocked as ``bench/conv_knobs.py`` blocks it) and per ``--target``, each
config is built as the tuner builds it (``measure.build_job``) and its spills counted from its object code
(``vdla.compiler.autotune.spills.spills_of``: ``ymm``/``zmm`` reloads of stack slots a vector store of the same
function wrote, and those stores; a kernel without spills shows 0 and 0).  Such a kernel's time moves with the
stack position of its call (``bench/spill_stack.py``), which is why the tuner does not time a config over
``MeasureOptions.max_spill_reloads``.

Configs are ``name:knob=value,...`` over each target's default (``default`` alone: the default as it is);
``TARGET/name:...`` applies to one target only.  ``--log LOG`` instead counts, per task of a tuning log, its
measured configs (the ``--limit`` fastest by search cost, the default and the standing leaders always),
marking the default and the log's best: do the picks spill, and would not timing spilling configs lose one?
``--models NAME,...`` counts every conv and dense task's default of those zoo models (``tests/models/zoo.py``)
on each ``--target``: which defaults spill (the tuner times a default whatever it spills).

Run: ``python bench/conv_spills.py --layer 3,32,224,224,3,2 --nchw-input --config default --config ow8:ow_block=8
[--target "llvm -mcpu=znver4" --target "llvm -mcpu=haswell"]`` or ``python bench/conv_spills.py --log LOG`` or ``python bench/conv_spills.py --models mobilenet_v2``;
writes ``bench/results/conv_spills.json``.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from conv_knobs import layer_task, parse_config
from host import host_line, host_record

from vdla.compiler.autotune.database import RETIMED, ranked, read_log
from vdla.compiler.autotune.measure import build_job
from vdla.compiler.autotune.spills import spills_of
from vdla.compiler.autotune.template import template_for

ROOT = Path(__file__).resolve().parents[1]


def log_survey(log: str, limit: int) -> list[dict[str, Any]]:
    """Per task of the tuning log ``log``: every ok config (at most ``limit`` per task, fastest first by its
    search cost; the default and the log's standing leaders always), built as the tuner builds it, its spills,
    its search cost and its standing in the log's last re-timing round."""
    records = read_log(log)
    by_task: dict[str, list[Any]] = {}
    for r in records:
        by_task.setdefault(r.task.key, []).append(r)
    rows = []
    for key, rs in by_task.items():
        task = rs[0].task
        if "llvm" not in task.target:
            continue
        template = template_for(task)
        space = template.space
        default_key = template.default().key
        search: dict[str, float] = {}
        configs: dict[str, dict[str, Any]] = {}
        for r in rs:
            if r.ok and r.tuner != RETIMED:
                k = space.from_dict(r.config).key
                search[k] = min(search.get(k, float("inf")), r.cost)
                configs[k] = r.config
        standing = {space.from_dict(r.config).key: r.cost for r in ranked(rs).values()}
        for r in ranked(rs).values():
            configs.setdefault(space.from_dict(r.config).key, r.config)
        configs.setdefault(default_key, template.default().to_dict())
        best_key = min(standing, key=standing.get) if standing else default_key
        keep = sorted(configs, key=lambda k: search.get(k, float("inf")))[:limit]
        keep += [k for k in (default_key, *standing) if k not in keep]
        name = task.name
        for k in keep:
            count = spills_of(build_job(task.to_json(), None, space.from_dict(configs[k]).to_dict()))
            rows.append({"task": name, "target": task.target, "config_key": k, "default": k == default_key,
                         "best": k == best_key, "search_cost": search.get(k), "standing_cost": standing.get(k),
                         "reloads": count.reloads, "stores": count.stores, "spills": count.spills})
            print(f"{name:<34} {'D' if k == default_key else ' '}{'B' if k == best_key else ' '} "
                  f"{count.reloads:>4} {count.stores:>4} {'SPILLS' if count.spills else '      '} "
                  f"{(search.get(k) or float('nan')) * 1e3:8.4f} {(standing.get(k) or float('nan')) * 1e3:8.4f}  {k}",
                  flush=True)
    return rows


def model_defaults(models: list[str], targets: list[str]) -> list[dict[str, Any]]:
    """Per model, target and conv/dense task: the default config's spills."""
    import sys

    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "tests" / "models"))
    from zoo import export, make_model

    from vdla.compiler.autotune.task import extract_tasks
    from vdla.compiler.frontend.onnx import from_onnx

    rows = []
    for name in models:
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        graph = from_onnx(export(make_model(name, image_size=224), torch.from_numpy(x), "torchscript"))
        for target in targets:
            for task in extract_tasks(graph, "llvm", cpu_target=target):
                if task.kind not in MODEL_KINDS:
                    continue
                default = template_for(task).default()
                count = spills_of(build_job(task.to_json(), None, default.to_dict()))
                rows.append({"model": name, "target": target, "task": task.name, "weight": task.weight,
                             "config_key": default.key, "reloads": count.reloads, "stores": count.stores,
                             "spills": count.spills})
                print(f"{name:<13} {target:<20} {task.name:<30} x{task.weight:<2} {count.reloads:>4} {count.stores:>4}"
                      f"  {default.key}", flush=True)
    return rows


#: The task kinds ``--models`` counts: those with a register tile.
MODEL_KINDS = ("conv2d_nchwc", "depthwise_conv2d_nchwc", "dense_pack")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", action="append", metavar="C,K,H,W,KH,STRIDE")
    ap.add_argument("--config", action="append", metavar="[TARGET/]NAME:KNOB=VALUE,...")
    ap.add_argument("--log", help="instead of --layer/--config: every task of this tuning log, its measured configs")
    ap.add_argument("--models", default="", help="instead of --layer/--config: every conv/dense task default of "
                                                  "these zoo models (comma-separated), on each --target")
    ap.add_argument("--limit", type=int, default=1000,
                    help="with --log: at most this many configs per task (fastest by search cost; the default "
                         "and the leaders always)")
    ap.add_argument("--target", action="append", metavar="LLVM_TARGET",
                    help="compile targets (default: llvm -mcpu=znver4 and llvm -mcpu=haswell)")
    ap.add_argument("--nchw-input", action="store_true", help="the layers are a model's first conv (NCHW input)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "conv_spills.json"))
    args = ap.parse_args()
    if shutil.which("objdump") is None:
        raise SystemExit("objdump is missing: apt-get install binutils")
    print(f"{host_line()}; object code only (nothing timed)")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.log:
        print("task                               D=default B=best reloads stores  search-ms standing-ms  config")
        rows = log_survey(args.log, args.limit)
        out.write_text(json.dumps({"host": host_record(), "log": args.log, "results": rows}, indent=1))
        print(f"wrote {out}")
        return
    targets = args.target or ["llvm -mcpu=znver4", "llvm -mcpu=haswell"]
    if args.models:
        print("model         target               task                           weight reloads stores  default")
        rows = model_defaults(args.models.split(","), targets)
        out.write_text(json.dumps({"host": host_record(), "models": args.models, "results": rows}, indent=1))
        print(f"wrote {out}")
        return
    if not args.layer or not args.config:
        raise SystemExit("give --layer and --config (or --log, or --models)")
    print(f"{'layer':<18} {'target':<20} {'config':<14} {'reloads':>7} {'stores':>6}  knobs")
    rows = []
    for spec in args.layer:
        for target in targets:
            task = layer_task(spec, target, args.nchw_input)
            template = template_for(task)
            default = template.default().to_dict()
            configs = {}
            for c in args.config:
                only, sep, body = c.rpartition("/") if "/" in c.split(":", 1)[0] else ("", "", c)
                if sep and only != target:
                    continue
                name, cfg = parse_config(body, default)
                why = template.space.why_illegal(template.space.from_dict(cfg))
                if why:
                    raise SystemExit(f"{spec} on {target}: config {name!r} is not legal: {why}")
                configs[name] = cfg
            for name, cfg in configs.items():
                count = spills_of(build_job(task.to_json(), None, cfg))
                reloads, stores = count.reloads, count.stores
                knobs = {k: v for k, v in cfg.items() if v != default.get(k) or name == "default"}
                print(f"{spec:<18} {target:<20} {name:<14} {reloads:>7} {stores:>6}  {knobs}")
                rows.append({"layer": spec, "target": target, "config_name": name, "config": cfg,
                             "reloads": reloads, "stores": stores})
    out.write_text(json.dumps({"host": host_record(), "nchw_input": args.nchw_input, "results": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
