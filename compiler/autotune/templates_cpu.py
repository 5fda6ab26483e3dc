"""CPU templates over topi's x86 schedules: blocked conv2d (NCHWc), depthwise conv2d (NCHW and NCHWc), packed dense.

The register budget of the column block comes from the task's target ISA (32 vector registers
with AVX-512, 16 with AVX2), not from the host's.  Measurement runs the shared library the
builder wrote, single-threaded, on seeded inputs, and checks the output against NumPy.  A conv task
with an epilogue (``Task.epilogue``: bias, residual add, ReLU, clip) is built, checked and timed as
the model's node runs it: the chain computed inside the register tile (the schedules' ``epilogue=``),
a residual operand rewritten before each timed call like the conv's input.

Because every config is timed on one thread, whether a kernel runs its outer loop in parallel is
not a knob (on one thread it cannot be measured, so a tuned value would be noise): every config
keeps the schedule's own choice (the knob dataclass's ``parallel=True`` and topi's size
heuristics), and the knobs a log gives run on all threads like the defaults.  Logs written while
``parallel`` was a knob still apply: :meth:`ConfigSpace.from_dict` ignores the stale key.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from vdla.compiler import te, topi
from vdla.compiler.codegen.llvm import Target, codegen, export_library, parse_target, using_target
from vdla.compiler.schedule import Schedule
from vdla.compiler.tir.pipeline import lower
from vdla.compiler.tir.stmt import PrimFunc

from .conv_cost import ConvShape, TileKnobs, direct_cycles, winograd_cycles
from .epilogue import apply_epilogue, epilogue_stage, parse_epilogue
from .space import Axis, Config, ConfigSpace, divisors
from .template import RunOutcome, Template

_RTOL = 1e-4


#: Vector registers of a register file narrow enough for the conv space's ``tile_order`` axis (AVX2's 16 ymm).
_NARROW_REGISTER_FILE = 16


def task_isa(target_key: str) -> str:
    """The ISA recorded in a CPU task's target key (``llvm -mcpu=X (isa)``)."""
    return target_key.rsplit("(", 1)[-1].rstrip(")")


class CpuTemplate(Template):
    """Shared build and run of the CPU templates: placeholders from the workload, topi compute + schedule."""

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        """The operator's inputs and output, in the function's parameter order."""
        raise NotImplementedError

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        raise NotImplementedError

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The bare operator's float64 result on its :meth:`tensors` inputs."""
        raise NotImplementedError

    @property
    def epilogue_ops(self) -> tuple[str, ...]:
        """The task's epilogue as operations (``()``: the bare kernel)."""
        return parse_epilogue(self.task.epilogue, self.task.kind)

    @property
    def produced_inputs(self) -> int:
        """How many leading parameters of the built function are activations: the kernel's
        (:attr:`activation_inputs`) and the epilogue's residual operand, if any."""
        return self.activation_inputs + ("add" in self.epilogue_ops)

    def with_epilogue(self, ins: list[te.Tensor], out: te.Tensor) -> tuple[list[te.Tensor], te.Tensor]:
        """The built function's inputs in parameter order and its output: ``out`` through the task's epilogue
        (activations first, the residual after the kernel's; weights after them, the bias last)."""
        acts, weights, stage = epilogue_stage(out, self.epilogue_ops)
        k = self.activation_inputs
        return ins[:k] + acts + ins[k:] + weights, stage

    def fused_reference(self, raw: list[np.ndarray]) -> np.ndarray:
        """The float64 result of the built function on its inputs ``raw`` (:meth:`inputs`): the bare
        :meth:`reference`, then the epilogue (:func:`~vdla.compiler.autotune.epilogue.apply_epilogue`)."""
        ops = self.epilogue_ops
        k, r, b = self.activation_inputs, int("add" in ops), int("bias" in ops)
        y = self.reference(raw[:k] + raw[k + r:len(raw) - b])
        return apply_epilogue(y, ops, raw[k] if r else None, raw[-1] if b else None) if ops else y

    @property
    def isa(self) -> str:
        return task_isa(self.task.target)

    @property
    def lanes(self) -> int:
        """fp32 lanes of one vector register of the task's target (8 on AVX2, 4 on NEON)."""
        return self.target.vector_lanes(32)

    @property
    def registers(self) -> int:
        """Vector registers of the task's target (32 on AVX-512 and AArch64, 16 on AVX2 and ARMv7)."""
        return self.target.vector_registers

    @property
    def target(self) -> Target:
        """The CPU the task compiles for (its defaults and schedules are sized for it, not the host)."""
        return parse_target(self.task.target.rsplit(" (", 1)[0])

    def default(self) -> Config:
        with using_target(self.target):
            return self.target_default()

    def target_default(self) -> Config:
        """:meth:`default`, called with the task's target current."""
        raise NotImplementedError

    def program(self, config: Config) -> PrimFunc:
        with using_target(self.target):
            return self.schedule(config)[0].func

    def build(self, config: Config, directory: Path) -> Path:
        with using_target(self.target):
            s, args = self.schedule(config)
            lowered = lower(s, "llvm")
        params = tuple(t.buffer for t in args)
        func = PrimFunc(self.function_name(config), params, lowered.body, lowered.attrs)
        module = codegen([func], self.target, name=self.kind)
        return Path(export_library(module, directory / f"{self.kind}.so"))

    def function_name(self, config: Config) -> str:
        """The name of the artifact's function: it tells :meth:`run` (which has only the artifact's
        bytes) how to call it."""
        return self.kind

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Seeded inputs of the built function, in its parameter order (:meth:`with_epilogue`)."""
        rng = np.random.default_rng(seed)
        ins, _ = self.with_epilogue(*self.tensors())
        return [rng.standard_normal(tuple(int(s.value) for s in t.shape)).astype(np.float32) for t in ins]

    def run(self, artifact: Path, check: bool, repeats: int, warmup: int, flush_bytes: int,
            cache: str = "model") -> RunOutcome:
        return self.run_operands(artifact, check, repeats, warmup, flush_bytes, lambda ins: ins, cache)

    #: How many leading inputs of the bare operator are activations (written by the node before in the model);
    #: the rest are weights.  Timing rewrites the activations, and an epilogue's residual operand, before each
    #: call (:attr:`produced_inputs`, :func:`~vdla.compiler.autotune.measure.time_cpu`).
    activation_inputs = 1

    def run_operands(self, artifact: Path, check: bool, repeats: int, warmup: int, flush_bytes: int,
                     operands: Callable[[list[np.ndarray]], list[np.ndarray]], cache: str = "model") -> RunOutcome:
        """:meth:`run` on ``operands(inputs)`` (the kernel's own form of the inputs, e.g. transformed
        weights), checked against the reference of the inputs."""
        from vdla.runtime.cpu_module import aligned_copy, aligned_zeros, load_module

        from .measure import time_cpu

        module = load_module(artifact)
        module.set_num_threads(1)
        fn = module[module.entry_name]
        # Aligned as the graph runtime's buffers are: a misaligned operand costs a config up to 10%.
        raw = self.inputs()
        ins = [aligned_copy(a) for a in operands(raw)]
        _, out_t = self.tensors()
        out = aligned_zeros(tuple(int(s.value) for s in out_t.shape), np.float32)
        fn(*ins, out)
        detail, correct = "", True
        if check:
            want = self.fused_reference(raw)
            scale = max(1.0, float(np.abs(want).max()))
            err = float(np.abs(out - want).max()) / scale
            correct = err <= _RTOL * 10
            detail = f"max relative error {err:.2e}"
        argv = fn.pack((*ins, out))
        costs = time_cpu(lambda: fn.call_unchecked(argv), repeats, warmup, flush_bytes,
                         produced=ins[:self.produced_inputs], cache=cache)
        return RunOutcome(tuple(costs), correct, detail)


def _conv_nchw(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], pad: tuple[int, int],
               groups: int = 1) -> np.ndarray:
    """Float64 NCHW x OIHW convolution (grouped when ``groups`` > 1)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    kh, kw = w.shape[2:]
    win = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride[0], ::stride[1]]
    if groups == 1:
        return np.einsum("ncyxij,ocij->noyx", win, w.astype(np.float64))
    return np.einsum("ncyxij,cij->ncyx", win, w[:, 0].astype(np.float64))


#: A Winograd config's ``reduce_at`` names where its GEMM runs (``WinogradKnobs.gemm_at``): per row of
#: tiles (``tile``, what logs written before the plane GEMM hold) or over the whole plane.
_WINOGRAD_GEMM_AT = {"tile": "row", "plane": "plane"}
_WINOGRAD_REDUCE_AT = {v: k for k, v in _WINOGRAD_GEMM_AT.items()}


class Conv2dNCHWcTemplate(CpuTemplate):
    """topi's blocked conv2d micro-kernel: register tile (columns, rows, channel blocks), kernel-width
    unroll, loop orders, and where the input channels are reduced (per tile, row or plane)."""

    kind = "conv2d_nchwc"

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        data = te.placeholder((w["n"], w["ic_outer"], w["h"], w["w"], w["ic_block"]), "float32", "data")
        kernel = te.placeholder((w["oc_outer"], w["ic_outer"], w["kh"], w["kw"], w["ic_block"], w["oc_block"]),
                                "float32", "kernel")
        out = topi.conv2d_nchwc(data, kernel, (w["stride_h"], w["stride_w"]), (w["pad_h"], w["pad_w"]))
        return [data, kernel], out

    @property
    def out_width(self) -> int:
        w = self.task.wl
        return (w["w"] + 2 * w["pad_w"] - w["kw"]) // w["stride_w"] + 1

    @property
    def out_height(self) -> int:
        w = self.task.wl
        return (w["h"] + 2 * w["pad_h"] - w["kh"]) // w["stride_h"] + 1

    def make_space(self) -> ConfigSpace:
        vectors = -(-self.task.wl["oc_block"] // self.lanes)
        registers = self.registers
        budget = max(registers // vectors, int(self.default()["ow_block"]))

        def legal(c: Config) -> None:
            # A tile holds its accumulators and, by its loop order, its oc_block weight vectors and one
            # broadcast input, or a broadcast input per column and one block's weights, in registers
            # (topi.tile_registers); more spills (4x7 on AVX-512: 2x slower).  A one-channel-block, one-row
            # tile in the columns order folds each broadcast into its FMA and is bounded by the axis.
            rows, columns, blocks = int(c["oh_block"]), int(c["ow_block"]), int(c["oc_block"])
            knobs = self.knobs(c)
            live = topi.tile_registers(knobs, vectors)  # type: ignore[arg-type]
            if (blocks > 1 or rows > 1 or c["tile_order"] != "columns") and live > registers:
                raise ValueError(f"a {rows}x{columns}x{blocks} (rows x columns x channel blocks) register tile "
                                 f"of {vectors}-register columns in the {c['tile_order']} order needs {live} "
                                 f"registers (accumulators, weights, inputs); the target has {registers} vector "
                                 f"registers")
            knobs.validate(self.out_width, self.task.wl["oc_outer"], self.out_height)
            if c["reduce_at"] == "row" and columns == self.out_width and rows == 1:
                raise ValueError("reduce_at 'row' with a one-tile row is reduce_at 'tile' with an extra buffer")

        algorithms = ("direct",) + tuple(f"winograd_{m}" for m in self.winograd_tiles)

        def legal_any(c: Config) -> None:
            if c["algorithm"] == "direct":
                legal(c)
                return
            # A Winograd config uses ow_block and oh_block (tiles of a row and rows of tiles per
            # register tile), oc_block, and reduce_at for where its GEMM runs ("tile": per row of
            # tiles, "plane": over the whole plane, WinogradKnobs.gemm_at); every other knob stays at
            # its first value, so each Winograd schedule is one point of the space.
            fixed = {"unroll_kw": False, "reduce_order": "ic_kh_kw", "outer_order": "oc_y", "tile_order": "columns"}
            moved = [k for k, v in fixed.items() if c[k] != v]
            if moved:
                raise ValueError(f"knobs {moved} are the direct conv's; a Winograd config leaves them at "
                                 f"{ {k: fixed[k] for k in moved} }")
            if c["reduce_at"] not in _WINOGRAD_GEMM_AT:
                raise ValueError(f"a Winograd config's reduce_at is one of {tuple(_WINOGRAD_GEMM_AT)} (its GEMM "
                                 f"per row of tiles or over the plane), not {c['reduce_at']!r}")
            tile = self.winograd_tile(c)
            tiles_x, tiles_y = -(-self.out_width // tile), -(-self.out_height // tile)
            rows, blocks = int(c["oh_block"]), int(c["oc_block"])
            live = rows * int(c["ow_block"]) * blocks * vectors + blocks * vectors + 1
            if live > registers:
                raise ValueError(f"a {rows}-row x {c['ow_block']}-tile x {blocks}-block GEMM register tile needs "
                                 f"{live} registers; the target has {registers}")
            self.knobs(c).validate(tiles_x, self.task.wl["oc_outer"], tiles_y)

        return ConfigSpace((
            # Winograd F(m x m, 3 x 3) for stride-1 3x3 convs (absent from logs written before it: direct).
            Axis("algorithm", algorithms, absent="direct"),
            # Widths that do not divide the row too: its last tile is partitioned off, narrower.
            Axis("ow_block", tuple(range(1, min(budget, self.out_width) + 1))),
            Axis("oc_block", divisors(self.task.wl["oc_outer"], 4)),
            # Up to 4 rows, or as many as the target's default takes (AVX2's 1-column tiles of a narrow plane
            # stack 6 rows): the default is always a point of the space.
            Axis("oh_block", tuple(range(1, min(max(4, int(self.target_default()["oh_block"])), self.out_height) + 1)),
                 absent=1),
            Axis("unroll_kw", (False, True)),
            Axis("reduce_order", ("ic_kh_kw", "kh_kw_ic")),
            Axis("outer_order", ("oc_y", "y_oc")),
            Axis("reduce_at", ("tile", "row", "plane"), absent="tile"),
            # The register tile's loop order (topi.Conv2dNCHWcKnobs.tile_order; logs before it: columns), with
            # 16 vector registers, where the columns order's weight vectors crowd out accumulators (AVX2's
            # default 3 x 4 tile).  With 32 (AVX-512, AArch64) the channels order was not measured, and the axis
            # would double the biggest spaces past the xgb tuner's prior scan (65,536 configs).
            Axis("tile_order", ("columns", "channels") if registers <= _NARROW_REGISTER_FILE else ("columns",),
                 absent="columns"),
        ), legal_any)

    @property
    def winograd_tiles(self) -> tuple[int, ...]:
        """The Winograd output tiles this conv may take (none unless it is a stride-1 3x3 conv)."""
        w = self.task.wl
        if not topi.winograd_eligible((w["kh"], w["kw"]), (w["stride_h"], w["stride_w"])):
            return ()
        return tuple(m for m in topi.TUNED_TILES if m <= max(self.out_width, self.out_height))

    @staticmethod
    def winograd_tile(config: Config) -> int:
        """The output tile of a Winograd config (0 for the direct conv)."""
        algorithm = str(config["algorithm"])
        return 0 if algorithm == "direct" else int(algorithm.rsplit("_", 1)[1])

    def winograd_tensors(self, tile: int) -> tuple[list[te.Tensor], te.Tensor]:
        """The Winograd conv of this workload: data and transformed weights in, the same output."""
        w = self.task.wl
        (data, _), _ = self.tensors()
        a = tile + 2
        u = te.placeholder((a * a, w["oc_outer"], w["ic_outer"], w["ic_block"], w["oc_block"]), "float32", "u")
        return [data, u], topi.conv2d_winograd_nchwc(data, u, tile, (w["pad_h"], w["pad_w"]))

    def target_default(self) -> Config:
        from vdla.compiler.graph.lower_llvm_nn import default_conv_tile

        tile = default_conv_tile(self.task.wl)
        if tile:
            wk = topi.default_winograd_knobs(self.winograd_tensors(tile)[1])
            return Config((("algorithm", f"winograd_{tile}"), ("ow_block", wk.tx_block), ("oc_block", wk.oc_block),
                           ("oh_block", wk.ty_block), ("unroll_kw", False), ("reduce_order", "ic_kh_kw"),
                           ("outer_order", "oc_y"), ("reduce_at", _WINOGRAD_REDUCE_AT[wk.gemm_at]),
                           ("tile_order", "columns")))
        k = topi.default_conv2d_nchwc_knobs(self.tensors()[1])
        return Config((("algorithm", "direct"), ("ow_block", k.ow_block), ("oc_block", k.oc_block),
                       ("oh_block", k.oh_block), ("unroll_kw", k.unroll_kw), ("reduce_order", k.reduce_order),
                       ("outer_order", k.outer_order), ("reduce_at", k.reduce_at), ("tile_order", k.tile_order)))

    def knobs(self, config: Config) -> topi.Conv2dNCHWcKnobs | topi.WinogradKnobs:
        tile = self.winograd_tile(config)
        if tile:
            return topi.WinogradKnobs(tile=tile, tx_block=int(config["ow_block"]), oc_block=int(config["oc_block"]),
                                      ty_block=int(config["oh_block"]),
                                      # reduce_at "row" is the direct conv's (illegal here: make_space says
                                      # so); its knobs, asked for anyway, are the per-row GEMM's.
                                      gemm_at=_WINOGRAD_GEMM_AT.get(str(config["reduce_at"]), "row"))
        values = config.to_dict()
        values.pop("algorithm", None)
        return topi.Conv2dNCHWcKnobs(**values)  # type: ignore[arg-type]

    def function_name(self, config: Config) -> str:
        tile = self.winograd_tile(config)
        return f"{self.kind}_winograd_{tile}" if tile else self.kind

    def run(self, artifact: Path, check: bool, repeats: int, warmup: int, flush_bytes: int,
            cache: str = "model") -> RunOutcome:
        from vdla.runtime.cpu_module import load_module

        # A Winograd artifact takes the transformed weights: its function's name says which tile.
        name = load_module(artifact).entry_name
        tile = int(name.rsplit("_", 1)[1]) if name.startswith(f"{self.kind}_winograd_") else 0
        if not tile:
            return super().run(artifact, check, repeats, warmup, flush_bytes, cache)
        k = self.produced_inputs  # the blocked weights follow the activations (and the residual)

        def transformed(ins: list[np.ndarray]) -> list[np.ndarray]:
            u = topi.transform_weights(self.oihw(ins[k]), tile, ins[0].shape[-1], ins[k].shape[-1])
            return ins[:k] + [u] + ins[k + 1:]

        return self.run_operands(artifact, check, repeats, warmup, flush_bytes, transformed, cache)

    @staticmethod
    def oihw(kernel: np.ndarray) -> np.ndarray:
        """Blocked ``[OC/ob, IC/ib, KH, KW, ib, ob]`` weights back in OIHW."""
        oco, ico, kh, kw, icb, ocb = kernel.shape
        return kernel.transpose(0, 5, 1, 4, 2, 3).reshape(oco * ocb, ico * icb, kh, kw)

    prior_feature = -1  # log2 of :meth:`estimate_cycles`

    @functools.cached_property
    def conv_shape(self) -> ConvShape:
        """The conv as :mod:`~vdla.compiler.autotune.conv_cost` sees it (one per task: the prior scores every
        legal config of a space with it)."""
        w = self.task.wl
        return ConvShape(in_channels=w["ic_outer"] * w["ic_block"], out_channels=w["oc_outer"] * w["oc_block"],
                         out_height=self.out_height, out_width=self.out_width, kernel=w["kh"], lanes=self.lanes,
                         registers=self.registers, vectors=-(-w["oc_block"] // self.lanes), batch=w["n"])

    def estimate_cycles(self, config: Config) -> float:
        """The config's cycles by :mod:`~vdla.compiler.autotune.conv_cost`: its algorithm's work on this
        conv (direct: the register tile's FMAs and loads; Winograd: the padded tiles' GEMM on the
        register tile, the transforms, the transformed weights' and plane buffers' memory traffic).
        Loop orders and unrolling are left to the learned model."""
        shape = self.conv_shape
        knobs = TileKnobs(columns=int(config["ow_block"]), rows=int(config["oh_block"]),
                          channel_blocks=int(config["oc_block"]), plane=config["reduce_at"] == "plane")
        tile = self.winograd_tile(config)
        return winograd_cycles(shape, tile, knobs) if tile else direct_cycles(shape, knobs)

    def prior_estimate(self, config: Config) -> float:
        return float(np.float32(math.log2(1 + self.estimate_cycles(config))))

    def features(self, config: Config) -> np.ndarray:
        # The estimate is the model's prior (prior_feature): it ranks the first batch, the trees learn its errors.
        return np.concatenate([super().features(config), np.asarray([self.prior_estimate(config)], np.float32)])

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        tile = self.winograd_tile(config)
        ins, out = self.winograd_tensors(tile) if tile else self.tensors()
        params, stage = self.with_epilogue(ins, out)
        # The model's lowering passes the epilogue stage whenever its node has one (lower_llvm_nn, with_epilogue).
        epilogue = stage if stage is not out else None
        if tile:
            s = topi.schedule_conv2d_winograd_nchwc(out, self.knobs(config), epilogue=epilogue)  # type: ignore[arg-type]
        else:
            s = topi.schedule_conv2d_nchwc(out, self.knobs(config), epilogue=epilogue)  # type: ignore[arg-type]
        return s, params + [stage]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        data, kernel = inputs
        n, ico, h, w, icb = data.shape
        oco, _, kh, kw, _, ocb = kernel.shape
        x = data.transpose(0, 1, 4, 2, 3).reshape(n, ico * icb, h, w)
        wt = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(oco * ocb, ico * icb, kh, kw)
        wl = self.task.wl
        y = _conv_nchw(x, wt, (wl["stride_h"], wl["stride_w"]), (wl["pad_h"], wl["pad_w"]))
        return y.reshape(n, oco, ocb, y.shape[2], y.shape[3]).transpose(0, 1, 3, 4, 2)

    @property
    def flops(self) -> int:
        w = self.task.wl
        return (2 * w["n"] * w["oc_outer"] * w["oc_block"] * self.out_height * self.out_width * w["ic_outer"] * w["ic_block"]
                * w["kh"] * w["kw"])


class DepthwiseTemplate(CpuTemplate):
    """topi's NCHW depthwise conv2d: column vector width, kernel-width unroll."""

    kind = "depthwise_conv2d_nchw"

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        data = te.placeholder((w["n"], w["c"], w["h"], w["w"]), "float32", "data")
        kernel = te.placeholder((w["c"], 1, w["kh"], w["kw"]), "float32", "kernel")
        out = topi.depthwise_conv2d_nchw(data, kernel, (w["stride_h"], w["stride_w"]), (w["pad_h"], w["pad_w"]))
        return [data, kernel], out

    def make_space(self) -> ConfigSpace:
        ow = int(self.tensors()[1].shape[3].value)
        widths = sorted({v for v in (1, 2, 4, 8, 16, 32, 64) if v <= max(ow, 1)} | {int(self.default()["ow_vector"])})
        return ConfigSpace((Axis("ow_vector", tuple(widths)), Axis("unroll_kw", (False, True))))

    def target_default(self) -> Config:
        k = topi.default_depthwise_knobs(self.tensors()[1])
        return Config((("ow_vector", k.ow_vector), ("unroll_kw", k.unroll_kw)))

    def knobs(self, config: Config) -> topi.DepthwiseKnobs:
        return topi.DepthwiseKnobs(**config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        return topi.schedule_depthwise_conv2d_nchw(out, self.knobs(config)), ins + [out]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        w = self.task.wl
        return _conv_nchw(inputs[0], inputs[1], (w["stride_h"], w["stride_w"]), (w["pad_h"], w["pad_w"]),
                          groups=w["c"])

    @property
    def flops(self) -> int:
        out = self.tensors()[1]
        return 2 * math.prod(int(s.value) for s in out.shape) * self.task.wl["kh"] * self.task.wl["kw"]


class DepthwiseNCHWcTemplate(CpuTemplate):
    """topi's channel-blocked depthwise conv2d: column register tile, kernel-width unroll."""

    kind = "depthwise_conv2d_nchwc"

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        data = te.placeholder((w["n"], w["c_outer"], w["h"], w["w"], w["c_block"]), "float32", "data")
        kernel = te.placeholder((w["c_outer"], w["kh"], w["kw"], w["c_block"]), "float32", "kernel")
        out = topi.depthwise_conv2d_nchwc(data, kernel, (w["stride_h"], w["stride_w"]), (w["pad_h"], w["pad_w"]))
        return [data, kernel], out

    def make_space(self) -> ConfigSpace:
        ow = int(self.tensors()[1].shape[3].value)
        vectors = -(-self.task.wl["c_block"] // self.lanes)
        budget = max(1, (self.registers - 2 * vectors) // vectors)
        return ConfigSpace((Axis("ow_block", divisors(ow, max(budget, int(self.default()["ow_block"])))),
                            Axis("unroll_kw", (False, True))))

    def target_default(self) -> Config:
        k = topi.default_depthwise_nchwc_knobs(self.tensors()[1])
        return Config((("ow_block", k.ow_block), ("unroll_kw", k.unroll_kw)))

    def knobs(self, config: Config) -> topi.DepthwiseNCHWcKnobs:
        return topi.DepthwiseNCHWcKnobs(**config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        params, stage = self.with_epilogue(ins, out)
        epilogue = stage if stage is not out else None
        return topi.schedule_depthwise_conv2d_nchwc(out, self.knobs(config), epilogue=epilogue), params + [stage]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        data, kernel = inputs
        n, co, h, w, cb = data.shape
        x = data.transpose(0, 1, 4, 2, 3).reshape(n, co * cb, h, w)
        wt = kernel.transpose(0, 3, 1, 2).reshape(co * cb, 1, kernel.shape[1], kernel.shape[2])
        wl = self.task.wl
        y = _conv_nchw(x, wt, (wl["stride_h"], wl["stride_w"]), (wl["pad_h"], wl["pad_w"]), groups=co * cb)
        return y.reshape(n, co, cb, y.shape[2], y.shape[3]).transpose(0, 1, 3, 4, 2)

    @property
    def flops(self) -> int:
        out = self.tensors()[1]
        return 2 * math.prod(int(s.value) for s in out.shape) * self.task.wl["kh"] * self.task.wl["kw"]


class DenseTemplate(CpuTemplate):
    """topi's packed dense: vectors per register tile, rows per tile, reduction unroll."""

    kind = "dense_pack"

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        nb = -(-w["n"] // w["n_block"])
        x = te.placeholder((w["m"], w["k"]), "float32", "x")
        packed = te.placeholder((nb, w["k"], w["n_block"]), "float32", "packed")
        return [x, packed], topi.dense_pack(x, packed, w["n"])

    def make_space(self) -> ConfigSpace:
        # The schedule splits with a tail, so k_unroll need not divide K.
        return ConfigSpace((Axis("n_vectors", (1, 2, 3, 4, 6, 8)), Axis("m_block", divisors(self.task.wl["m"], 8)),
                            Axis("k_unroll", (1, 2, 4, 8)), Axis("outer_order", ("m_n", "n_m"))))

    def target_default(self) -> Config:
        from vdla.compiler.graph.lower_llvm_nn import default_dense_knobs

        k = default_dense_knobs(self.task.wl["m"], self.task.wl["n"])
        return Config((("n_vectors", k.n_vectors), ("m_block", k.m_block), ("k_unroll", k.k_unroll),
                       ("outer_order", k.outer_order)))

    def knobs(self, config: Config) -> topi.DenseKnobs:
        return topi.DenseKnobs(n_vector=self.task.wl["n_block"], **config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        return topi.schedule_dense(out, self.knobs(config)), ins + [out]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        x, packed = inputs
        n = self.task.wl["n"]
        weight = packed.transpose(0, 2, 1).reshape(-1, packed.shape[1])[:n]
        return x.astype(np.float64) @ weight.T.astype(np.float64)

    @property
    def flops(self) -> int:
        w = self.task.wl
        return 2 * w["m"] * w["n"] * w["k"]


CPU_TEMPLATES: dict[str, Any] = {t.kind: t for t in (Conv2dNCHWcTemplate, DepthwiseTemplate, DepthwiseNCHWcTemplate,
                                                      DenseTemplate)}
