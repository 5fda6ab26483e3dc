"""What a sweep measures: ResNet-18's conv layers (all, or the ``--quick`` subset), or the VDLA
kernels the graph compiler makes of an ONNX model for each config.

Each config compiles every layer and runs it on the cycle model; a ResNet-18 layer's output is
also checked bit-exactly against NumPy (a wrong answer is a failure of the point, not a latency).
A model's kernels run with their weights bound and zero input: the cycle model's timing does
not depend on the data.  The calibration of a model's int8 quantization only picks shifts, so
seeded random inputs stand in for real samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (
    RESNET18_CONVS,
    Conv2dWorkload,
    Requantize,
    compile_conv2d,
    random_conv_data,
    requant_shift,
)
from vdla.compiler.vdla.topi import reference as ref
from vdla.runtime.backends import run as run_program
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw.config import HwConfig
from vdla_hw.errors import ProgramFaultError, UnsupportedError, UsageError

QUICK_LAYERS = ("C5", "C8", "C11")
"""The ``--quick`` subset: a 1x1 stride-2 layer of each of three stages (the fastest to simulate),
whose tiles still exercise the input, weight and accumulator buffers and both virtual threads."""


@dataclass(frozen=True)
class LayerTime:
    """One layer on the cycle model, or (``device`` ``host``) a kernel of a model the placement leaves on the host,
    with its modeled time ``host_ms``."""

    name: str
    workload: str
    macs: int
    cycles: int
    knobs: str = ""
    device: str = "vdla"
    host_ms: float = 0.0


@dataclass(frozen=True)
class Workloads:
    """The layers a sweep compiles: ResNet-18 conv layers by name, or an ONNX model's VDLA kernels."""

    name: str
    layers: tuple[str, ...] = ()
    model: str | None = None
    placement: str = "cost"
    """A model's placement, as ``build_model``'s: ``cost`` (the cost rule, judged on the board's host) or ``all``."""

    @property
    def key(self) -> str:
        """Identifies what is measured (the model file by its content) for the result cache."""
        h = hashlib.sha256(f"{self.name}|{','.join(self.layers)}|{self.placement}".encode())
        if self.model is not None:
            h.update(Path(self.model).read_bytes())
        return h.hexdigest()[:12]


def resnet18(quick: bool = False, names: str | None = None) -> Workloads:
    """ResNet-18's C2-C12 (:data:`QUICK_LAYERS` with ``quick``; ``names`` picks layers: ``C2,C9``)."""
    if names:
        chosen = tuple(n.strip().upper() for n in names.split(","))
        bad = [n for n in chosen if n not in RESNET18_CONVS]
        if bad:
            raise UsageError(f"ResNet-18 has no VDLA conv layer(s) {bad}", hint=f"choose from {', '.join(RESNET18_CONVS)}")
        return Workloads("resnet18", chosen)
    return Workloads("resnet18-quick" if quick else "resnet18", QUICK_LAYERS if quick else tuple(RESNET18_CONVS))


def onnx_model(path: str, placement: str = "cost") -> Workloads:
    """The kernels of the ONNX model at ``path`` placed as ``build_model(placement=...)`` places them (a
    :class:`BadFileError` when it cannot be read)."""
    from vdla.compiler.frontend.onnx import from_onnx

    from_onnx(path)  # read it once here: a bad file is the user's error before any config runs
    if placement not in ("cost", "all"):
        raise UsageError(f"unknown placement {placement!r}", hint="use cost or all")
    return Workloads(Path(path).stem, model=str(Path(path).resolve()), placement=placement)


@dataclass(frozen=True)
class LayerProgram:
    """A compiled layer with its inputs bound, ready to run on a cycle backend (here or on the pool)."""

    name: str
    workload: Conv2dWorkload | str
    program: Program | None
    """None for a kernel the placement leaves on the host (``host_ms`` is its modeled time)."""
    knobs: str = ""
    expected: np.ndarray | None = None
    """The NumPy result (NCHW) the run must reproduce; None for a model kernel (zero input)."""
    out_shape: tuple[int, ...] = ()
    macs: int | None = None
    """Useful MACs when they differ from the workload's (a residual add or a pool: none)."""
    host_ms: float = 0.0

    def timed(self, result: RunResult | None, cfg: HwConfig) -> LayerTime:
        """The layer's time from its run (None for a host kernel), after checking the output bit-exactly."""
        if self.program is None or result is None:
            return LayerTime(self.name, str(self.workload), self.macs or 0, 0, self.knobs, "host", self.host_ms)
        if self.expected is not None:
            got = ref.unpack_output(result.read("out").reshape(self.out_shape))
            if not np.array_equal(got, self.expected):
                raise ProgramFaultError(f"layer {self.name} compiled for {cfg.label()} differs from NumPy on the "
                                        f"{result.backend} backend", hint="a compiler or simulator bug: report it with the config")
        macs = self.workload.macs if self.macs is None else self.macs  # type: ignore[union-attr]
        return LayerTime(self.name, str(self.workload), macs, int(result.cycles or 0), self.knobs)


def _resnet18_programs(wl: Workloads, cfg: HwConfig) -> Iterator[LayerProgram]:
    target = VdlaTarget(cfg)
    for name in wl.layers:
        layer: Conv2dWorkload = RESNET18_CONVS[name]
        ep = Requantize(shift=requant_shift(layer))
        compiled = compile_conv2d(layer, target, epilogue=ep)
        data, kernel, bias = random_conv_data(layer, 0)
        program = compiled.module.bind(*compiled.pack_inputs(data, kernel, bias))
        expected = ref.conv2d_reference(data, kernel, bias, layer.stride, layer.pad, ep.shift, ep.relu,
                                        cfg.out_width, cfg.acc_width)
        out = next(p for p in compiled.module.params if p.kind == "out")
        yield LayerProgram(name, layer, program, str(compiled.knobs), expected, tuple(out.shape))


def _model_programs(wl: Workloads, cfg: HwConfig) -> Iterator[LayerProgram]:
    """Every kernel of the model, placed as ``build_model`` places it for ``cfg`` (``wl.placement``; the cost rule
    judged on the board's host): a VDLA kernel compiled (to run on the cycle model), a host kernel with its modeled
    time -- the cost rule's figures (host arithmetic + transfers) for a kernel the rule moves, else a peak-rate
    estimate (:func:`~vdla.compiler.graph.cost.host_kernel_seconds`) plus its values crossing the VDLA's bus."""
    from vdla.compiler.frontend.onnx import from_onnx
    from vdla.compiler.graph.cost import WEIGHED_OPS, host_kernel_seconds, host_model, weigh_kernel
    from vdla.compiler.graph.errors import NotLoweredError
    from vdla.compiler.graph.lower_vdla import compile_kernel
    from vdla.compiler.graph.passes import optimize_for_vdla

    assert wl.model is not None
    graph = from_onnx(wl.model)
    rng = np.random.default_rng(0)
    samples = [{n.name: rng.standard_normal(n.type.shape).astype(np.float32) for n in graph.input_nodes}]
    host = host_model(where="board")
    g = optimize_for_vdla(graph, cfg, samples, host=host if wl.placement == "cost" else None)
    bus_hz = cfg.bus_bytes * cfg.clock_mhz * 1e6
    on_vdla: set[str] = set()
    host_nodes = []
    for node in g.nodes:
        if node.op != "fused":
            continue
        body = node.attrs["body"]
        ops = [b for b in body.nodes if b.op != "input"]
        if node.attrs.get("target") == "vdla":
            try:
                kernel = compile_kernel(node, g, cfg)
            except NotLoweredError:  # runs on the CPU for this config
                kernel = None
            if kernel is not None and wl.placement == "cost" and len(ops) == 1 and ops[0].op in WEIGHED_OPS:
                d = weigh_kernel(ops[0], [body.node(i).type for i in ops[0].inputs], kernel.program.instructions, cfg,
                                 host)
                if not d.on_vdla:
                    yield LayerProgram(node.name, f"{ops[0].op} moved to the host by the cost rule", None,
                                       macs=0, host_ms=1e3 * (d.host_s + d.transfer_s))
                    continue
            if kernel is not None:
                on_vdla.add(node.name)
                # Every VDLA kernel: convs (with their fused residual adds), dense, pools (identity GEMM + ALU).
                yield LayerProgram(node.name, kernel.workload, kernel.program,  # type: ignore[arg-type]
                                   macs=int(kernel.describe()["macs"]))  # type: ignore[call-overload]
                continue
        host_nodes.append(node)
    if not on_vdla:
        raise UnsupportedError(f"no layer of model {wl.name!r} runs on the VDLA with config {cfg.label()}",
                               hint="`vdla compile MODEL --target vdla --calibrate ...` prints why each layer stays on the CPU")
    for node in host_nodes:
        body = node.attrs["body"]
        types = {p.name: p.type for p in body.input_nodes} | {n.name: n.type for n in body.nodes}
        ops = [b for b in body.nodes if b.op != "input"]
        crossing = sum(g.node(i).type.nbytes for i in node.inputs if i in on_vdla)
        if any(c in on_vdla for c in g.consumers[node.name]):
            crossing += node.type.nbytes
        seconds = host_kernel_seconds(ops, types, host) + crossing / bus_hz
        yield LayerProgram(node.name, "+".join(o.op for o in ops), None, macs=0, host_ms=1e3 * seconds)


def layer_programs(wl: Workloads, cfg: HwConfig) -> Iterator[LayerProgram]:
    """Compile every layer of ``wl`` for ``cfg``, one at a time."""
    return _model_programs(wl, cfg) if wl.model else _resnet18_programs(wl, cfg)


def layer_times(wl: Workloads, cfg: HwConfig) -> list[LayerTime]:
    """Compile every layer of ``wl`` for ``cfg`` and time it on the cycle model in this process."""
    return [lp.timed(None if lp.program is None else run_program(lp.program, backend="cycle"), cfg)
            for lp in layer_programs(wl, cfg)]
