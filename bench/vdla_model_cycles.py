"""One side of ``bench/vdla_resnet18.py --model``: compile an ONNX model for the VDLA with the tree on ``PYTHONPATH``
and print its per-kernel cycle-model cycles as JSON (run once per tree, so the peer uses its own compiler).

It uses only the public API both trees have (``from_onnx``, ``build_model``, ``module.run`` / ``profile``): the int8
output of the cycle run must equal the fsim run's, and the fsim run's every integer value the graph's NumPy int8
reference.

    PYTHONPATH=<tree> python bench/vdla_model_cycles.py model.onnx samples.npy feed.npy [--config default] [--per-tensor]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import onnx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("samples")
    ap.add_argument("feed")
    ap.add_argument("--config", default="default")
    ap.add_argument("--per-tensor", action="store_true", help="per-tensor weight scales (vdla compile --per-tensor)")
    args = ap.parse_args()
    from vdla.compiler.frontend.onnx import from_onnx  # type: ignore[import-not-found]
    from vdla.compiler.graph import run_all
    from vdla.compiler.graph.build import build_model

    graph = from_onnx(onnx.load(args.model))
    name = graph.input_nodes[0].name
    samples = [{name: s} for s in np.load(args.samples)]
    feed = {name: np.load(args.feed)}
    t0, c0 = time.perf_counter(), time.process_time()
    compiled = build_model(graph, target="vdla", config=args.config, calibrate=samples, per_channel=not args.per_tensor)
    compile_s, compile_cpu = time.perf_counter() - t0, time.process_time() - c0
    got = compiled.module.run_all(feed, backend="fsim")
    want = run_all(compiled.graph, feed)
    integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
    for n in integer:
        if not np.array_equal(got[n], want[n]):
            raise SystemExit(f"{n}: the fsim run differs from the graph's int8 reference")
    last = compiled.graph.outputs[0]
    fsim_out = got[last] if last in got else compiled.run(feed, backend="fsim")[0]
    out, prof = compiled.module.profile(feed, backend="cycle", warmup=0, repeat=1)
    if not np.array_equal(out[0], fsim_out):
        raise SystemExit("the cycle run's output differs from the fsim run's")
    print(json.dumps({"compile_s": compile_s, "compile_cpu_s": compile_cpu, "int8_values_checked": len(integer),
                      "vdla_cycles": prof.vdla_cycles,
                      "nodes": [{"name": n.name, "device": n.device, "ops": n.ops, "macs": n.macs,
                                 "cycles": n.cycles} for n in prof.nodes if n.device == "vdla"]}))


if __name__ == "__main__":
    main()
