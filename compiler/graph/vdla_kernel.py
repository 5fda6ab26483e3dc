"""A compiled VDLA node of a model (:class:`VdlaKernel`) and the conv2d compile step the GEMM and
pooling lowerings share (tuned knobs when a tuning log has them, else the default knobs)."""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.errors import UnsupportedError

from vdla.compiler.autotune import dispatch
from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (CompiledConv, Conv2dWorkload, Requantize, ResidentKnobs, compile_conv2d,
                                     compile_default_conv, fits, resident_error)
from vdla.runtime.program import Program


@dataclass(frozen=True)
class VdlaKernel:
    """One compiled VDLA node: its program (weights bound) and how its inputs and output map to buffers."""

    name: str
    program: Program
    input_value: str
    input_perm: tuple[int, ...] | None
    output_shape: tuple[int, ...]
    output_perm: tuple[int, ...] | None
    workload: object
    """A :class:`Conv2dWorkload` (conv2d, dense, average pool), an ``AddWorkload`` (residual add) or a
    ``MaxPoolWorkload`` (int8 max pool)."""
    epilogue: Requantize | None
    input_buffer: str = "data"
    more_inputs: tuple[tuple[str, str], ...] = ()
    """Further (value, program buffer) inputs, after the first (a residual add's second operand)."""
    macs: int | None = None
    """Useful multiply-accumulates (None: the workload's; an add or a pool's identity GEMM does none)."""

    def describe(self) -> dict[str, object]:
        """The node's entry in the graph description (without its ``program`` member name)."""
        out: dict[str, object] = {
            "input": {"value": self.input_value, "buffer": self.input_buffer,
                      "perm": list(self.input_perm) if self.input_perm else None},
            "output": {"buffer": "out", "shape": list(self.output_shape),
                       "perm": list(self.output_perm) if self.output_perm else None},
            "macs": self.workload.macs if self.macs is None else self.macs}  # type: ignore[attr-defined]
        if getattr(self.workload, "depthwise", False):  # how it runs: the only VDLA form (docs/vdla_compiler.md)
            out["depthwise"] = "block_diagonal_gemm"
        if self.more_inputs:
            out["more_inputs"] = [{"value": v, "buffer": b, "perm": None} for v, b in self.more_inputs]
        return out


def compile_conv_workload(wl: Conv2dWorkload, target: VdlaTarget, epilogue: Requantize, virtual_threads: int,
                          name: str) -> CompiledConv:
    """Compile with the tuned knobs (when a tuning log has them: a tiling or a resident setting), else with the
    fastest default tiling or, for a 1x1 layer that fits SRAM whole, the resident template where it takes fewer cycles
    (``compile_default_conv``; ``default_knobs`` itself falls back to fewer virtual threads when the layer has too
    few tiles)."""
    tuned = dispatch.query("vdla_conv2d", wl.task_workload())
    if tuned is not None:
        # Tuned with the template's epilogue: the resident template may not take this one (a fused residual add), a
        # tiling may not fit with it (the add needs more room); then the default, and the dispatcher is told why.
        why = resident_error(wl, tuned, target, epilogue) if isinstance(tuned, ResidentKnobs) else \
            fits(target, wl, tuned, epilogue)
        if why is None:
            return compile_conv2d(wl, target, knobs=tuned, epilogue=epilogue)
        dispatch.declined("vdla_conv2d", wl.task_workload(), f"kernel {name!r} compiled its default instead: {why}")
    try:
        return compile_default_conv(wl, target, epilogue, virtual_threads)
    except UnsupportedError as exc:  # CapacityError included: no tiling of this layer fits the config
        raise NotLoweredError(f"kernel {name!r}: no VDLA schedule of {wl} fits: {exc}") from None


__all__ = ["VdlaKernel", "compile_conv_workload"]
