"""The conv micro-kernel as a target's default schedule builds it, for tests that read its machine code."""
from __future__ import annotations

from vdla.compiler import te, topi
from vdla.compiler.codegen.llvm import parse_target, using_target
from vdla.compiler.codegen.llvm.target import Target
from vdla.compiler.tir.pipeline import lower
from vdla.compiler.tir.stmt import PrimFunc


def default_conv(target: str, cin: int, cout: int, k: int, size: int,
                 name: str = "conv") -> tuple[PrimFunc, Target, topi.Conv2dNCHWcKnobs]:
    """A ``k`` x ``k`` stride-1 'same' conv of ``cin`` -> ``cout`` channels on a ``size`` x ``size`` plane in the
    NCHWc layout, lowered with ``target``'s default schedule: the PrimFunc ``name``, the parsed target and the
    default knobs."""
    tgt = parse_target(target)
    with using_target(tgt):
        lanes = tgt.vector_lanes()
        data = te.placeholder((1, cin // lanes, size, size, lanes), name="data")
        kernel = te.placeholder((cout // lanes, cin // lanes, k, k, lanes, lanes), name="kernel")
        out = topi.conv2d_nchwc(data, kernel, 1, (k - 1) // 2)
        knobs = topi.default_conv2d_nchwc_knobs(out)
        lowered = lower(topi.schedule_conv2d_nchwc(out), "llvm")
    return PrimFunc(name, (data.buffer, kernel.buffer, out.buffer), lowered.body, lowered.attrs), tgt, knobs
