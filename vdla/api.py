"""The ``import vdla`` API: compile, load, run, tune; the hardware config, assembler and simulators.

The compiler and torch are imported inside the functions that need them, so ``vdla.load`` and
``vdla.run`` (what a board calls) import only the runtime. See docs/api.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vdla.runtime.display import html_table
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from vdla.compiler.graph.ir import Graph
    from vdla.runtime.graph_executor import GraphModule, Profile
    from vdla.runtime.partition_report import PartitionReport
    from vdla.runtime.program import Program
    from vdla.runtime.result import RunResult

Inputs = Any  # one array or tensor, a sequence of them (in input order), or a dict by input name


def hw_config(config: str | os.PathLike[str] | HwConfig = "default") -> HwConfig:
    """A hardware config: a preset name (``vdla.presets()``), a JSON file, or a config itself."""
    return config if isinstance(config, HwConfig) else load_config(str(config))


class Module:
    """A compiled model: ``run``, ``profile``, ``partition``, ``export``; shows as a table in a notebook.

    Made by :func:`compile` (it then also holds the compile facts: ``graph``, ``fallbacks``,
    ``sqnr``) or by :func:`load` (a module file; runtime only)."""

    def __init__(self, module: GraphModule, compiled: Any = None, source: str = "") -> None:
        self.module = module
        self.compiled = compiled
        """The compiler's :class:`~vdla.compiler.graph.build.CompiledModule` (None for a loaded file)."""
        self.source = source

    @property
    def input_names(self) -> list[str]:
        return list(self.module.input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self.module.output_names)

    def feeds(self, inputs: Inputs) -> dict[str, np.ndarray]:
        """``inputs`` as arrays by input name (torch tensors and sequences accepted)."""
        names = self.input_names
        if isinstance(inputs, Mapping):
            return {k: _array(v) for k, v in inputs.items()}
        items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(items) != len(names):
            raise UsageError(f"the model takes {len(names)} input(s) {names}, got {len(items)}",
                             hint="pass one array per input, in order, or a dict by name")
        return {n: _array(v) for n, v in zip(names, items)}

    def run(self, *inputs: Inputs, backend: str = "fsim", **options: Any) -> list[np.ndarray]:
        """The outputs for ``inputs``; VDLA nodes run on ``backend`` (fsim, cycle, rtl)."""
        return self.module.run(self.feeds(inputs[0] if len(inputs) == 1 else inputs), backend=backend, **options)

    def __call__(self, *inputs: Inputs, backend: str = "fsim") -> np.ndarray | list[np.ndarray]:
        outs = self.run(*inputs, backend=backend)
        return outs[0] if len(outs) == 1 else outs

    def profile(self, *inputs: Inputs, backend: str = "cycle", trace: str | os.PathLike[str] | None = None,
                repeat: int = 1) -> Profile:
        """Per-node times (CPU) and cycles (VDLA, on a timed backend); ``trace=`` writes a Chrome trace."""
        _, prof = self.module.profile(self.feeds(inputs[0] if len(inputs) == 1 else inputs), backend=backend,
                                      trace=trace, repeat=repeat)
        return prof

    def partition(self) -> PartitionReport:
        """Where every kernel runs and why a conv2d/dense stays on the CPU."""
        from vdla.runtime.partition_report import read_partition

        return read_partition(self.module)

    def export(self, path: str | os.PathLike[str]) -> Path:
        """One module file (graph, parameters, kernel library, VDLA programs) for :func:`load`."""
        if self.compiled is None:
            return self.module.export(path)
        return self.compiled.export(path)

    def placement(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.module.graph["nodes"]:
            out[n["device"]] = out.get(n["device"], 0) + 1
        return out

    def _facts(self) -> list[tuple[str, Any]]:
        types = {**self.module.graph.get("values", {}), **{i["name"]: i for i in self.module.graph.get("inputs", [])}}
        def sig(names: list[str]) -> str:
            return ", ".join(f"{n}: {types[n]['dtype']}{list(types[n]['shape'])}" if n in types else n for n in names)
        facts: list[tuple[str, Any]] = [("source", self.source or "-"), ("inputs", sig(self.input_names)),
                                        ("outputs", sig(self.output_names)),
                                        ("nodes", ", ".join(f"{d} {k}" for d, k in sorted(self.placement().items())))]
        if self.compiled is not None:
            facts.append(("compile seconds", round(self.compiled.compile_seconds, 3)))
            if self.compiled.fallbacks:
                facts.append(("VDLA kernels on the CPU", len(self.compiled.fallbacks)))
        return facts

    def __repr__(self) -> str:
        return "vdla.Module(" + "; ".join(f"{k}: {v}" for k, v in self._facts()) + ")"

    def _repr_html_(self) -> str:
        return html_table(("", ""), self._facts(), caption="vdla.Module")


def _array(v: Any) -> np.ndarray:
    if hasattr(v, "detach") and hasattr(v, "numpy"):  # a torch tensor, without importing torch
        return v.detach().cpu().contiguous().numpy()
    return np.asarray(v)


def from_onnx(model: Any, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """The graph IR of an ONNX model (a path or a ``ModelProto``)."""
    from vdla.compiler.frontend.onnx import from_onnx as read

    return read(model, shapes=shapes)


def from_torch(model: Any, example_inputs: Any) -> Graph:
    """The graph IR of a ``torch.nn.Module`` (through ``torch.export``) or a ``torch.export.ExportedProgram``."""
    from vdla.compiler.frontend.torch_export import from_exported_program
    from vdla.compiler.frontend.torch_export import from_torch as read

    register_torch_backend()
    if type(model).__name__ == "ExportedProgram":
        return from_exported_program(model)
    return read(model, example_inputs)


def to_graph(model: Any, example_inputs: Any = None, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Any model form :func:`compile` accepts, as the graph IR."""
    from vdla.compiler.graph.ir import Graph

    if isinstance(model, Graph):
        return model
    if isinstance(model, (str, os.PathLike)) or type(model).__name__ == "ModelProto":
        if isinstance(model, (str, os.PathLike)) and not Path(model).is_file():
            raise UsageError(f"model file {model} does not exist", hint="pass an .onnx path, a torch.nn.Module "
                             "with example_inputs, or a torch.export.ExportedProgram")
        return from_onnx(model, shapes)
    if type(model).__name__ == "ExportedProgram":
        return from_torch(model, None)
    if hasattr(model, "forward") and hasattr(model, "parameters"):
        if example_inputs is None:
            raise UsageError("a torch.nn.Module needs example_inputs (a tensor or tuple of tensors) for torch.export",
                             hint="vdla.compile(model, example_inputs=(torch.randn(1, 3, 224, 224),))")
        return from_torch(model, example_inputs)
    raise UsageError(f"cannot compile a {type(model).__name__}",
                     hint="pass an .onnx path, an onnx.ModelProto, a torch.nn.Module with example_inputs, "
                          "a torch.export.ExportedProgram or a vdla graph")


def compile(model: Any, example_inputs: Any = None, *, target: str = "llvm",  # noqa: A001 - the API's verb
            config: str | HwConfig = "default", calibrate: Any = None, cpu_target: str = "llvm",
            tuning_log: str | os.PathLike[str] | None = None, shapes: Mapping[str, Sequence[int]] | None = None,
            **options: Any) -> Module:
    """Compile a model for this CPU (``target="llvm"``, float32) or the VDLA (``"vdla"``, int8).

    ``model``: an ONNX path or ``ModelProto``, a ``torch.nn.Module`` with ``example_inputs``, a
    ``torch.export.ExportedProgram``, or a graph. ``calibrate`` (target vdla): sample inputs, each an
    array/tensor, a tuple in input order or a dict by name. ``cpu_target``: ``llvm`` (this host) or
    a board's CPU (see docs/deploy.md). ``tuning_log``: apply the best configs of ``vdla.tune``.
    Other keywords go to :func:`vdla.compiler.graph.build.build_model` (``calibration``, ``per_channel``...).
    """
    from vdla.compiler.graph.build import build_model

    graph = to_graph(model, example_inputs, shapes)
    samples = None
    if calibrate is not None:
        names = [n.name for n in graph.input_nodes]
        samples = []
        for s in (calibrate if isinstance(calibrate, (list, tuple)) else [calibrate]):
            if isinstance(s, Mapping):
                samples.append({k: _array(v) for k, v in s.items()})
            else:
                items = list(s) if isinstance(s, (list, tuple)) else [s]
                if len(items) != len(names):
                    raise UsageError(f"a calibration sample has {len(items)} arrays; the model takes {names}",
                                     hint="pass each sample as one array per input, in order, or a dict by name")
                samples.append({n: _array(v) for n, v in zip(names, items)})
    apply = None
    if tuning_log is not None:
        from vdla.compiler.autotune.database import ApplyBest, read_log

        if not Path(tuning_log).is_file():
            raise UsageError(f"tuning log {tuning_log} does not exist", hint="write one with vdla.tune(...)")
        apply = ApplyBest(read_log(str(tuning_log)), target, cpu_target,
                          config if isinstance(config, str) else config.name)
    from vdla.compiler.autotune.dispatch import dispatching

    with dispatching(apply) if apply is not None else nullcontext():
        compiled = build_model(graph, target=target, config=config, calibrate=samples, cpu_target=cpu_target,
                               **options)
    source = str(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__
    return Module(compiled.module, compiled, source=source)


def load(path: str | os.PathLike[str], config: str | HwConfig | None = None) -> Module:
    """A module file written by ``Module.export`` / ``vdla compile`` (runtime only; no compiler import)."""
    from vdla.runtime.graph_executor import load as read

    return Module(read(path, hw_config(config) if config is not None else None), source=str(path))


def run(program: Program | str | os.PathLike[str], backend: str = "fsim", **options: Any) -> RunResult:
    """Run one VDLA program (a ``Program`` or a ``.vdlaprog`` file) on ``backend``; see ``vdla.backends()``."""
    from vdla.runtime.backends import run as run_program
    from vdla.runtime.program import Program

    if not isinstance(program, Program):
        program = Program.load(program)
    return run_program(program, backend, **options)


def fsim(program: Program | str | os.PathLike[str], **options: Any) -> RunResult:
    """The bit-exact functional simulator."""
    return run(program, "fsim", **options)


def cycle_sim(program: Program | str | os.PathLike[str], **options: Any) -> RunResult:
    """The cycle-level (discrete-event) model: ``.cycles``, ``.extra['stats']``; ``trace=``/``plot=`` write files."""
    return run(program, "cycle", **options)


def timeline(program: Program | str | os.PathLike[str], title: str | None = None) -> Figure:
    """The cycle model's Gantt chart of one program (load/compute/store overlap) as a matplotlib figure."""
    from vdla.runtime.program import Program
    from vdla.simulator.cycle import run_cycle
    from vdla.simulator.cycle.plot import gantt_figure

    if not isinstance(program, Program):
        program = Program.load(program)
    result = run_cycle(program.config, program.instructions, program.dram.copy(), insn_addr=program.insn_addr,
                       timeline=True)
    s = result.stats
    label = title or f"{program.config.name}: {s.cycles:,} cycles, GEMM utilization {s.gemm_utilization:.1%}"
    return gantt_figure([(label, result.timeline)])


def pareto(results: Sequence[Any], title: str = "design-space sweep") -> Figure:
    """The Pareto panels of a DSE sweep's results (``vdla.compiler.dse``) as a matplotlib figure."""
    from vdla.compiler.dse.plots import pareto_figure

    return pareto_figure(results, title)


def backends() -> list[str]:
    """The names ``run``/``Module.run`` accept for ``backend``."""
    from vdla.runtime.backends import backend_names

    return backend_names()


def assemble(text: str, config: str | HwConfig = "default") -> tuple[list[Any], list[Any]]:
    """VDLA assembly text to (instructions, micro-ops); ``vdla.disassemble`` goes back."""
    from vdla_hw.asm import assemble as asm

    return asm(text, hw_config(config))


def tune(model: Any, example_inputs: Any = None, *, target: str = "llvm", log: str | os.PathLike[str] = "tuning.jsonl",
         trials: int = 32, tuner: str = "xgb", config: str | HwConfig = "default", calibrate: Any = None,
         cpu_target: str = "llvm", workers: int = 1, quiet: bool = True, seed: int = 0) -> Path:
    """Tune the model's operators (records appended to ``log``, resumable); pass ``log`` to
    :func:`compile` as ``tuning_log``. Measures on ``workers`` local processes."""
    from vdla.compiler.autotune.database import Database
    from vdla.compiler.autotune.executor import LocalExecutor
    from vdla.compiler.autotune.session import tune_tasks
    from vdla.compiler.autotune.task import extract_tasks

    graph = to_graph(model, example_inputs)
    cfg = hw_config(config)
    if target == "vdla":
        if calibrate is None:
            raise UsageError("tuning for target vdla quantizes first: pass calibrate= sample inputs")
        names = [n.name for n in graph.input_nodes]
        samples = [s if isinstance(s, Mapping) else dict(zip(names, s if isinstance(s, (list, tuple)) else [s]))
                   for s in (calibrate if isinstance(calibrate, (list, tuple)) else [calibrate])]
        samples = [{k: _array(v) for k, v in s.items()} for s in samples]
        tasks = extract_tasks(graph, "vdla", config=cfg, calibrate=samples)
    else:
        tasks = extract_tasks(graph, "llvm", cpu_target=cpu_target)
    log = Path(log)
    db = Database(log)
    with LocalExecutor(workers=workers) as executor:
        tune_tasks(tasks, db, executor, trials, tuner, hw_config=cfg.to_dict() if target == "vdla" else None,
                   quiet=quiet, seed=seed)
    return log


def torch_backend(gm: Any, example_inputs: Sequence[Any], options: Mapping[str, Any] | None = None) -> Any:
    """The ``torch.compile`` backend ``"vdla"`` (:mod:`vdla.compiler.frontend.torch_dynamo`), imported on first use."""
    from vdla.compiler.frontend.torch_dynamo import vdla_backend

    return vdla_backend(gm, example_inputs, options)


def register_torch_backend() -> None:
    """Register ``torch.compile(backend="vdla")``: done by ``import vdla`` when torch is already imported,
    and by the ``torch_dynamo_backends`` entry point of an installed vdla (idempotent)."""
    import torch._dynamo

    if "vdla" not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(name="vdla")(torch_backend)
