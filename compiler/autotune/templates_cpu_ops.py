"""CPU templates of the lighter operators: pooling, fused element-wise kernels and batched matmul.

* ``pool2d``: topi's window schedule (NCHW or NCHWc): columns per register tile, unrolled window
  columns, and (NCHW) the vector width.
* ``elementwise``: a fused element-wise kernel the graph schedules with ``schedule_elementwise``
  (its output is not the epilogue of a conv).  The task keeps the loop nest the schedule sees --
  the fused outer extent, the innermost extent and how many full-size inputs it streams -- not the
  expression, so one task stands for every kernel of that shape (a residual add + ReLU, a layout
  copy, ...); it is measured on a stand-in of that nest (the ReLU of the sum of its streams).
* ``batch_matmul``: topi's batched micro-kernel on the padded ``[B, M, K] x [B, K, N]`` copies the
  MatMul lowering makes: rows and column vectors per register tile, reduction unroll (threads
  as the lowering's default: over the batch when there is one).

No template has a ``parallel`` knob: see ``templates_cpu``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from vdla.compiler import te, topi
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import op as tir
from vdla.compiler.tir.ir import const
from vdla.compiler.topi.utils import ElementwiseKnobs, schedule_elementwise

from .space import Axis, Config, ConfigSpace, divisors
from .templates_cpu import CpuTemplate


class PoolTemplate(CpuTemplate):
    """topi's max / average pooling: see the module doc."""

    kind = "pool2d"

    @property
    def blocked(self) -> bool:
        return self.task.wl["c_block"] > 0

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        shape = (w["n"], w["c"], w["h"], w["w"]) + ((w["c_block"],) if self.blocked else ())
        data = te.placeholder(shape, "float32", "data")
        out = topi.pool2d(data, (w["kh"], w["kw"]), (w["stride_h"], w["stride_w"]), (w["pad_h"], w["pad_w"]),
                          "avg" if w["avg"] else "max", "NCHWc" if self.blocked else "NCHW",
                          count_include_pad=bool(w["count_include_pad"]))
        return [data], out

    @property
    def out_width(self) -> int:
        return int(self.tensors()[1].shape[3].value)

    def make_space(self) -> ConfigSpace:
        default = self.default()
        if self.blocked:
            vectors = -(-self.task.wl["c_block"] // self.lanes)
            budget = max(1, (self.registers - 2 * vectors) // vectors)
            blocks = divisors(self.out_width, budget)
            widths: tuple[int, ...] = (int(default["vector"]),)
        else:
            blocks = tuple(b for b in (1, 2, 4) if b == 1 or b * min(self.lanes, self.out_width) <= self.out_width)
            widths = tuple(sorted({v for v in (self.lanes // 2, self.lanes, 2 * self.lanes) if v >= 4}
                                  | {int(default["vector"])}))
        return ConfigSpace((Axis("vector", widths), Axis("ow_block", blocks), Axis("unroll_kw", (False, True))),
                           None if self.blocked else self._row_fits)

    def _row_fits(self, c: Config) -> None:
        # topi's NCHW schedule tiles column vectors only when the tile fits the row; a config whose
        # tile does not builds the untiled program of ow_block 1 (a duplicate the search would time).
        lanes = min(int(c["vector"]), self.out_width)
        if int(c["ow_block"]) > 1 and lanes * int(c["ow_block"]) > self.out_width:
            raise ValueError(f"{c['ow_block']} column vectors of {lanes} lanes exceed the {self.out_width}-wide row")

    def target_default(self) -> Config:
        k = topi.PoolKnobs(vector=self.lanes)
        return Config((("vector", k.vector), ("ow_block", k.ow_block), ("unroll_kw", k.unroll_kw)))

    def knobs(self, config: Config) -> topi.PoolKnobs:
        return topi.PoolKnobs(**config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        return topi.schedule_pool(out, self.knobs(config)), ins + [out]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        w = self.task.wl
        x = inputs[0].astype(np.float64)
        if self.blocked:  # NCHWc -> NCHW and back around the plain computation
            n, co, h, wd, cb = x.shape
            x = x.transpose(0, 1, 4, 2, 3).reshape(n, co * cb, h, wd)
        ph, pw = w["pad_h"], w["pad_w"]
        fill = -np.inf if not w["avg"] else 0.0
        xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
        win = sliding_window_view(xp, (w["kh"], w["kw"]), axis=(2, 3))[:, :, ::w["stride_h"], ::w["stride_w"]]
        if not w["avg"]:
            y = win.max(axis=(4, 5))
        else:
            inside = np.pad(np.ones(x.shape[2:]), ((ph, ph), (pw, pw)))
            counts = sliding_window_view(inside, (w["kh"], w["kw"]))[::w["stride_h"], ::w["stride_w"]].sum(axis=(2, 3))
            y = win.sum(axis=(4, 5)) / (w["kh"] * w["kw"] if w["count_include_pad"] else counts)
        if self.blocked:
            n, c, oh, ow = y.shape
            y = y.reshape(n, c // w["c_block"], w["c_block"], oh, ow).transpose(0, 1, 3, 4, 2)
        return y

    @property
    def flops(self) -> int:
        out = self.tensors()[1]
        return math.prod(int(s.value) for s in out.shape) * self.task.wl["kh"] * self.task.wl["kw"]


class ElementwiseTemplate(CpuTemplate):
    """A fused element-wise kernel's loop nest: see the module doc."""

    kind = "elementwise"

    @property
    def activation_inputs(self) -> int:  # type: ignore[override]
        """Every stream is an activation (a fused element-wise kernel has no weights)."""
        return max(1, self.task.wl["streams"])

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        shape = (w["outer"], w["inner"])
        ins = [te.placeholder(shape, "float32", f"x{k}") for k in range(max(1, w["streams"]))]

        def body(i: Any, j: Any) -> Any:
            total = ins[0][i, j]
            for x in ins[1:]:
                total = total + x[i, j]
            return tir.max(total, const(0.0, "float32"))

        return ins, te.compute(shape, body, name="elementwise")

    def make_space(self) -> ConfigSpace:
        inner = self.task.wl["inner"]
        widths = {v for v in (self.lanes // 2, self.lanes, 2 * self.lanes, 4 * self.lanes) if 4 <= v <= inner}
        widths |= {int(self.default()["vector"])}
        return ConfigSpace((Axis("vector", tuple(sorted(widths))),))

    def target_default(self) -> Config:
        k = ElementwiseKnobs(vector=self.lanes)
        return Config((("vector", k.vector),))

    def knobs(self, config: Config) -> ElementwiseKnobs:
        return ElementwiseKnobs(**config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        s = create_schedule(out)
        k = self.knobs(config)
        schedule_elementwise(s, out, k.vector, k.parallel)
        return s, ins + [out]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        return np.maximum(np.sum([x.astype(np.float64) for x in inputs], axis=0), 0.0)

    @property
    def flops(self) -> int:
        w = self.task.wl
        return w["outer"] * w["inner"] * max(1, w["streams"])


class BatchMatmulTemplate(CpuTemplate):
    """topi's batched matmul on padded contiguous operands: see the module doc."""

    kind = "batch_matmul"
    activation_inputs = 2  # attention's matmuls multiply two activations

    def tensors(self) -> tuple[list[te.Tensor], te.Tensor]:
        w = self.task.wl
        a = te.placeholder((w["batch_a"], w["m"], w["k"]), "float32", "a")
        b = te.placeholder((w["batch_b"], w["k"], w["n"]), "float32", "b")
        return [a, b], topi.batch_matmul(a, b)

    def make_space(self) -> ConfigSpace:
        w = self.task.wl
        registers = self.registers
        vectors = tuple(v for v in (1, 2, 3, 4) if w["n"] % (self.lanes * v) == 0) or (1,)

        def legal(c: Config) -> None:
            # The tile's accumulators, one vector of b per column and a broadcast of a must fit.
            need = int(c["m_block"]) * int(c["n_vectors"]) + int(c["n_vectors"]) + 1
            if need > registers:
                raise ValueError(f"a {c['m_block']}x{c['n_vectors']} register tile needs {need} vector registers; "
                                 f"the target has {registers}")

        return ConfigSpace((Axis("m_block", divisors(w["m"], 8)), Axis("n_vectors", vectors),
                            Axis("k_unroll", (1, 2, 4, 8))), legal)

    def target_default(self) -> Config:
        from vdla.compiler.graph.lower_llvm_matmul import default_batch_matmul_knobs

        w = self.task.wl
        k = default_batch_matmul_knobs(w["batch_a"], w["batch_b"], w["m"], w["n"])
        return Config((("m_block", k.m_block), ("n_vectors", k.n_vectors), ("k_unroll", k.k_unroll)))

    def knobs(self, config: Config) -> topi.BatchMatmulKnobs:
        from vdla.compiler.graph.lower_llvm_matmul import default_batch_matmul_knobs

        w = self.task.wl
        # Threads are not tuned (see templates_cpu): keep the lowering's choice for this workload.
        parallel = default_batch_matmul_knobs(w["batch_a"], w["batch_b"], w["m"], w["n"]).parallel
        return topi.BatchMatmulKnobs(n_vector=self.lanes, parallel=parallel,
                                     **config.to_dict())  # type: ignore[arg-type]

    def schedule(self, config: Config) -> tuple[Schedule, list[te.Tensor]]:
        ins, out = self.tensors()
        return topi.schedule_batch_matmul(out, self.knobs(config)), ins + [out]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        a, b = (x.astype(np.float64) for x in inputs)
        return np.matmul(a, b)

    @property
    def flops(self) -> int:
        w = self.task.wl
        return 2 * max(w["batch_a"], w["batch_b"]) * w["m"] * w["k"] * w["n"]


OP_TEMPLATES: dict[str, Any] = {t.kind: t for t in (PoolTemplate, ElementwiseTemplate, BatchMatmulTemplate)}
