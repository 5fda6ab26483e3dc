"""VDLA average pooling (global or windowed) as the conv2d schedule with identity weight tiles.

A packed activation ``(N/B, C/BI, H, W, B, BI)`` is, byte for byte, a batch of ``N*C/BI`` images of
BI channels each, so the window sums of an average pool are the conv2d of that batch (``ic = oc =
BI``) with one BLOCK_OUT x BLOCK_IN identity tile per window tap: the GEMM core adds the taps into
int32 accumulators.  The divide by the window size ``K`` is the conv epilogue's fixed-point
requantization: ``((sum + round) * mult) >> shift`` with ``mult * 2**-shift ~= 1/K`` (an ALU ADD
of the resident rounding tile, an ALU MUL by the resident multiplier tile, the STORE's shift and
clip).  Zero padding is counted in the divisor (``count_include_pad``).

This wastes BLOCK_IN x the useful MACs of a depthwise sum on the GEMM core, but a pool is a tiny
fraction of a network's work and the schedule, its tiling and its tuning are the conv2d's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from vdla_hw.errors import UnsupportedError

from ..target import VdlaTarget
from .epilogue import Requantize
from .ops import CompiledConv, compile_conv2d
from .reference import pack_bias
from .tiling import Conv2dWorkload


@dataclass(frozen=True)
class AvgPoolWorkload:
    """An average pool of a packed int8 ``(N, C, H, W)`` tensor: ``kh x kw`` windows, one stride and
    one padding for both axes, and the fixed-point divide ``((sum + round) * mult) >> shift``."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    mult: int = 1
    round: int = 0
    shift: int = 0

    def conv(self, block: int, batch: int) -> Conv2dWorkload:
        """The conv2d computing the window sums (channel blocks as images)."""
        return Conv2dWorkload(self.n * self.c // block, block, self.h, self.w, block, self.kh, self.kw,
                              self.stride, self.pad)


def compile_avg_pool(wl: AvgPoolWorkload, target: VdlaTarget | str = "default", virtual_threads: int = 2,
                     compile_conv=None) -> CompiledAvgPool:  # type: ignore[no-untyped-def]
    """Compile ``wl``; ``compile_conv(conv_wl, target, epilogue)`` overrides the conv2d compile step (the graph
    compiler passes one that uses tuned knobs)."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    cfg = tgt.config
    if cfg.block_in != cfg.block_out:
        raise UnsupportedError(f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: an "
                               f"identity weight tile needs them equal")
    if wl.c % cfg.block_in or wl.n % cfg.batch:
        raise UnsupportedError(f"average pool of {wl.n}x{wl.c} does not tile into BATCH={cfg.batch}, "
                               f"BLOCK_IN={cfg.block_in}", hint="pad the channels to a multiple of the block")
    conv = wl.conv(cfg.block_in, cfg.batch)
    epilogue = Requantize(shift=wl.shift, relu=False, bias=True, multiplier=True)
    if compile_conv is not None:
        compiled = compile_conv(conv, tgt, epilogue)
    else:
        compiled = compile_conv2d(conv, tgt, epilogue=epilogue, virtual_threads=virtual_threads)
    return CompiledAvgPool(wl, compiled)


@dataclass(frozen=True)
class CompiledAvgPool:
    workload: AvgPoolWorkload
    compiled: CompiledConv

    def constants(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The identity weight tiles (one per tap), the rounding tile and the multiplier tile."""
        cfg = self.compiled.module.target.config
        wl, bi, bo = self.workload, cfg.block_in, cfg.block_out
        eye = np.zeros((1, 1, wl.kh, wl.kw, bo, bi), np.int8)
        eye[..., np.arange(bi), np.arange(bi)] = 1
        return (eye, pack_bias(cfg, np.full(bo, wl.round, np.int32)), pack_bias(cfg, np.full(bo, wl.mult, np.int32)))

    def bind(self, data: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The program with the constants (and the packed input, when given) in DRAM."""
        shape = self.compiled.module.params[0].shape
        x = np.zeros(shape, np.int8) if data is None else data.reshape(shape)
        return self.compiled.module.bind(x, *self.constants())

    def run_packed(self, data: np.ndarray, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
        """Run on a packed ``(N/B, C/BI, H, W, B, BI)`` input; returns the packed output and the run result."""
        cfg = self.compiled.module.target.config
        outs, result = self.compiled.module.run(data.reshape(self.compiled.module.params[0].shape), *self.constants(),
                                                backend=backend, **options)
        nb, cb = data.shape[:2]
        y = outs["out"]
        return y.reshape((nb, cb) + y.shape[2:4] + (cfg.batch, cfg.block_out)), result


def avg_pool_reference(data: np.ndarray, wl: AvgPoolWorkload, layout: str = "NCHW") -> np.ndarray:
    """NumPy: the graph operator ``qavg_pool2d``'s reference on an int8 array in ``layout``."""
    from vdla.compiler.graph.ops.qnn import qavg_pool_reference

    p = wl.pad
    return qavg_pool_reference([data], {"pool_size": (wl.kh, wl.kw), "strides": (wl.stride, wl.stride),
                                        "padding": (p, p, p, p), "layout": layout, "mult": wl.mult,
                                        "round": wl.round, "shift": wl.shift})
