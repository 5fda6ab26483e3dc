"""The main demo: a ResNet-18 convolution compiled for VDLA, timed on the cycle model with and
without latency hiding, checked bit-exactly against NumPy, with a Gantt chart of both runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vdla.simulator.cycle import run_cycle
from vdla.simulator.cycle.plot import plot_gantt

from .target import VdlaTarget
from .topi import RESNET18_CONVS, Requantize, check_conv2d, compile_conv2d, requant_shift


@dataclass(frozen=True)
class DemoRun:
    virtual_threads: int
    instructions: int
    cycles: int
    gemm_utilization: float
    roofline_fraction: float
    bit_exact: bool
    knobs: str


def run_demo(layer: str = "C10", config: str = "default", seed: int = 0, plot: str | Path | None = "vdla_demo.png",
             save: str | Path | None = None, echo=print) -> list[DemoRun]:  # type: ignore[no-untyped-def]
    """Compile ``layer`` with 1 and 2 virtual threads, run both on the cycle model and report."""
    if layer not in RESNET18_CONVS:
        raise ValueError(f"unknown layer {layer!r}; choose one of {', '.join(RESNET18_CONVS)}")
    target = VdlaTarget.from_config(config)
    wl = RESNET18_CONVS[layer]
    echo(f"VDLA demo: ResNet-18 {layer} {wl.h}x{wl.w} {wl.ic}->{wl.oc} k{wl.kh} s{wl.stride} p{wl.pad}, int8 + bias, "
         f"ReLU, requantize; config {target.config.name!r} ({target.config.clock_mhz:g} MHz, "
         f"peak {target.config.peak_gops:.1f} GOPS)")
    runs, timelines = [], []
    for vt in (1, 2):
        compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=requant_shift(wl)), virtual_threads=vt)
        ok, result, _, _ = check_conv2d(compiled, seed=seed, backend="fsim")
        program = compiled.module.bind(*_inputs(compiled, seed))
        timed = run_cycle(target.config, program.instructions, program.dram, insn_addr=program.insn_addr,
                          timeline=plot is not None)
        st = timed.stats
        if save is not None and vt == 2:
            program.save(save)
        runs.append(DemoRun(vt, program.insn_count, st.cycles, st.gemm_utilization, st.roofline_fraction, ok,
                            str(compiled.knobs)))
        if timed.timeline is not None:
            timelines.append((f"{layer}, {vt} virtual thread(s): {st.cycles:,} cycles, GEMM utilization "
                              f"{st.gemm_utilization:.1%}", timed.timeline))
        echo(f"  {vt} virtual thread(s): {program.insn_count} instructions, {st.cycles:,} cycles "
             f"({st.seconds * 1e3:.2f} ms), GEMM utilization {st.gemm_utilization:.1%}, "
             f"{st.roofline_fraction:.1%} of the roofline bound -- {'bit-exact vs NumPy' if ok else 'MISMATCH vs NumPy'}")
    echo(f"  latency hiding: {runs[0].cycles / runs[1].cycles:.2f}x fewer cycles with 2 virtual threads")
    if plot is not None:
        echo(f"  timeline: {plot_gantt(timelines, plot)}")
    if save is not None:
        echo(f"  saved the 2-thread program to {save} (run: vdla sim {save} --backend cycle)")
    return runs


def _inputs(compiled, seed: int):  # type: ignore[no-untyped-def]
    from .topi.ops import random_conv_data
    return compiled.pack_inputs(*random_conv_data(compiled.workload, seed))
