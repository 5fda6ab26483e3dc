"""Operator entry points: compile a conv2d or dense layer for VDLA and check it against NumPy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError, UsageError

from ..build import VdlaModule, build
from ..target import VdlaTarget
from . import reference as ref
from .conv2d import conv2d_func
from .epilogue import Requantize, Residual
from .fit import default_knobs
from .resident_fit import default_resident, resident_space
from .resident import conv2d_resident
from .tiling import Conv2dKnobs, Conv2dWorkload, ResidentKnobs

RESNET18_CONVS: dict[str, Conv2dWorkload] = {
    "C2": Conv2dWorkload(1, 64, 56, 56, 64, 3, 3, 1, 1),
    "C3": Conv2dWorkload(1, 64, 56, 56, 64, 1, 1, 1, 0),
    "C4": Conv2dWorkload(1, 64, 56, 56, 128, 3, 3, 2, 1),
    "C5": Conv2dWorkload(1, 64, 56, 56, 128, 1, 1, 2, 0),
    "C6": Conv2dWorkload(1, 128, 28, 28, 128, 3, 3, 1, 1),
    "C7": Conv2dWorkload(1, 128, 28, 28, 256, 3, 3, 2, 1),
    "C8": Conv2dWorkload(1, 128, 28, 28, 256, 1, 1, 2, 0),
    "C9": Conv2dWorkload(1, 256, 14, 14, 256, 3, 3, 1, 1),
    "C10": Conv2dWorkload(1, 256, 14, 14, 512, 3, 3, 2, 1),
    "C11": Conv2dWorkload(1, 256, 14, 14, 512, 1, 1, 2, 0),
    "C12": Conv2dWorkload(1, 512, 7, 7, 512, 3, 3, 1, 1),
}
"""ResNet-18's conv layers C2-C12 at batch 1 (C1, 3 input channels, is left to the CPU by the graph compiler)."""
RESNET18_C1 = Conv2dWorkload(1, 3, 224, 224, 64, 7, 7, 2, 3)
"""ResNet-18's first conv: its 3 input channels compile zero-padded to BLOCK_IN (``pad_channels``)."""


def resnet18_layer(name: str) -> Conv2dWorkload:
    """ResNet-18's conv layer ``C1`` .. ``C12``."""
    layers = {"C1": RESNET18_C1, **RESNET18_CONVS}
    if name not in layers:
        raise UsageError(f"ResNet-18 has no conv layer {name!r}", hint=f"choose one of {', '.join(layers)}")
    return layers[name]


def dense_workload(batch: int, in_features: int, out_features: int) -> Conv2dWorkload:
    """Dense as a 1x1 conv whose rows are the batch: data (1, K/BI, M, 1, 1, BI) with BATCH = 1."""
    return Conv2dWorkload(1, in_features, batch, 1, out_features, 1, 1, 1, 0)


def batch_matmul_workload(batch: int, rows: int, inner: int, cols: int) -> Conv2dWorkload:
    """``A (batch, rows, inner) @ B (batch, inner, cols)`` -- attention's Q.K^T or A.V over heads -- as
    ``batch`` dense layers with per-image weights: data ``(batch, K/BI, rows, 1, 1, BI)``, weights
    ``(batch, N/BO, K/BI, 1, 1, BO, BI)`` (``B`` transposed, an activation bound per call), BATCH = 1."""
    return Conv2dWorkload(batch, inner, rows, 1, cols, 1, 1, 1, 0, batched_weights=True)


@dataclass(frozen=True)
class CompiledConv:
    workload: Conv2dWorkload
    knobs: Conv2dKnobs | ResidentKnobs
    """The tiled template's knobs, or the resident 1x1 template's (``resident.py``)."""
    epilogue: Requantize
    module: VdlaModule
    padded: bool = False
    """Compiled with the input channels zero-padded to BLOCK_IN (``workload`` is the unpadded layer)."""

    def pack_inputs(self, data: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None,
                    multiplier: np.ndarray | None = None, skip: np.ndarray | None = None) -> list[np.ndarray]:
        """NCHW data, OIHW kernel, bias, per-channel multiplier and (with a fused residual add) the NCHW
        skip operand as the module's packed inputs (input channels zero-padded when the layer was compiled
        with ``pad_channels``)."""
        cfg = self.module.target.config
        extra = self.workload.with_padded_channels(cfg).ic - data.shape[1] if self.padded else 0
        dw = self.workload.depthwise
        if extra:
            data = np.pad(data, ((0, 0), (0, extra), (0, 0), (0, 0)))
            grow = ((0, extra), (0, 0), (0, 0), (0, 0)) if dw else ((0, 0), (0, extra), (0, 0), (0, 0))
            kernel = np.pad(kernel, ((0, 0),) * (kernel.ndim - 4) + grow)
            if dw:  # extra channels are extra groups: their bias and multiplier are zero
                bias = None if bias is None else np.pad(bias, (0, extra))
                multiplier = None if multiplier is None else np.pad(multiplier, (0, extra))
        pack = ref.pack_depthwise_kernel if dw else ref.pack_kernel
        if self.workload.batched_weights:  # (N, O, I, KH, KW): one packed kernel per image
            packed = np.stack([pack(cfg, k) for k in kernel])
        else:
            packed = pack(cfg, kernel)
        args = [ref.pack_data(cfg, data), packed]
        if self.epilogue.bias:
            args.append(ref.pack_bias(cfg, bias if bias is not None else np.zeros(kernel.shape[0], np.int32)))
        if self.epilogue.multiplier:
            if multiplier is None:
                raise ValueError("this layer was compiled with a per-channel multiplier: pass `multiplier`")
            args.append(ref.pack_bias(cfg, multiplier))  # one int32 per output channel, the bias's layout
        if self.epilogue.residual is not None:
            if skip is None:
                raise ValueError("this layer was compiled with a fused residual add: pass `skip`")
            args.extend([ref.pack_data(cfg, skip), *residual_constants(cfg, self.epilogue.residual)])
        return args

    def run_nchw(self, data: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None, backend: str = "fsim",
                 multiplier: np.ndarray | None = None, skip: np.ndarray | None = None,
                 **options: object) -> tuple[np.ndarray, object]:
        """Run on NCHW int8 data / OIHW kernel; returns the NCHW int8 output and the run result."""
        outs, result = self.module.run(*self.pack_inputs(data, kernel, bias, multiplier, skip), backend=backend,
                                       **options)
        return ref.unpack_output(outs["out"])[:, :self.workload.oc], result


def residual_constants(cfg: HwConfig, r: Residual) -> list[np.ndarray]:
    """The DRAM inputs a fused residual add adds after the conv's: the identity weight tile and, when it has
    multipliers or a rounding term, its resident ``m_a, m_b, round`` tiles."""
    eye = np.eye(cfg.block_out, cfg.block_in, dtype=np.int8).reshape(1, 1, 1, 1, cfg.block_out, cfg.block_in)
    if not r.consts:
        return [eye]
    consts = np.empty((3, cfg.batch, cfg.block_out), np.int32)
    for k, v in enumerate((*(r.mult or (0, 0)), r.round)):
        consts[k] = v
    return [eye, consts]


def compile_conv2d(wl: Conv2dWorkload, target: VdlaTarget | str = "default", knobs: Conv2dKnobs | ResidentKnobs | None = None,
                   epilogue: Requantize = Requantize(shift=8), virtual_threads: int = 2, dump=None,  # type: ignore[no-untyped-def]
                   pad_channels: bool = False) -> CompiledConv:
    """Schedule, lower and generate the program of one conv2d layer (knobs default to the fastest that fit,
    with up to ``virtual_threads`` threads).  ``pad_channels`` compiles a layer whose input channels are
    not a multiple of BLOCK_IN with zero channels added (``CompiledConv.pack_inputs`` adds them).
    :class:`ResidentKnobs` compile a 1x1 layer with the two-phase resident template instead of the tiled one."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    hw = wl.with_padded_channels(tgt.config) if pad_channels else wl
    if isinstance(knobs, ResidentKnobs):
        return CompiledConv(wl, knobs, epilogue, conv2d_resident(hw, knobs, tgt, epilogue), hw is not wl)
    k = knobs or default_knobs(hw, tgt, virtual_threads, epilogue)
    func = conv2d_func(hw, k, tgt, epilogue, dump=None if dump is None else lambda step, f: dump(f"schedule: {step}", f))
    return CompiledConv(wl, k, epilogue, build(func, tgt, dump), hw is not wl)


def compile_default_conv(wl: Conv2dWorkload, target: VdlaTarget | str = "default", epilogue: Requantize = Requantize(shift=8),
                         virtual_threads: int = 2) -> CompiledConv:
    """What a layer compiles to without a tuning log: the default tiling (``default_knobs``), or the resident 1x1
    template's setting of ``resident_fit.default_resident`` when the layer fits resident and that program takes fewer
    cycle-model cycles than the tiling's.

    The rule runs both programs (unbound: the cycle model's timing does not depend on the data) only for a 1x1 layer
    the resident template takes: whole (under half a second each on C11, ``bench/vdla_resident_rule.py`` times it)
    or, for one that does not fit SRAM whole, in the one row-tile setting of ``resident_fit.default_row_tiles`` (C3,
    C5, C8: one more compile and cycle-model run per such layer, timed by the same bench).  The analytic estimates
    (``estimate_cycles`` + ``tiling_edges`` against ``estimate_resident_cycles``) pick wrongly on a bus-bound layer
    (docs/vdla_compiler.md), so they only rank the tuner's candidates.  One virtual thread keeps the tiling (what was
    asked for); a tie keeps the tiling."""
    from vdla.runtime.backends import run

    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    resident = default_resident(wl, tgt, epilogue) if virtual_threads >= 2 else None
    try:
        tiled = compile_conv2d(wl, tgt, epilogue=epilogue, virtual_threads=virtual_threads)
    except UnsupportedError:  # no tiling fits (CapacityError included): the resident setting, if one does
        if resident is None:
            raise
        return compile_conv2d(wl, tgt, knobs=resident, epilogue=epilogue)
    if resident is None:
        return tiled
    other = compile_conv2d(wl, tgt, knobs=resident, epilogue=epilogue)
    if run(other.module.program, backend="cycle").cycles < run(tiled.module.program, backend="cycle").cycles:
        return other
    return tiled


def random_conv_data(wl: Conv2dWorkload, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded int8 data (NCHW), int8 kernel (OIHW; ``(C, 1, KH, KW)`` when depthwise; one per image,
    ``(N, O, I, KH, KW)``, with ``batched_weights``) and int32 bias for ``wl``."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, (wl.n, wl.ic, wl.h, wl.w)).astype(np.int8)
    per_image = (wl.n,) if wl.batched_weights else ()
    kernel = rng.integers(-128, 128, per_image + (wl.oc, 1 if wl.depthwise else wl.ic, wl.kh, wl.kw)).astype(np.int8)
    bias = rng.integers(-(1 << 14), 1 << 14, wl.oc).astype(np.int32)
    return data, kernel, bias


def requant_shift(wl: Conv2dWorkload) -> int:
    """A shift that spreads the accumulators of random int8 data over the int8 output range."""
    spread = np.sqrt((1 if wl.depthwise else wl.ic) * wl.kh * wl.kw) * 128 * 128 / 3
    return max(0, int(round(np.log2(spread))) - 6)


def check_conv2d(compiled: CompiledConv, seed: int = 0, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
    """Run ``compiled`` on seeded data and compare bit-exactly with NumPy; returns (equal, result, got, expected)."""
    wl, ep = compiled.workload, compiled.epilogue
    data, kernel, bias = random_conv_data(wl, seed)
    # Multipliers up to 2**9 make some products wrap the int32 accumulator: the wrap is checked too.
    mult = np.random.default_rng(seed + 1).integers(1, 1 << 9, wl.oc).astype(np.int32) if ep.multiplier else None
    got, result = compiled.run_nchw(data, kernel, bias if ep.bias else None, backend, mult, **options)
    cfg = compiled.module.target.config
    reference = ref.depthwise_reference if wl.depthwise else ref.conv2d_reference
    args = (bias if ep.bias else None, wl.stride, wl.pad, ep.shift, ep.relu, cfg.out_width, cfg.acc_width, mult)
    if wl.batched_weights:  # each image with its own weights
        want = np.concatenate([reference(data[i:i + 1], kernel[i], *args) for i in range(wl.n)])
    else:
        want = reference(data, kernel, *args)
    return bool(np.array_equal(got, want)), result, got, want


def tune_conv2d(wl: Conv2dWorkload, target: VdlaTarget | str = "default", virtual_threads: int = 2,
                candidates: int = 6, epilogue: Requantize | None = None, progress: bool = False,
                resident: bool = True) -> CompiledConv:
    """Measure the ``candidates`` best knob settings of the cost model on the cycle model; keep the fastest.

    A minimal measurement-driven search over :func:`knob_space` (the auto-tuner's hook);
    every candidate is checked bit-exactly against NumPy before its time counts.  ``candidates <= 0``
    measures the whole space: the cost model (:func:`estimate_cycles`) has no startup or drain term, so
    only measuring every tiling ranks them by what the edges cost (a 1x1 ResNet-18 layer's space, 95-168
    tilings, takes ~1 min on the cycle model).  Equal cycles keep the cost model's order.  ``progress``
    shows a tqdm bar over the candidates.  With ``resident`` (and ``virtual_threads`` >= 2, the overlap the
    resident template provides by itself), the settings of the two-phase resident 1x1 template that fit
    (:func:`~vdla.compiler.vdla.topi.resident_fit.resident_space`: whole-layer settings, or row tiles for a 1x1 layer
    that does not fit SRAM whole; none for other layers) are measured too, after the tilings; a tiling wins a tie.
    """
    from .fit import knob_space
    from .tiling import estimate_cycles

    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    ep = epilogue or Requantize(shift=requant_shift(wl))
    space = sorted(knob_space(wl, tgt, (virtual_threads,), ep), key=lambda k: estimate_cycles(wl, k, tgt.config, ep))
    chosen: list[Conv2dKnobs | ResidentKnobs] = list(space if candidates <= 0 else space[:candidates])
    if resident and virtual_threads >= 2:
        chosen += resident_space(wl, tgt, ep)
    if progress:
        from tqdm import tqdm
        chosen = tqdm(chosen, desc=f"tune {wl.ic}->{wl.oc} {wl.kh}x{wl.kw}", unit="tiling", leave=False)
    best: tuple[int, CompiledConv] | None = None
    for knobs in chosen:
        compiled = compile_conv2d(wl, tgt, knobs=knobs, epilogue=ep)
        ok, result, _, _ = check_conv2d(compiled, backend="cycle")
        if ok and (best is None or result.cycles < best[0]):
            best = (result.cycles, compiled)
    if best is None:
        raise ValueError(f"no candidate schedule of {wl} ran bit-exactly")
    return best[1]
