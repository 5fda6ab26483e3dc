"""``build_model``: a graph to a deployable module for the CPU (``llvm``) or the VDLA.

>>> mod = build_model(from_onnx("resnet18.onnx"), target="llvm")
>>> y, = mod.run({"x": x})                       # runs in this process
>>> mod.export("resnet18.vdla")                  # one file; vdla.runtime.graph_executor.load reads it

``llvm``: fold batch norms and constants, fuse, and compile every kernel with the LLVM
backend into one shared library.  ``vdla``: quantize to int8 with the calibration
samples, pack for the hardware config, fuse and partition; each VDLA kernel becomes a
program (:mod:`vdla.compiler.graph.lower_vdla`), everything else CPU kernels
(:mod:`vdla.compiler.graph.lower_llvm`).  A VDLA kernel whose chain the accelerator cannot run
exactly falls back to the CPU, and with ``placement="cost"`` an add / pool / clamp the host runs faster
goes there (:mod:`vdla.compiler.graph.cost`); a concat of VDLA outputs is done by placement (no copy,
:func:`~vdla.compiler.graph.passes.plan_memory.placed_concats`); the module's partition report (``CompiledModule.partition``,
:mod:`vdla.runtime.partition_report`) lists every kernel's device and why each conv stays on the CPU.
"""

from __future__ import annotations

import functools
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from vdla_hw.config import HwConfig, load_config

from vdla.compiler.codegen.llvm import (LLVMModule, codegen, export_library, host_target, jit, parse_target,
                                  using_target)
from vdla.compiler.codegen.symbols import SymbolTable
from vdla.compiler.graph.cost import COST_HOSTS, WEIGHED_OPS, CostDecision, host_model, weigh_kernel
from vdla.compiler.graph.errors import GraphError, NotLoweredError
from vdla.compiler.graph.ir import Attrs, ConstValue, Graph, Node
from vdla.compiler.graph.lower_llvm import CpuKernel, compile_draft, draft_kernel
from vdla.compiler.graph.kernel_cache import KernelCache
from vdla.compiler.graph.lower_vdla import VdlaKernel
from vdla.compiler.graph.passes import (Calibration, QuantizedModel, lower_quantized_for_vdla, optimize_for_cpu,
                                   plan_memory, quantize_for_vdla)
from vdla.compiler.graph.passes.plan_memory import concat_operands, placed_concats
from vdla.compiler.graph.passes.sqnr import LayerSqnr, layer_sqnr
from vdla.runtime.graph_executor import GraphModule
from vdla.runtime.partition_report import PartitionEntry, read_partition
from vdla.runtime.module_format import FORMAT, VERSION
from vdla_hw.progress import bar, ticking

TARGETS = ("llvm", "vdla")
PLACEMENTS = ("cost", "all")

Samples = Sequence[Mapping[str, np.ndarray]]
SQNR_SAMPLES = 8  # calibration samples the per-layer SQNR report runs (both graphs, NumPy executor)


@dataclass
class CompiledModule:
    """A compiled model: a runnable :class:`~vdla.runtime.graph_executor.GraphModule` plus build facts."""

    module: GraphModule
    graph: Graph
    """The optimized (fused, and for vdla partitioned) graph the module runs."""
    llvm_module: LLVMModule | None
    compile_seconds: float
    fallbacks: dict[str, str] = field(default_factory=dict)
    """VDLA kernels that run on the CPU instead, with the reason."""
    sqnr: list[LayerSqnr] = field(default_factory=list)
    """Target vdla: every quantized layer's SQNR on (up to 8 of) the calibration samples, worst first."""
    quantized: QuantizedModel | None = None
    """Target vdla: the integer graph before packing and partitioning (what every device computes)."""
    costs: dict[str, CostDecision] = field(default_factory=dict)
    """Target vdla: the cost rule's figures for every ALU kernel it weighed (:mod:`vdla.compiler.graph.cost`)."""

    def run(self, inputs: Mapping[str, np.ndarray] | np.ndarray, backend: str = "fsim", **options: Any) -> list[np.ndarray]:
        return self.module.run(inputs, backend=backend, **options)

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write one model file (graph, parameters, kernel library, VDLA programs)."""
        with tempfile.TemporaryDirectory(prefix="vdla_build_") as tmp:
            library = None
            if self.llvm_module is not None:
                library = export_library(self.llvm_module, Path(tmp) / "kernels.so")
            return self.module.export(path, library)

    def run_emulated(self, inputs: Mapping[str, np.ndarray] | np.ndarray, backend: str = "fsim", *,
                     threads: int = 2, **options: Any) -> list[np.ndarray]:
        """Run a module cross-compiled for an ARM board here: every CPU kernel under qemu-user (one process per
        call, :class:`~vdla.compiler.codegen.llvm.cross.EmulatedLibrary`), VDLA nodes on ``backend``."""
        from vdla.compiler.codegen.llvm.cross import EmulatedLibrary

        if self.llvm_module is None:
            return self.run(inputs, backend=backend, **options)
        emulated = self.module.with_library(EmulatedLibrary(self.llvm_module, threads=threads))
        return emulated.run(inputs, backend=backend, **options)

    def partition(self) -> list[PartitionEntry]:
        """Where every kernel runs and, for a conv2d/dense kept on the CPU, why (target vdla; else empty)."""
        return read_partition(self.module)

    def placement(self) -> dict[str, int]:
        """How many nodes run on each device."""
        out: dict[str, int] = {}
        for n in self.module.graph["nodes"]:
            out[n["device"]] = out.get(n["device"], 0) + 1
        return out


def calibration_samples(calibrate: Samples | Mapping[str, np.ndarray] | np.ndarray | None,
                        graph: Graph) -> list[dict[str, np.ndarray]]:
    """The calibration argument of ``build``/``extract_tasks`` as a list of ``{input name: array}`` samples.

    Accepts a list of dicts, one dict, or one array holding a batch of the graph's single input."""
    if calibrate is None:
        raise GraphError("target 'vdla' quantizes to int8 and needs calibration samples: pass calibrate=[{input: array}] "
                         "(or `vdla compile --calibrate data.npz`)")
    names = [n.name for n in graph.input_nodes]
    if isinstance(calibrate, np.ndarray):
        if len(names) != 1:
            raise GraphError(f"the graph has inputs {names}: pass the calibration samples as dicts")
        shape = graph.input_nodes[0].type.shape
        batch = calibrate.reshape((-1,) + shape)
        return [{names[0]: batch[i]} for i in range(len(batch))]
    if isinstance(calibrate, Mapping):
        return [dict(calibrate)]
    return [dict(s) for s in calibrate]


def _value_ref(graph: Graph, name: str, params: dict[str, np.ndarray], keys: dict[int, str]) -> dict[str, str]:
    node = graph.node(name)
    if node.op == "constant":
        return {"param": _param_key(node.value, params, keys)}
    return {"value": name}


def _param_key(array: np.ndarray, params: dict[str, np.ndarray], keys: dict[int, str]) -> str:
    key = keys.get(id(array))
    if key is None:
        key = keys[id(array)] = f"param{len(params)}"
        params[key] = np.array(array, order="C")
    return key


def _const_key(c: ConstValue) -> tuple[Any, ...]:
    # Lowerings pass constants to kernels as parameters, so only their type shapes the code; scalars
    # are keyed by value too, in case a lowering folds one into the code.
    return (c.type, c if c.array.size == 1 else None)


def _attrs_key(attrs: Attrs) -> tuple[Any, ...]:
    return tuple((k, _const_key(v) if isinstance(v, ConstValue) else v) for k, v in attrs.items())


def kernel_key(node: Node, graph: Graph) -> tuple[Any, ...]:
    """What the code of a ``fused`` node's kernel depends on: its body's structure, attributes and types,
    and its inputs' types and constness, but not value names nor large constants' values.

    Kernels with equal keys compile to the same function (called with their own arguments); ResNet-18
    has 24 kernels and 19 keys.
    """
    body: Graph = node.attrs["body"]
    index = {n.name: k for k, n in enumerate(body.nodes)}
    outer = []
    for name in node.inputs:
        src = graph.node(name)
        outer.append((src.type, _const_key(src.attrs["value"]) if src.op == "constant" else None))
    nodes = tuple((n.op, tuple(index[i] for i in n.inputs), _attrs_key(n.attrs), n.type) for n in body.nodes)
    return tuple(outer), nodes, tuple(index[o] for o in body.outputs)


def _cpu_kernel(node: Node, graph: Graph, name: str, compiled: dict[tuple[Any, ...], CpuKernel]) -> CpuKernel:
    """The CPU kernel of ``node``: a function compiled before for an identical kernel, or a new one."""
    draft = draft_kernel(node, graph, name)
    key = kernel_key(node, graph)
    same = compiled.get(key)
    if same is not None and _signature(same) == draft.signature():
        return CpuKernel(same.name, same.func, draft.args)
    kernel = CpuKernel(name, compile_draft(draft), draft.args)
    compiled.setdefault(key, kernel)
    return kernel


def _signature(kernel: CpuKernel) -> tuple[tuple[tuple[int, ...], str], ...]:
    return tuple((tuple(int(d.value) for d in b.shape), b.dtype) for b in kernel.func.params)  # type: ignore[attr-defined]


def _for_cpu_target(build: Callable[..., CompiledModule]) -> Callable[..., CompiledModule]:
    """Run ``build`` with its ``cpu_target`` current (:func:`~vdla.compiler.codegen.llvm.using_target`): every
    CPU schedule sizes its vectors and register tiles for the target compiled for, not the host."""
    @functools.wraps(build)
    def wrapper(*args: Any, cpu_target: str = "llvm", **kwargs: Any) -> CompiledModule:
        with using_target(parse_target(cpu_target)):
            return build(*args, cpu_target=cpu_target, **kwargs)
    return wrapper


@_for_cpu_target
def build_model(graph: Graph, target: str = "llvm", config: str | HwConfig = "default",
                calibrate: Samples | Mapping[str, np.ndarray] | np.ndarray | None = None, *,
                skip_first_conv: bool = True, cpu_target: str = "llvm", virtual_threads: int = 2,
                name: str = "model", calibration: str | Calibration = "max",
                per_channel: bool = True, placement: str = "cost", cost_host: str = "board") -> CompiledModule:
    """Compile ``graph`` for ``target`` (``"llvm"`` or ``"vdla"``); see the module doc.

    ``calibration`` (``max``, ``percentile[:P]``, ``kl``) and ``per_channel`` choose the int8
    quantization of target vdla (:func:`~vdla.compiler.graph.passes.quantize_model`).  ``placement``
    ``"cost"`` keeps an ALU kernel (residual add, pool, clamp) on the VDLA only when the cost rule
    (:mod:`vdla.compiler.graph.cost`) finds it faster there; ``"all"`` places every kernel the VDLA can run.
    ``cost_host`` is the host the rule judges against: ``"board"`` (default: a ~1 GHz ARM core with 128-bit
    vectors, or the cross-compiled CPU target's own lanes -- a model built for the VDLA runs on a board) or
    ``"native"`` (this machine at its detected clock)."""
    if target not in TARGETS:
        raise GraphError(f"unknown target {target!r}; use one of {TARGETS}")
    if placement not in PLACEMENTS:
        raise GraphError(f"unknown placement {placement!r}; use one of {PLACEMENTS}")
    t0 = time.perf_counter()
    cfg = load_config(config) if isinstance(config, str) else config
    sqnr: list[LayerSqnr] = []
    if cost_host not in COST_HOSTS:
        raise GraphError(f"unknown cost host {cost_host!r}; use one of {COST_HOSTS}")
    host = host_model(where=cost_host) if target == "vdla" and placement == "cost" else None
    kernels = KernelCache()  # the residual-add fusion compiles kernels the build then keeps
    if target == "vdla":
        samples = calibration_samples(calibrate, graph)
        quantized = quantize_for_vdla(graph, samples, skip_first_conv=skip_first_conv, calibration=calibration,
                                      per_channel=per_channel)
        sqnr = layer_sqnr(quantized, samples[:SQNR_SAMPLES])
        g = lower_quantized_for_vdla(quantized.graph, cfg, host, kernels)
    else:
        g = optimize_for_cpu(graph)
    cpu_kernels: list[CpuKernel] = []
    compiled: dict[tuple[Any, ...], CpuKernel] = {}
    vdla_kernels: dict[str, VdlaKernel] = {}
    fallbacks: dict[str, str] = {}
    costs: dict[str, CostDecision] = {}
    params: dict[str, np.ndarray] = {}
    keys: dict[int, str] = {}
    nodes: list[dict[str, Any]] = []
    report: list[PartitionEntry] = []
    # Kernel symbols are C identifiers; the module's node entries keep the graph (ONNX) names.
    symbols = SymbolTable()
    for n in bar(iterable=g.nodes, desc=f"compiling {name} for {target}", unit="node"):
        if n.op in ("input", "constant"):
            continue
        if n.op != "fused":
            raise GraphError(f"node {n.name!r} ({n.op}) is not part of a fused kernel; the pipeline must fuse every node")
        ops = [b.op for b in n.attrs["body"].nodes if b.op != "input"]
        anchor = next((b.name for b in n.attrs["body"].nodes if b.op in ("conv2d", "dense", "batch_matmul")), None)
        if n.attrs.get("target") == "vdla":
            kernel: VdlaKernel | None = None
            try:
                kernel = kernels.compile(n, g, cfg, virtual_threads)
            except NotLoweredError as exc:
                fallbacks[n.name] = str(exc)
            else:
                body_ops = [b for b in n.attrs["body"].nodes if b.op != "input"]
                if host is not None and len(body_ops) == 1 and body_ops[0].op in WEIGHED_OPS:
                    op = body_ops[0]
                    costs[n.name] = cost = weigh_kernel(op, [n.attrs["body"].node(i).type for i in op.inputs],
                                                        kernel.program.instructions, cfg, host)
                    if not cost.on_vdla:
                        kernel = None  # not a failure: the host is faster (the report says by how much)
            if kernel is not None:
                report.append(PartitionEntry(n.name, "vdla", tuple(ops), anchor))
                vdla_kernels[n.name] = kernel
                nodes.append({"name": n.name, "device": "vdla", "ops": ops, "program": f"vdla/{len(vdla_kernels)}.vdlaprog",
                              **kernel.describe()})
                continue
        ck = _cpu_kernel(n, g, symbols.symbol(f"k{len(cpu_kernels)}_{n.name}"), compiled)
        cpu_kernels.append(ck)
        args = [{"value": a} if isinstance(a, str) and g.node(a).op != "constant" else
                {"param": _param_key(g.node(a).value if isinstance(a, str) else a, params, keys)} for a in ck.args]
        nodes.append({"name": n.name, "device": "cpu", "ops": ops, "function": ck.name, "args": args})
        reason = fallbacks.get(n.name) or (costs[n.name].reason(f"{'+'.join(ops)} kernel") if n.name in costs else
                                           n.attrs.get("reason"))
        report.append(PartitionEntry(n.name, "cpu", tuple(ops), anchor, reason))
    llvm_module = library = library_error = None
    if cpu_kernels:
        unique = {id(k.func): k.func for k in cpu_kernels}
        tgt = parse_target(cpu_target)
        with ticking(f"generating CPU code for {len(unique)} kernels"):
            llvm_module = codegen(list(unique.values()), tgt, name=name)
            if tgt.arch == host_target().arch:
                library = jit(llvm_module)
            else:
                # Cross-compiled for a board: exported and run there (or here under qemu: run_emulated).
                library_error = (f"model {name} was compiled for {tgt.arch} ({tgt.cpu}); this host is "
                                 f"{host_target().arch}: run it on the board, or compile with --cpu-target llvm")
    # Concatenation by placement: a concat of VDLA outputs (each a contiguous, aligned slice of it) costs
    # nothing; its operands' producers write into its buffer (plan_memory) and the executor skips it.
    placed = placed_concats(g, producers=set(vdla_kernels)) if target == "vdla" else {}
    for k, nd in enumerate(nodes):
        if nd["name"] in placed:
            nodes[k] = {"name": nd["name"], "device": "placed", "ops": nd["ops"], "inputs": [v for v, _ in placed[nd["name"]]],
                        "axis": concat_operands(g.node(nd["name"]))[1]}  # type: ignore[index]
    report = [PartitionEntry(e.name, "placed", e.ops, e.anchor, "concatenation by placement: its operands' VDLA "
                             "kernels store into their slices of its buffer, no copy") if e.name in placed else e
              for e in report]
    plan = plan_memory(g, placed=placed)
    description = {
        "format": FORMAT, "version": VERSION, "name": name, "target": target,
        "config": cfg.to_dict() if target == "vdla" else None,
        "inputs": [{"name": i.name, "shape": list(i.type.shape), "dtype": i.type.dtype} for i in g.input_nodes],
        "outputs": [dict(_value_ref(g, o, params, keys), name=o) for o in g.outputs],
        "values": {n.name: {"shape": list(n.type.shape), "dtype": n.type.dtype}
                   for n in g.nodes if n.op not in ("input", "constant")},
        "arena": {"bytes": plan.arena_bytes, "offsets": dict(plan.offsets)},
        "nodes": nodes,
    }
    if target == "vdla":
        description["partition"] = [e.to_json() for e in report]
        description["quantization"] = {"calibration": str(quantized.calibration), "per_channel": per_channel,
                                       "sqnr": [r.to_json() for r in sqnr]}
    programs = {nd["program"]: vdla_kernels[nd["name"]].program for nd in nodes if nd["device"] == "vdla"}
    module = GraphModule(description, params, library, programs, library_error=library_error)
    return CompiledModule(module, g, llvm_module, time.perf_counter() - t0, fallbacks, sqnr,
                          quantized if target == "vdla" else None, costs)


__all__ = ["CompiledModule", "TARGETS", "build_model"]
