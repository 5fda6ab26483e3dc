"""The ``torch.compile`` backend ``"vdla"``: FX graphs compiled by VDLA, the rest in eager PyTorch.

>>> m = torch.compile(model, backend="vdla")                                    # float, llvm on this CPU
>>> m = torch.compile(model, backend="vdla",
...                   options={"target": "vdla", "config": "default", "calibrate": samples, "backend": "fsim"})

For each graph dynamo hands over, the first call with a given input signature (shapes, dtypes,
non-tensor arguments) traces it to core ATen ops (``make_fx`` with the core decompositions),
splits it into the largest connected pieces whose ops :mod:`vdla.compiler.frontend.torch_export`
imports (``CapabilityBasedPartitioner``), compiles each piece with
:func:`~vdla.compiler.graph.build.build_model` and leaves every other op to eager PyTorch, with a
one-line :class:`VdlaFallbackWarning` naming them; never an error. The result is cached per
input signature, so a new shape compiles once.

Parameters and buffers reach the graph as constants (dynamo passes them as inputs: they are the
module's ``nn.Parameter`` objects or ``..._buffers_...`` placeholders): like inductor's
``freezing``, a model whose weights change after its first call must be compiled again.

Target ``vdla`` quantizes each piece to int8 with ``calibrate`` (a list of model inputs: tensors
or tuples of tensors), and its VDLA nodes run on ``options["backend"]`` (``fsim``, ``cycle``,
``rtl``).
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from vdla.compiler.frontend.torch_export import import_fx, op_name, unsupported_reason
from vdla.compiler.graph.build import CompiledModule, build_model
from vdla.compiler.graph.errors import UnsupportedModelError

OPTIONS = ("target", "config", "calibrate", "backend", "cpu_target", "tuning_log")


class VdlaFallbackWarning(UserWarning):
    """Some ops of a ``torch.compile``'d graph run in eager PyTorch (the note names them)."""


@dataclass(frozen=True)
class BackendOptions:
    """``torch.compile(..., backend="vdla", options=...)``."""

    target: str = "llvm"
    config: str = "default"
    calibrate: Sequence[Any] | None = None
    backend: str = "fsim"
    cpu_target: str = "llvm"
    tuning_log: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> BackendOptions:
        options = dict(options or {})
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise UnsupportedModelError(f"unknown option(s) {unknown} for backend 'vdla'; use {list(OPTIONS)}")
        target = options.get("target", "llvm")
        if target == "cpu":
            target = "llvm"
        if target not in ("llvm", "vdla"):
            raise UnsupportedModelError(f"options['target'] is {target!r}; use 'llvm' (this CPU) or 'vdla' (int8 "
                                        f"on the accelerator)")
        if target == "vdla" and not options.get("calibrate"):
            raise UnsupportedModelError("options['target'] = 'vdla' quantizes to int8 and needs calibration data: "
                                        "pass options['calibrate'] = a few example model inputs (tensors or tuples)")
        return cls(target=target, config=options.get("config", "default"), calibrate=options.get("calibrate"),
                   backend=options.get("backend", "fsim"), cpu_target=options.get("cpu_target", "llvm"),
                   tuning_log=options.get("tuning_log"))


class _Supported(OperatorSupportBase):
    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node) -> bool:
        return node.op == "call_function" and unsupported_reason(node) is None


def is_constant_input(name: str, value: Any) -> bool:
    """Dynamo's placeholders for a module's parameters and buffers (compiled as constants)."""
    return isinstance(value, torch.nn.Parameter) or "_buffers_" in name


def signature(args: Sequence[Any]) -> tuple[Any, ...]:
    """The cache key of one call: shapes and dtypes of tensors, values of everything else."""
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


class VdlaSubgraph(torch.nn.Module):
    """One compiled partition in the eager graph: picks its run-time inputs and runs the module."""

    def __init__(self, module: CompiledModule, input_names: list[str], dynamic: list[int], single: bool,
                 backend: str) -> None:
        super().__init__()
        self.compiled = module
        self.input_names = input_names
        self.dynamic = dynamic
        self.single = single
        self.backend = backend

    def forward(self, *args: torch.Tensor) -> Any:
        feeds = {n: args[i].detach().contiguous().numpy() for n, i in zip(self.input_names, self.dynamic)}
        outs = [torch.from_numpy(np.ascontiguousarray(y)) for y in self.compiled.run(feeds, backend=self.backend)]
        return outs[0] if self.single else tuple(outs)


@dataclass
class CompiledEntry:
    """One input signature's compiled graph and what was compiled."""

    graph: torch.fx.GraphModule
    compiled_ops: int
    eager_ops: Counter[str]
    partitions: int
    seconds: float


@dataclass
class CompiledGraph:
    """What the backend returns to dynamo: a callable compiling once per input signature."""

    gm: torch.fx.GraphModule
    options: BackendOptions
    cache: dict[tuple[Any, ...], CompiledEntry] = field(default_factory=dict)
    compiles: int = 0

    def __call__(self, *args: Any) -> Any:
        key = signature(args)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = compile_graph(self.gm, list(args), self.options)
            self.compiles += 1
        with torch.no_grad():
            return entry.graph(*args)


def trace_aten(gm: torch.fx.GraphModule, args: Sequence[Any]) -> torch.fx.GraphModule:
    """``gm`` as core ATen ops at the shapes of ``args`` (values in ``node.meta['val']``), functionalized:
    in-place ops (``ReLU(inplace=True)``, ``out += identity``) become their pure forms, so they neither
    split the graph nor stay eager; a mutation of an input (BatchNorm's running statistics in
    training mode) becomes a ``copy_`` at the end, which runs eager."""
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        return make_fx(torch.func.functionalize(gm, remove="mutations_and_views"),
                       decomposition_table=core_aten_decompositions(), tracing_mode="fake")(*args)


def compile_graph(gm: torch.fx.GraphModule, args: list[Any], options: BackendOptions) -> CompiledEntry:
    """Trace, partition and compile ``gm`` for inputs like ``args``; unsupported ops stay eager."""
    t0 = time.perf_counter()
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    constant = [is_constant_input(n, a) for n, a in zip(names, args)]
    aten_gm = trace_aten(gm, args)
    # by name: fusing copies the graph, so the fused graph's placeholders are other Node objects
    position = {n.name: i for i, n in enumerate(n for n in aten_gm.graph.nodes if n.op == "placeholder")}
    eager = Counter(op_name(n.target) for n in aten_gm.graph.nodes
                    if n.op == "call_function" and unsupported_reason(n) is not None)
    partitioner = CapabilityBasedPartitioner(aten_gm, _Supported(), allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    calls = [n for n in fused.graph.nodes if n.op == "call_module" and n.target.startswith("fused_")]
    samples = _calibration_inputs(fused, calls, args, constant, options) if options.target == "vdla" else {}
    compiled_ops = 0
    for call in calls:
        sub: torch.fx.GraphModule = getattr(fused, call.target)
        is_const = [isinstance(a, torch.fx.Node) and a.op == "placeholder" and constant[position[a.name]]
                    for a in call.args]
        values = [args[position[a.name]] if c else _example(a) for a, c in zip(call.args, is_const)]
        try:
            graph, input_names = import_fx(sub, values, is_const)
        except UnsupportedModelError as exc:
            eager[f"a partition ({exc})"] += 1
            continue
        if not input_names:
            continue  # constants only: PyTorch folds it as well as we would
        dynamic = [i for i, c in enumerate(is_const) if not c]
        calib = None
        if options.target == "vdla":
            calib = [{n: s[i].numpy() for n, i in zip(input_names, dynamic)} for s in samples[call.name]]
        module = build_model(graph, target=options.target, config=options.config, calibrate=calib,
                             cpu_target=options.cpu_target, name=call.target)
        out = sub.graph.output_node().args[0]
        single = not isinstance(out, (tuple, list))
        setattr(fused, call.target, VdlaSubgraph(module, input_names, dynamic, single, options.backend))
        compiled_ops += sum(1 for n in sub.graph.nodes if n.op == "call_function")
    fused.recompile()
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        warnings.warn("vdla compiles for inference: outputs of its compiled subgraphs carry no gradient "
                      "(run under torch.no_grad() / inference_mode(), or train with another backend)",
                      UserWarning, stacklevel=2)
    if eager:
        ops = ", ".join(f"{op} x{k}" if k > 1 else op for op, k in sorted(eager.items()))
        warnings.warn(f"vdla: {compiled_ops} ops compiled in {len(calls)} subgraph(s); in eager PyTorch: {ops}",
                      VdlaFallbackWarning, stacklevel=2)
    return CompiledEntry(fused, compiled_ops, eager, len(calls), time.perf_counter() - t0)


def _example(node: Any) -> Any:
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else node
    if isinstance(v, torch.Tensor):
        return torch.zeros(tuple(int(d) for d in v.shape), dtype=v.dtype)
    return v


def _calibration_inputs(fused: torch.fx.GraphModule, calls: list[torch.fx.Node], args: list[Any],
                        constant: list[bool], options: BackendOptions) -> dict[str, list[list[torch.Tensor]]]:
    """Each partition's input values on every calibration sample (the eager graph run on it)."""
    record: dict[str, list[list[torch.Tensor]]] = {c.name: [] for c in calls}
    targets = {c.target: c.name for c in calls}
    # the model's tensor inputs; sizes dynamo passes as ints (dynamic shapes) keep this call's values
    dynamic = [i for i, c in enumerate(constant) if not c and isinstance(args[i], torch.Tensor)]

    class Recorder(torch.fx.Interpreter):
        def call_module(self, target: str, a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
            if target in targets:
                record[targets[target]].append([x.detach() if isinstance(x, torch.Tensor) else x for x in a])
            return super().call_module(target, a, kw)

    for sample in options.calibrate or ():
        sample = list(sample) if isinstance(sample, (tuple, list)) else [sample]
        if len(sample) != len(dynamic):
            raise UnsupportedModelError(f"a calibration sample has {len(sample)} tensors but the compiled graph "
                                        f"takes {len(dynamic)} inputs: pass one tuple of model inputs per sample")
        full = list(args)
        for i, x in zip(dynamic, sample):
            full[i] = torch.as_tensor(x)
            if full[i].shape != args[i].shape or full[i].dtype != args[i].dtype:
                raise UnsupportedModelError(
                    f"a calibration sample is {full[i].dtype}{list(full[i].shape)} but the model is called with "
                    f"{args[i].dtype}{list(args[i].shape)}: pass calibration inputs of the shape it is called with")
        with torch.no_grad():
            Recorder(fused).run(*full)
    return record


def vdla_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """The ``torch.compile`` backend (registered as ``"vdla"``): compiles lazily per input signature."""
    return CompiledGraph(gm, BackendOptions.parse(options))


__all__ = ["BackendOptions", "CompiledGraph", "VdlaFallbackWarning", "compile_graph", "vdla_backend"]
