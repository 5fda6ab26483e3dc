"""Benchmark: schedule configs of one conv layer against each other, as the tuner measures them, interleaved.

Per layer (a ``conv2d_nchwc`` task of the host's target) every config given is built once and then timed in
``--rounds`` rounds, the configs taking turns in each (``MeasureOptions()``: the ``model`` cache state,
the calling thread's CPU time, fastest repeat per round; ``vdla.compiler.autotune.measure``); the table
gives the median over the rounds of each config and its ratio to the first (the baseline).  The first
call of each config checks it against NumPy.

Layers are ``C,K,H,W,KH,STRIDE`` (square kernel, padding ``KH // 2``); configs are ``name:knob=value,...``
over the task's default config (``default`` alone: the default as it is), e.g. Winograd F(2x2) with two
rows of tiles per pass over the weights: ``rows2:oh_block=2``.

Run: ``python bench/conv_knobs.py --layer 256,256,14,14,3,1 --config default --config rows4:oh_block=4
[--rounds 9]``; writes ``bench/results/conv_knobs.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_CONV_KNOBS_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from vdla.compiler.autotune.measure import MeasureOptions, build_job, config_cost, run_job  # noqa: E402
from vdla.compiler.autotune.task import make_task  # noqa: E402
from vdla.compiler.autotune.template import template_for  # noqa: E402
from vdla.compiler.topi import default_nchwc_blocks  # noqa: E402
from vdla.compiler.topi.utils import vector_lanes  # noqa: E402
from host import host_line, host_record  # noqa: E402


def layer_task(spec: str, cpu_target: str, nchw_input: bool = False) -> Any:
    """The ``conv2d_nchwc`` task of ``C,K,H,W,KH,STRIDE`` (blocked as the graph lowering blocks it; with
    ``nchw_input``, a model's first conv, whose NCHW input is blocked by ``gcd(C, lanes)``: 1 for 3 channels)."""
    try:
        c, k, h, w, kh, stride = (int(v) for v in spec.split(","))
    except ValueError:
        raise SystemExit(f"--layer takes C,K,H,W,KH,STRIDE (six integers), got {spec!r}") from None
    from vdla.compiler.codegen.llvm import parse_target, using_target

    with using_target(parse_target(cpu_target)):
        ib, ob = default_nchwc_blocks(c, k)
        if nchw_input:
            ib = math.gcd(c, vector_lanes(None))
    wl = {"n": 1, "ic_outer": c // ib, "h": h, "w": w, "ic_block": ib, "oc_outer": k // ob, "kh": kh, "kw": kh,
          "oc_block": ob, "stride_h": stride, "stride_w": stride, "pad_h": kh // 2, "pad_w": kh // 2}
    return make_task("conv2d_nchwc", wl, cpu_target)


def parse_config(spec: str, default: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``name:knob=value,...`` over ``default`` (values parsed as int, bool or text)."""
    name, _, body = spec.partition(":")
    cfg = dict(default)
    for kv in filter(None, body.split(",")):
        key, _, value = kv.partition("=")
        if key not in cfg:
            raise SystemExit(f"config {name!r}: no knob {key!r}; the knobs are {sorted(cfg)}")
        cfg[key] = int(value) if value.lstrip("-").isdigit() else {"True": True, "False": False}.get(value, value)
    return name, cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", action="append", required=True, metavar="C,K,H,W,KH,STRIDE")
    ap.add_argument("--config", action="append", required=True, metavar="NAME:KNOB=VALUE,...")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--cpu-target", default="llvm")
    ap.add_argument("--nchw-input", action="store_true",
                    help="the layers are a model's first conv: NCHW input, blocked as the graph lowering blocks it")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "conv_knobs.json"))
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    print(f"{host_line()}; load {load0:.1f}; one thread, thread CPU time")
    results = []
    for spec in args.layer:
        task = layer_task(spec, args.cpu_target, args.nchw_input)
        template = template_for(task)
        default = template.default().to_dict()
        configs = dict(parse_config(c, default) for c in args.config)
        for name, cfg in configs.items():
            why = template.space.why_illegal(template.space.from_dict(cfg))
            if why:
                raise SystemExit(f"{spec} config {name!r} is not legal: {why}")
        arts = {n: build_job(task.to_json(), None, cfg) for n, cfg in configs.items()}
        times: dict[str, list[float]] = {n: [] for n in configs}
        for _ in tqdm(range(args.rounds), desc=spec, unit="round", disable=not sys.stderr.isatty()):
            for n, art in arts.items():
                outcome = run_job(task.to_json(), None, art, MeasureOptions())
                if not outcome.correct:
                    raise SystemExit(f"{spec} config {n!r} gave a wrong result: {outcome.detail}")
                times[n].append(config_cost(outcome.costs))
        med = {n: statistics.median(t) for n, t in times.items()}
        base = next(iter(med.values()))
        print(f"\n{spec} (C,K,H,W,KH,stride), median of {args.rounds} interleaved rounds:")
        for n, t in med.items():
            print(f"  {n:<14} {1e3 * t:8.3f} ms  {base / t:6.3f}x the first   {configs[n]}")
        results.append({"layer": spec, "configs": configs, "ms": {n: [1e3 * v for v in t] for n, t in times.items()},
                        "median_ms": {n: 1e3 * v for n, v in med.items()}})
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "load_before": load0,
                               "load_after": os.getloadavg()[0], "rounds": args.rounds, "results": results},
                              indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
