"""Benchmark: ResNet-18's 12 conv2d layers and dense 512->1000 (fp32, batch 1) compiled
with the default x86 schedules, against PyTorch and NumPy (im2col + matmul) in the same run.

What is timed:
* ``ours``: ``conv2d_nchwc`` in its packed layout (data NCHW16c, weights OIHW16i16o,
  packed once outside the timed region, as TVM measures it), padding included;
* ``ours e2e``: the same plus the data layout transforms NCHW -> NCHWc -> NCHW (weights
  are packed at compile time in a real deployment, so they are not counted);
* ``torch``: ``torch.nn.functional.conv2d`` / ``linear`` (oneDNN / MKL);
* ``numpy``: pad + im2col (``as_strided`` + copy) + matmul (OpenBLAS).

Each figure is the best of many calls (medians are in the JSON). With one thread the calls
are interleaved (one call of every contender per round), so a burst of load from other
processes hits every contender alike; with all threads each contender runs its calls in a
block after a pause, because idle pool threads of the previous library spin-wait and would
steal the cores. Single thread first, then all threads. The fp32 peak is measured by a
JIT-compiled FMA loop.

Hygiene (TOOLCHAIN.md): the script re-executes itself with glibc's malloc thresholds raised
(``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``) so no contender page-faults its
temporaries on every call, and with ``OPENBLAS_CORETYPE`` unset (OpenBLAS's AVX-512
kernels) unless ``--keep-openblas-coretype``; thread counts are pinned per library.

Run: ``python bench/cpu_ops.py [--rounds N] [--quick] [--threads single|all|both]``;
writes ``bench/results/cpu_ops.json``.
"""
from __future__ import annotations

import os
import sys

_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "268435456", "MALLOC_TRIM_THRESHOLD_": "1073741824"}
_CHILD_FLAG = "VDLA_CPU_OPS_BENCH_CHILD"
if __name__ == "__main__" and not os.environ.get(_CHILD_FLAG):
    _env = {**os.environ, **_MALLOC_ENV, _CHILD_FLAG: os.environ.get("OPENBLAS_CORETYPE", "-")}
    if "--keep-openblas-coretype" not in sys.argv:
        _env.pop("OPENBLAS_CORETYPE", None)
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdla.compiler import te, topi  # noqa: E402
from vdla.compiler.build import Module, build  # noqa: E402
from vdla.compiler.codegen.llvm import codegen, host_target, jit  # noqa: E402
from vdla.compiler.tir.ir import (  # noqa: E402
    Allocate, BufferStore, For, ForKind, IntImm, PrimFunc, Ramp, Var, decl_buffer, seq)

BLOCKED_PASSES = 3
TOOLCHAIN_PEAK = 264.0  # GFLOP/s, TOOLCHAIN.md's single-thread figure for this machine kind


@dataclass(frozen=True)
class Conv:
    name: str
    size: int
    cin: int
    cout: int
    k: int
    stride: int
    pad: int

    @property
    def out_size(self) -> int:
        return (self.size + 2 * self.pad - self.k) // self.stride + 1

    @property
    def flops(self) -> int:
        return 2 * self.cout * self.out_size ** 2 * self.cin * self.k * self.k


LAYERS = [
    Conv("C1", 224, 3, 64, 7, 2, 3), Conv("C2", 56, 64, 64, 3, 1, 1),
    Conv("C3", 56, 64, 64, 1, 1, 0), Conv("C4", 56, 64, 128, 3, 2, 1),
    Conv("C5", 56, 64, 128, 1, 2, 0), Conv("C6", 28, 128, 128, 3, 1, 1),
    Conv("C7", 28, 128, 256, 3, 2, 1), Conv("C8", 28, 128, 256, 1, 2, 0),
    Conv("C9", 14, 256, 256, 3, 1, 1), Conv("C10", 14, 256, 512, 3, 2, 1),
    Conv("C11", 14, 256, 512, 1, 2, 0), Conv("C12", 7, 512, 512, 3, 1, 1),
]
DENSE = (512, 1000)


def _caller(mod: Module, *arrays: np.ndarray) -> Callable[[], None]:
    fn = mod.function
    fn.check(arrays)
    argv = fn.pack(arrays)
    return lambda: fn.call_unchecked(argv)


def _zeros(t: te.Tensor) -> np.ndarray:
    return np.zeros([d.value for d in t.shape], np.float32)


def _set_threads(n: int, modules: list[Module]) -> None:
    import torch
    torch.set_num_threads(n)
    for m in modules:
        m.set_num_threads(n)


class ConvCase:
    """Compiled modules, inputs and the contenders of one layer."""

    def __init__(self, layer: Conv, rng: np.random.Generator):
        import torch
        self.layer = layer
        ib, ob = topi.default_nchwc_blocks(layer.cin, layer.cout)
        x = rng.standard_normal((1, layer.cin, layer.size, layer.size)).astype(np.float32)
        w = (rng.standard_normal((layer.cout, layer.cin, layer.k, layer.k)) /
             math.sqrt(layer.cin * layer.k * layer.k)).astype(np.float32)
        tx = te.placeholder(x.shape, name="x")
        pack = topi.nchw_to_nchwc(tx, ib)
        tw = te.placeholder(w.shape, name="w")
        wpack = topi.oihw_to_blocked(tw, ib, ob)
        xb = te.placeholder([d.value for d in pack.shape], name="xb")
        wb = te.placeholder([d.value for d in wpack.shape], name="wb")
        out = topi.conv2d_nchwc(xb, wb, layer.stride, layer.pad)
        ob_t = te.placeholder([d.value for d in out.shape], name="ob")
        unpack = topi.nchwc_to_nchw(ob_t)
        self.knobs = topi.default_conv2d_nchwc_knobs(out)
        self.conv = build(topi.schedule_conv2d_nchwc(out, self.knobs), [xb, wb, out],
                          name=f"{layer.name}_conv")
        self.pack = build(topi.schedule_layout(pack), [tx, pack], name=f"{layer.name}_pack")
        self.unpack = build(topi.schedule_layout(unpack), [ob_t, unpack],
                            name=f"{layer.name}_unpack")
        wpack_mod = build(topi.schedule_layout(wpack), [tw, wpack], name=f"{layer.name}_wpack")
        self.x, self.w = x, w
        self.xb, self.wb, self.ob = _zeros(xb), _zeros(wb), _zeros(out)
        self.y = _zeros(unpack)
        wpack_mod(w, self.wb)
        self.pack(x, self.xb)
        self.xt, self.wt = torch.from_numpy(x), torch.from_numpy(w)
        self.wmat = w.reshape(layer.cout, -1)

    @property
    def modules(self) -> list[Module]:
        return [self.conv, self.pack, self.unpack]

    def contenders(self) -> dict[str, Callable[[], object]]:
        import torch.nn.functional as F
        conv = _caller(self.conv, self.xb, self.wb, self.ob)
        pack = _caller(self.pack, self.x, self.xb)
        unpack = _caller(self.unpack, self.ob, self.y)
        lay = self.layer

        def e2e() -> None:
            pack()
            conv()
            unpack()

        return {"ours": conv, "ours_e2e": e2e,
                "torch": lambda: F.conv2d(self.xt, self.wt, stride=lay.stride, padding=lay.pad),
                "numpy": lambda: self.wmat @ im2col(self.x, lay)}

    def check(self) -> float:
        """Max |ours - torch| relative to max |torch| (after an end-to-end run)."""
        fns = self.contenders()
        fns["ours_e2e"]()
        expect = fns["torch"]().numpy()
        np.testing.assert_allclose(self.y, expect, rtol=1e-3, atol=1e-3)
        got_np = fns["numpy"]().reshape(expect.shape)
        np.testing.assert_allclose(got_np, expect, rtol=1e-3, atol=1e-3)
        return float(np.abs(self.y - expect).max() / np.abs(expect).max())


def im2col(x: np.ndarray, lay: Conv) -> np.ndarray:
    xp = np.pad(x[0], ((0, 0), (lay.pad, lay.pad), (lay.pad, lay.pad)))
    c, h, w = xp.shape
    o, s = lay.out_size, lay.stride
    sc, sh, sw = xp.strides
    win = np.lib.stride_tricks.as_strided(xp, (c, lay.k, lay.k, o, o), (sc, sh, sw, sh * s, sw * s))
    return win.reshape(c * lay.k * lay.k, o * o)


class DenseCase:
    def __init__(self, rng: np.random.Generator):
        import torch
        k, n = DENSE
        self.flops = 2 * k * n
        x = rng.standard_normal((1, k)).astype(np.float32)
        w = (rng.standard_normal((n, k)) / math.sqrt(k)).astype(np.float32)
        tw = te.placeholder(w.shape, name="w")
        packed = topi.pack_dense_weight(tw, host_target().vector_lanes(32))
        wp = _zeros(packed)
        build(topi.schedule_layout(packed), [tw, packed])(w, wp)
        tx = te.placeholder(x.shape, name="x")
        twp = te.placeholder(wp.shape, name="wp")
        out = topi.dense_pack(tx, twp, n)
        self.mod = build(topi.schedule_dense(out), [tx, twp, out], name="dense")
        self.x, self.w, self.wp, self.out = x, w, wp, _zeros(out)
        self.xt, self.wt = torch.from_numpy(x), torch.from_numpy(w)

    @property
    def modules(self) -> list[Module]:
        return [self.mod]

    def contenders(self) -> dict[str, Callable[[], object]]:
        import torch.nn.functional as F
        ours = _caller(self.mod, self.x, self.wp, self.out)
        return {"ours": ours, "ours_e2e": ours, "torch": lambda: F.linear(self.xt, self.wt),
                "numpy": lambda: self.x @ self.w.T}

    def check(self) -> float:
        fns = self.contenders()
        fns["ours"]()
        expect = fns["torch"]().numpy()
        np.testing.assert_allclose(self.out, expect, rtol=1e-3, atol=1e-4)
        return float(np.abs(self.out - expect).max() / np.abs(expect).max())


def time_calls(fns: dict[str, Callable[[], object]], rounds: int, min_seconds: float,
               interleave: bool) -> dict[str, dict[str, float]]:
    """Best and median seconds per call of each contender.

    Interleaved (one call of each per round): a burst of load from other processes hits
    every contender alike. Blocked (all calls of one contender, then the next, after a
    pause, in several passes): used with several threads, where the idle threads of one
    library's pool spin-wait for a while after each call and would steal the cores of the
    next one."""
    times: dict[str, list[float]] = {k: [] for k in fns}

    def enough(start: float, done: int) -> bool:
        spent = time.perf_counter() - start
        return done >= rounds and (spent >= min_seconds or done >= 20 * rounds)

    if interleave:
        for f in fns.values():
            f()
        start, done = time.perf_counter(), 0
        while not enough(start, done):
            for name, f in fns.items():
                times[name].append(_timed(f))
            done += 1
    else:
        for _ in range(BLOCKED_PASSES):  # several passes: more chances of a quiet window
            for name, f in fns.items():
                time.sleep(0.2)
                f()
                start, before = time.perf_counter(), len(times[name])
                while not enough(start, len(times[name]) - before):
                    times[name].append(_timed(f))
    return {k: {"best": min(v), "median": statistics.median(v), "rounds": len(v)}
            for k, v in times.items()}


def measure_peak(iters: int = 500_000, accumulators: int | None = None, repeat: int = 40) -> float:
    """Single-thread fp32 GFLOP/s of a JIT-compiled loop of independent vector FMAs.

    ``accumulators``: independent FMA chains, by default what the host's register file holds beside the
    broadcast operand (``topi.max_accumulators``: 12 with AVX2, 28 with AVX-512).  A fixed 16 spilled on
    AVX2's 16 registers and measured half the peak (AMD Zen 3: 44 against 98 GFLOP/s)."""
    if accumulators is None:
        from vdla.compiler.codegen.llvm import using_target
        from vdla.compiler.topi import max_accumulators

        with using_target(host_target()):
            accumulators = max_accumulators()
    lanes = host_target().vector_lanes(32)
    x = decl_buffer((lanes,), "float32", "x")
    o = decl_buffer((accumulators * lanes,), "float32", "o")
    acc = decl_buffer((accumulators * lanes,), "float32", "acc", scope="local")
    i = Var("i")
    whole = Ramp(IntImm(0), IntImm(1), lanes)

    def slot(j: int) -> Ramp:
        return Ramp(IntImm(j * lanes), IntImm(1), lanes)

    body = Allocate(acc, seq(
        *[BufferStore(acc, x[whole], (slot(j),)) for j in range(accumulators)],
        For(i, IntImm(0), IntImm(iters), ForKind.SERIAL,
            seq(*[BufferStore(acc, acc[slot(j)] * x[whole] + x[whole], (slot(j),))
                  for j in range(accumulators)])),
        *[BufferStore(o, acc[slot(j)], (slot(j),)) for j in range(accumulators)]))
    mod = jit(codegen([PrimFunc("fma_peak", (x, o), body)], host_target()))
    xs = np.full(lanes, 0.999, np.float32)
    out = np.zeros(accumulators * lanes, np.float32)
    best = min(_timed(lambda: mod(xs, out)) for _ in range(repeat))
    return 2 * lanes * accumulators * iters / best / 1e9


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def run_threads(cases: list[tuple[str, str, int, object]], threads: int, rounds: int,
                min_seconds: float, label: str) -> list[dict[str, object]]:
    from threadpoolctl import threadpool_limits
    rows = []
    with threadpool_limits(limits=threads):
        for name, desc, flops, case in tqdm(cases, desc=f"{label} ({threads} thread"
                                                        f"{'s' if threads > 1 else ''})"):
            _set_threads(threads, case.modules)
            stats = time_calls(case.contenders(), rounds, min_seconds, interleave=threads == 1)
            gf = {k: flops / v["best"] / 1e9 for k, v in stats.items()}
            rows.append({"layer": name, "shape": desc, "gflop": flops / 1e9, "gflops": gf,
                         "seconds": stats, "ratio_torch": gf["ours"] / gf["torch"],
                         "ratio_torch_e2e": gf["ours_e2e"] / gf["torch"]})
    return rows


def print_table(rows: list[dict[str, object]], threads: int, peak: float) -> dict[str, float]:
    head = (f"{'layer':5} {'shape':27} {'ours':>7} {'e2e':>7} {'torch':>7} {'numpy':>7} "
            f"{'ours/torch':>10} {'e2e/torch':>9} {'%peak':>6}")
    print(f"\n== {threads} thread{'s' if threads > 1 else ''}: GFLOP/s (best of "
          f"{'interleaved rounds' if threads == 1 else 'blocked calls'}) ==")
    print(head)
    print("-" * len(head))
    for r in rows:
        g = r["gflops"]
        print(f"{r['layer']:5} {r['shape']:27} {g['ours']:7.1f} {g['ours_e2e']:7.1f} "
              f"{g['torch']:7.1f} {g['numpy']:7.1f} {r['ratio_torch']:10.2f} "
              f"{r['ratio_torch_e2e']:9.2f} {100 * g['ours'] / (peak * threads):5.0f}%")
    summary = {"geomean_ratio_torch": _geomean([r["ratio_torch"] for r in rows]),
               "geomean_ratio_torch_e2e": _geomean([r["ratio_torch_e2e"] for r in rows]),
               **{f"geomean_gflops_{k}": _geomean([r["gflops"][k] for r in rows])
                  for k in ("ours", "ours_e2e", "torch", "numpy")}}
    print(f"geomean: ours {summary['geomean_gflops_ours']:.1f}, e2e "
          f"{summary['geomean_gflops_ours_e2e']:.1f}, torch {summary['geomean_gflops_torch']:.1f}"
          f", numpy {summary['geomean_gflops_numpy']:.1f} GFLOP/s; ours/torch "
          f"{summary['geomean_ratio_torch']:.2f}x (e2e {summary['geomean_ratio_torch_e2e']:.2f}x)")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="minimum interleaved rounds")
    parser.add_argument("--min-seconds", type=float, default=1.0,
                        help="keep adding rounds until each layer ran this long")
    parser.add_argument("--threads", choices=["single", "all", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="C2, C3, C12 and dense only")
    parser.add_argument("--keep-openblas-coretype", action="store_true",
                        help="keep the environment's OPENBLAS_CORETYPE (AVX2 kernels here)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cpu_ops.json"))
    args = parser.parse_args()

    import torch
    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    layers = [l for l in LAYERS if not args.quick or l.name in ("C2", "C3", "C12")]
    cases: list[tuple[str, str, int, object]] = []
    checks = {}
    for lay in tqdm(layers, desc="compiling"):
        case = ConvCase(lay, rng)
        checks[lay.name] = case.check()
        desc = f"{lay.size}^2 {lay.cin}->{lay.cout} k{lay.k} s{lay.stride} p{lay.pad}"
        cases.append((lay.name, desc, lay.flops, case))
    dense = DenseCase(rng)
    checks["dense"] = dense.check()
    cases.append(("D", f"dense {DENSE[0]}->{DENSE[1]}", dense.flops, dense))

    peak = measure_peak()
    ncpu = os.cpu_count() or 1
    original = os.environ.get(_CHILD_FLAG)
    print(f"target: {host_target()}; torch {torch.__version__}; numpy {np.__version__}; "
          f"OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', 'unset (AVX-512 kernels)')} (the environment "
          f"had {'none' if original == '-' else original}); malloc thresholds raised")
    print(f"measured fp32 peak, one thread: {peak:.1f} GFLOP/s (TOOLCHAIN.md: "
          f"~{TOOLCHAIN_PEAK:.0f}); load average at start {load_before[0]:.2f}")
    results: dict[str, object] = {"target": str(host_target()), "peak_gflops_1t": peak,
                                  "checks_max_rel_err": checks,
                                  "knobs": {c[0]: asdict(c[3].knobs) for c in cases
                                            if isinstance(c[3], ConvCase)}}
    plan = {"single": [1], "all": [ncpu], "both": [1, ncpu]}[args.threads]
    for threads in plan:
        rows = run_threads(cases, threads, args.rounds, args.min_seconds,
                           "single thread" if threads == 1 else "all threads")
        summary = print_table(rows, threads, peak)
        results[f"threads_{threads}"] = {"rows": rows, "summary": summary}
    load_after = os.getloadavg()
    print(f"load average: {load_before[0]:.2f} at start, {load_after[0]:.2f} at end "
          f"({ncpu} CPUs); figures with load above ~1 are noisy")
    results.update({"load_before": load_before, "load_after": load_after, "cpus": ncpu,
                    "python": platform.python_version(), "torch": torch.__version__,
                    "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                    "timing": "best of many calls (interleaved with 1 thread, blocked with "
                              "more); medians in rows[].seconds"})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
