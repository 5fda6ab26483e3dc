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
    """One layer on the cycle model."""

    name: str
    workload: str
    macs: int
    cycles: int
    knobs: str = ""


@dataclass(frozen=True)
class Workloads:
    """The layers a sweep compiles: ResNet-18 conv layers by name, or an ONNX model's VDLA kernels."""

    name: str
    layers: tuple[str, ...] = ()
    model: str | None = None

    @property
    def key(self) -> str:
        """Identifies what is measured (the model file by its content) for the result cache."""
        h = hashlib.sha256(f"{self.name}|{','.join(self.layers)}".encode())
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


def onnx_model(path: str) -> Workloads:
    """The VDLA kernels of the ONNX model at ``path`` (a :class:`BadFileError` when it cannot be read)."""
    from vdla.compiler.frontend.onnx import from_onnx

    from_onnx(path)  # read it once here: a bad file is the user's error before any config runs
    return Workloads(Path(path).stem, model=str(Path(path).resolve()))


@dataclass(frozen=True)
class LayerProgram:
    """A compiled layer with its inputs bound, ready to run on a cycle backend (here or on the pool)."""

    name: str
    workload: Conv2dWorkload
    program: Program
    knobs: str = ""
    expected: np.ndarray | None = None
    """The NumPy result (NCHW) the run must reproduce; None for a model kernel (zero input)."""
    out_shape: tuple[int, ...] = ()
    macs: int | None = None
    """Useful MACs when they differ from the workload's (a residual add or a pool: none)."""

    def timed(self, result: RunResult, cfg: HwConfig) -> LayerTime:
        """The layer's time from its run, after checking the output bit-exactly."""
        if self.expected is not None:
            got = ref.unpack_output(result.read("out").reshape(self.out_shape))
            if not np.array_equal(got, self.expected):
                raise ProgramFaultError(f"layer {self.name} compiled for {cfg.label()} differs from NumPy on the "
                                        f"{result.backend} backend", hint="a compiler or simulator bug: report it with the config")
        macs = self.workload.macs if self.macs is None else self.macs
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
    from vdla.compiler.frontend.onnx import from_onnx
    from vdla.compiler.graph.errors import NotLoweredError
    from vdla.compiler.graph.lower_vdla import compile_kernel
    from vdla.compiler.graph.passes import optimize_for_vdla

    assert wl.model is not None
    graph = from_onnx(wl.model)
    rng = np.random.default_rng(0)
    samples = [{n.name: rng.standard_normal(n.type.shape).astype(np.float32) for n in graph.input_nodes}]
    g = optimize_for_vdla(graph, cfg, samples)
    found = False
    for node in g.nodes:
        if node.op != "fused" or node.attrs.get("target") != "vdla":
            continue
        try:
            kernel = compile_kernel(node, g, cfg)
        except NotLoweredError:  # runs on the CPU for this config: no VDLA latency to report
            continue
        found = True
        # Every VDLA kernel: convs, dense, and the residual adds and pools (identity GEMM + ALU).
        yield LayerProgram(node.name, kernel.workload, kernel.program,  # type: ignore[arg-type]
                           macs=int(kernel.describe()["macs"]))  # type: ignore[call-overload]
    if not found:
        raise UnsupportedError(f"no layer of model {wl.name!r} runs on the VDLA with config {cfg.label()}",
                               hint="`vdla compile MODEL --target vdla --calibrate ...` prints why each layer stays on the CPU")


def layer_programs(wl: Workloads, cfg: HwConfig) -> Iterator[LayerProgram]:
    """Compile every layer of ``wl`` for ``cfg``, one at a time."""
    return _model_programs(wl, cfg) if wl.model else _resnet18_programs(wl, cfg)


def layer_times(wl: Workloads, cfg: HwConfig) -> list[LayerTime]:
    """Compile every layer of ``wl`` for ``cfg`` and time it on the cycle model in this process."""
    return [lp.timed(run_program(lp.program, backend="cycle"), cfg) for lp in layer_programs(wl, cfg)]
