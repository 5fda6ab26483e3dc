"""Tuning tasks: the unique tunable operators of a model, for one target on one host.

A :class:`Task` is an operator kind (``conv2d_nchwc``, ``depthwise_conv2d_nchw(c)``, ``dense_pack``,
``batch_matmul``, ``pool2d``, ``elementwise``, ``vdla_conv2d``), its workload (the shapes the schedule
sees), the compile target and the host features that decide its speed.  :func:`extract_tasks` finds
a model's tasks by running the graph lowerings with a recording dispatcher, so a task is exactly
what the lowering will later ask the tuning log for; operators that occur several times become one
task with a weight.  A conv task also carries the element-wise epilogue its nodes run fused into the
kernel (``bias+add+relu``, :mod:`vdla.compiler.autotune.epilogue`): its template times the kernel with it.
The epilogue is not part of the task's key: nodes of one conv workload with different epilogues (ResNet's
blocks mix convs with and without a residual add) are one task, timed with the epilogue most of them run
(:func:`task_epilogue`), and the log's records (old ones hold no epilogue) apply to all of them.
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
from .epilogue import EPILOGUE_KINDS, node_epilogue, parse_epilogue

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
    epilogue: str = field(default="", compare=False)
    """The element-wise chain the task's nodes run after the kernel (``bias+add+relu``; ``""``: none), which
    the template builds and times with it.  Not in :attr:`key`: a log matches the task whatever it holds."""

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
        return Task(self.kind, self.workload, self.target, self.host, weight, self.epilogue)

    def with_epilogue(self, epilogue: str) -> Task:
        """This task timed with ``epilogue`` (checked against the vocabulary and the kind)."""
        parse_epilogue(epilogue, self.kind)
        return Task(self.kind, self.workload, self.target, self.host, self.weight, epilogue)

    def to_json(self) -> dict[str, Any]:
        d = {"kind": self.kind, "workload": self.wl, "target": self.target, "host": self.host}
        return {**d, "epilogue": self.epilogue} if self.epilogue else d

    @staticmethod
    def from_json(d: Mapping[str, Any], weight: int = 1) -> Task:
        """A task from :meth:`to_json`; a record written before tasks had epilogues is the bare kernel's."""
        epilogue = str(d.get("epilogue", ""))
        parse_epilogue(epilogue, d["kind"])
        return Task(d["kind"], tuple(sorted(d["workload"].items())), d["target"], d["host"], weight, epilogue)


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
              weight: int = 1, epilogue: str = "") -> Task:
    """A task of ``kind`` on ``workload`` for the ``llvm`` target string or the VDLA ``config``, timed with
    ``epilogue`` (CPU conv kinds only, :mod:`vdla.compiler.autotune.epilogue`)."""
    items = tuple(sorted((k, int(v)) for k, v in workload.items()))
    parse_epilogue(epilogue, kind)
    if kind in VDLA_KINDS:
        cfg = load_config(config) if isinstance(config, str) else config
        return Task(kind, items, vdla_target_key(cfg), "cycle-model", weight)
    if kind not in CPU_KINDS:
        raise UsageError(f"unknown task kind {kind!r}; known: {CPU_KINDS + VDLA_KINDS}")
    tgt = parse_target(target)
    return Task(kind, items, cpu_target_key(tgt), HostInfo.detect().key, weight, epilogue)


class _Recorder:
    """A dispatcher that records every query and answers with the default."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, int]]] = []

    def query(self, kind: str, workload: Mapping[str, int]) -> None:
        self.seen.append((kind, dict(workload)))


def task_epilogue(epilogues: Sequence[str]) -> str:
    """The epilogue a task is timed with, from those of its nodes: the one most of them run; on a tie the one
    with more operations (a residual add reads a second activation: the heavier node).  ResNet-50's 1 x 1
    64 -> 256 conv at 56 x 56 (x4): three nodes add the residual, the first block's projection does not, so
    the task times ``bias+add+relu``."""
    if not epilogues:
        return ""
    counts: dict[str, int] = {}
    for e in epilogues:
        counts[e] = counts.get(e, 0) + 1
    return max(counts, key=lambda e: (counts[e], len(parse_epilogue(e)), e))


def _weighted(found: Sequence[tuple[Task, str]]) -> list[Task]:
    """One task per distinct operator, weighted by its occurrences, with the epilogue of :func:`task_epilogue`."""
    epilogues: dict[Task, list[str]] = {}
    for t, epilogue in found:
        epilogues.setdefault(t, []).append(epilogue)
    return [Task(t.kind, t.workload, t.target, t.host, len(es), task_epilogue(es)) for t, es in epilogues.items()]


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
        found: list[tuple[Task, str]] = []
        with using_target(parse_target(cpu_target)), dispatch.dispatching(recorder):
            g = optimize_for_cpu(graph)
            found += [(make_task(kind, wl, cpu_target), "") for kind, wl in recorder.seen]  # asked while optimizing
            for n in g.nodes:
                if n.op == "fused":
                    before = len(recorder.seen)
                    draft = draft_kernel(n, g, n.name)
                    workload = elementwise_workload(draft)  # compile_draft asks for these knobs
                    if workload is not None:
                        dispatch.query("elementwise", workload)
                    asked = recorder.seen[before:]
                    # The node's epilogue belongs to its conv when the conv is the node's one tuned kernel.
                    anchored = [q for q in asked if q[0] in EPILOGUE_KINDS]
                    epilogue = node_epilogue(n, draft.fuses_epilogue) if len(anchored) == 1 else ""
                    found += [(make_task(kind, wl, cpu_target), epilogue if kind in EPILOGUE_KINDS else "")
                              for kind, wl in asked]
        return _weighted(found)
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
        return _weighted([(t, "") for t in found])
    raise UsageError(f"unknown target {target!r}; use one of {TARGETS}")
