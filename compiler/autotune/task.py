"""Tuning tasks: the unique tunable operators of a model, for one target on one host.

A :class:`Task` is an operator kind (``conv2d_nchwc``, ``depthwise_conv2d_nchw(c)``, ``dense_pack``,
``batch_matmul``, ``pool2d``, ``elementwise``, ``vdla_conv2d``), its workload (the shapes the schedule
sees), the compile target and the host features that decide its speed.  :func:`extract_tasks` finds
a model's tasks by running the graph lowerings with a recording dispatcher, so a task is exactly
what the lowering will later ask the tuning log for; operators that occur several times become one
task with a weight.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from vdla.compiler.codegen.llvm import Target, host_target, parse_target, using_target
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import UsageError

from . import dispatch

CPU_KINDS = ("conv2d_nchwc", "depthwise_conv2d_nchw", "depthwise_conv2d_nchwc", "dense_pack", "batch_matmul",
             "pool2d", "elementwise")
VDLA_KINDS = ("vdla_conv2d",)


@dataclass(frozen=True)
class HostInfo:
    """The CPU features that decide how fast a schedule runs (detected through llvmlite)."""

    cpu: str
    isa: str
    vector_bits: int
    fma: bool
    vnni: bool
    cores: int

    @staticmethod
    def of(target: Target) -> HostInfo:
        f = target.features
        return HostInfo(target.cpu, target.isa, target.vector_bits, target.has_fma,
                        bool({"avx512vnni", "avxvnni"} & f), os.cpu_count() or 1)

    @staticmethod
    def detect() -> HostInfo:
        return HostInfo.of(host_target())

    @property
    def key(self) -> str:
        return (f"{self.cpu}/{self.isa}/v{self.vector_bits}{'/fma' if self.fma else ''}{'/vnni' if self.vnni else ''}"
                f"/{self.cores}c")

    @property
    def device_kind(self) -> str:
        """The executor device kind that can time this host's code (``cpu-<isa>``)."""
        return f"cpu-{self.isa}"


@dataclass(frozen=True)
class Task:
    """One tunable operator: kind, workload, target and host; ``weight`` counts its occurrences."""

    kind: str
    workload: tuple[tuple[str, int], ...]
    target: str
    """``llvm -mcpu=... (isa)`` or ``vdla -config=NAME@HASH``."""
    host: str
    """:attr:`HostInfo.key` of the measuring host for CPU tasks; ``cycle-model`` for VDLA tasks."""
    weight: int = field(default=1, compare=False)

    @property
    def key(self) -> str:
        return json.dumps({"kind": self.kind, "workload": dict(self.workload), "target": self.target,
                           "host": self.host}, sort_keys=True)

    @property
    def wl(self) -> dict[str, int]:
        return dict(self.workload)

    @property
    def device_kind(self) -> str:
        return "vdla-cycle" if self.kind in VDLA_KINDS else "cpu-" + self.host.split("/")[1]

    @property
    def name(self) -> str:
        """A short human-readable name (for progress bars and file names)."""
        w = self.wl
        if self.kind == "conv2d_nchwc":
            return (f"conv_{w['ic_outer'] * w['ic_block']}x{w['h']}x{w['w']}_{w['oc_outer'] * w['oc_block']}"
                    f"_k{w['kh']}s{w['stride_h']}")
        if self.kind == "depthwise_conv2d_nchw":
            return f"dw_{w['c']}x{w['h']}x{w['w']}_k{w['kh']}s{w['stride_h']}"
        if self.kind == "depthwise_conv2d_nchwc":
            return f"dwc_{w['c_outer'] * w['c_block']}x{w['h']}x{w['w']}_k{w['kh']}s{w['stride_h']}"
        if self.kind == "dense_pack":
            return f"dense_{w['m']}x{w['k']}x{w['n']}"
        if self.kind == "batch_matmul":
            return f"bmm_{max(w['batch_a'], w['batch_b'])}x{w['m']}x{w['k']}x{w['n']}"
        if self.kind == "pool2d":
            c = w["c"] * max(w["c_block"], 1)
            return f"{'avg' if w['avg'] else 'max'}pool_{c}x{w['h']}x{w['w']}_k{w['kh']}s{w['stride_h']}"
        if self.kind == "elementwise":
            return f"eltwise_{w['outer']}x{w['inner']}_in{w['streams']}"
        return f"vdla_conv_{w['ic']}x{w['h']}x{w['w']}_{w['oc']}_k{w['kh']}s{w['stride']}"

    def with_weight(self, weight: int) -> Task:
        return Task(self.kind, self.workload, self.target, self.host, weight)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "workload": self.wl, "target": self.target, "host": self.host}

    @staticmethod
    def from_json(d: Mapping[str, Any], weight: int = 1) -> Task:
        return Task(d["kind"], tuple(sorted(d["workload"].items())), d["target"], d["host"], weight)


def cpu_target_key(target: Target) -> str:
    """``llvm -mcpu=CPU (isa)`` for the host; other targets spell out their features so a build can
    recreate them (``llvm -mcpu=haswell -mattr=+avx,+avx2,+fma (avx2)``)."""
    isa = HostInfo.of(target).isa
    if target == host_target():
        return f"llvm -mcpu={target.cpu} ({isa})"
    # Another architecture (an ARM board's CPU) names its triple: the tuning space is sized for it.
    triple = "" if target.arch == host_target().arch else f"-mtriple={target.triple} "
    return f"llvm {triple}-mcpu={target.cpu} -mattr={target.feature_string} ({isa})"


def vdla_target_key(cfg: HwConfig) -> str:
    digest = hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True).encode()).hexdigest()[:12]
    return f"vdla -config={cfg.name}@{digest}"


def make_task(kind: str, workload: Mapping[str, int], target: str = "llvm", config: str | HwConfig = "default",
              weight: int = 1) -> Task:
    """A task of ``kind`` on ``workload`` for the ``llvm`` target string or the VDLA ``config``."""
    items = tuple(sorted((k, int(v)) for k, v in workload.items()))
    if kind in VDLA_KINDS:
        cfg = load_config(config) if isinstance(config, str) else config
        return Task(kind, items, vdla_target_key(cfg), "cycle-model", weight)
    if kind not in CPU_KINDS:
        raise UsageError(f"unknown task kind {kind!r}; known: {CPU_KINDS + VDLA_KINDS}")
    tgt = parse_target(target)
    return Task(kind, items, cpu_target_key(tgt), HostInfo.detect().key, weight)


class _Recorder:
    """A dispatcher that records every query and answers with the default."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, int]]] = []

    def query(self, kind: str, workload: Mapping[str, int]) -> None:
        self.seen.append((kind, dict(workload)))


def _weighted(tasks: Sequence[Task]) -> list[Task]:
    counts: dict[Task, int] = {}
    for t in tasks:
        counts[t] = counts.get(t, 0) + 1
    return [t.with_weight(n) for t, n in counts.items()]


def extract_tasks(graph: Any, target: str = "llvm", *, cpu_target: str = "llvm", config: str | HwConfig = "default",
                  calibrate: Sequence[Mapping[str, np.ndarray]] | None = None,
                  skip_first_conv: bool = True) -> list[Task]:
    """The unique tunable operators of ``graph`` (a :class:`vdla.compiler.graph.Graph`) for ``target``, weighted.

    ``llvm``: the graph is optimized as ``build_model`` does and every fused kernel is lowered (no
    code generation) with a recording dispatcher.  ``vdla``: the graph is quantized with
    ``calibrate`` and partitioned; every conv/dense kernel placed on the accelerator is one ``vdla_conv2d`` task, and so is an average pool
    (its window sum is a conv2d schedule); adds and max pools have no knobs.
    """
    from vdla.compiler.graph.build import TARGETS

    if target == "llvm":
        from vdla.compiler.graph.lower_llvm import draft_kernel, elementwise_workload
        from vdla.compiler.graph.passes import optimize_for_cpu

        recorder = _Recorder()
        with using_target(parse_target(cpu_target)), dispatch.dispatching(recorder):
            g = optimize_for_cpu(graph)
            for n in g.nodes:
                if n.op == "fused":
                    draft = draft_kernel(n, g, n.name)
                    workload = elementwise_workload(draft)  # compile_draft asks for these knobs
                    if workload is not None:
                        dispatch.query("elementwise", workload)
        return _weighted([make_task(kind, wl, cpu_target) for kind, wl in recorder.seen])
    if target == "vdla":
        from vdla.compiler.graph.build import calibration_samples
        from vdla.compiler.graph.errors import NotLoweredError
        from vdla.compiler.graph.lower_vdla import kernel_gemm
        from vdla.compiler.graph.lower_vdla_alu import avg_pool_workload
        from vdla.compiler.graph.passes import optimize_for_vdla

        cfg = load_config(config) if isinstance(config, str) else config
        g = optimize_for_vdla(graph, cfg, calibration_samples(calibrate, graph), skip_first_conv=skip_first_conv)
        found = []
        for n in g.nodes:
            if n.op == "fused" and n.attrs.get("target") == "vdla":
                try:
                    gemm, _ = kernel_gemm(n, g, cfg)
                except NotLoweredError:
                    pool = avg_pool_workload(n)  # an average pool's window sum is a conv2d schedule too
                    if pool is not None and not pool.is_global:  # a global pool has its own schedule, no knobs
                        found.append(make_task("vdla_conv2d", pool.conv(cfg.block_in, cfg.batch).task_workload(),
                                               config=cfg))
                    continue  # other ALU kernels (adds, max pools) have no knobs to tune
                found.append(make_task("vdla_conv2d", gemm.workload.task_workload(), config=cfg))
        return _weighted(found)
    raise UsageError(f"unknown target {target!r}; use one of {TARGETS}")
