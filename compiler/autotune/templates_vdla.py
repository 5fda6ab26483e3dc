"""The VDLA template: a thin binding of the conv2d tiling knobs (``vdla.compiler.vdla.topi.tiling``).

Its axes are the knobs of :class:`~vdla.compiler.vdla.topi.tiling.Conv2dKnobs` (tile sizes, virtual
threads and the axis they split, loop order); legality is :func:`check_knobs`, so whatever the
tiling decides fits the hardware config is what the tuner may try.  A config is measured in
cycle-model cycles on seeded int8 data and checked bit-exactly against NumPy.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from vdla.compiler.tir.stmt import PrimFunc
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (
    Conv2dKnobs,
    Conv2dWorkload,
    Requantize,
    check_knobs,
    compile_conv2d,
    conv2d_func,
    default_knobs,
    estimate_cycles,
    footprint,
    random_conv_data,
    requant_shift,
)
from vdla.compiler.vdla.topi import reference as ref
from vdla_hw.config import from_dict

from .space import Axis, Config, ConfigSpace, divisors
from .task import Task
from .template import RunOutcome, Template

VIRTUAL_THREADS = (1, 2, 4)
_SCOPES = ("vdla.inp", "vdla.wgt", "vdla.acc", "vdla.uop")


class VdlaConv2dTemplate(Template):
    """Tiles (output channels, rows, columns, input channels), virtual threads, their axis and the loop order."""

    kind = "vdla_conv2d"
    unit = "cycles"
    prior_feature = -1  # log2 of tiling.estimate_cycles over the GEMM core's ideal cycles

    def __init__(self, task: Task, hw_config: dict[str, Any]) -> None:
        super().__init__(task)
        self.target = VdlaTarget(from_dict(hw_config))
        self.workload = Conv2dWorkload(**task.wl)
        self.epilogue = Requantize(shift=requant_shift(self.workload))

    def make_space(self) -> ConfigSpace:
        wl, cfg = self.workload, self.target.config

        def legal(c: Config) -> None:
            check_knobs(wl, self.knobs(c), self.target)

        return ConfigSpace((
            Axis("oc_tile", divisors(wl.oc // cfg.block_out)),
            Axis("oh_tile", divisors(wl.oh)),
            Axis("ow_tile", divisors(wl.ow)),
            Axis("ic_tile", divisors(wl.ic // cfg.block_in)),
            Axis("virtual_threads", VIRTUAL_THREADS),
            Axis("vt_axis", ("oc", "oh")),
            Axis("loop_order", ("oc_oh", "oh_oc")),
        ), legal)

    def default(self) -> Config:
        # What the graph lowering compiles without a log: two virtual threads, else one.
        try:
            k = default_knobs(self.workload, self.target, 2)
        except ValueError:
            k = default_knobs(self.workload, self.target, 1)
        return Config((("oc_tile", k.oc_tile), ("oh_tile", k.oh_tile), ("ow_tile", k.tile_ow(self.workload)),
                       ("ic_tile", k.ic_tile),
                       ("virtual_threads", k.virtual_threads), ("vt_axis", k.vt_axis), ("loop_order", k.loop_order)))

    def knobs(self, config: Config) -> Conv2dKnobs:
        values = config.to_dict()
        if values["ow_tile"] == self.workload.ow:  # whole rows: the knobs the lowering picks by itself
            values["ow_tile"] = None
        return Conv2dKnobs(**values)  # type: ignore[arg-type]

    def program(self, config: Config) -> PrimFunc:
        return conv2d_func(self.workload, self.knobs(config), self.target, self.epilogue)

    def features(self, config: Config) -> np.ndarray:
        k = self.knobs(config)
        cfg = self.target.config
        fp = footprint(self.workload, k, cfg)
        estimate = estimate_cycles(self.workload, k, cfg)
        extra = [math.log2(1 + fp.get(s, 0)) for s in _SCOPES]
        # Shape-free forms carry across tasks (transfer learning): buffer occupancy and the estimate
        # over the GEMM core's ideal cycles.
        extra += [fp.get(s, 0) / self.target.scope(s).depth for s in _SCOPES]
        extra += [math.log2(1 + estimate), math.log2(estimate * cfg.macs_per_cycle / self.workload.macs)]
        return np.concatenate([super().features(config), np.asarray(extra, np.float32)])

    def build(self, config: Config, directory: Path) -> Path:
        compiled = compile_conv2d(self.workload, self.target, knobs=self.knobs(config), epilogue=self.epilogue)
        data, kernel, bias = random_conv_data(self.workload)
        cfg = self.target.config
        program = compiled.module.bind(ref.pack_data(cfg, data), ref.pack_kernel(cfg, kernel), ref.pack_bias(cfg, bias))
        return program.save(directory / "conv.vdlaprog")

    def run(self, artifact: Path, check: bool, repeats: int, warmup: int, flush_bytes: int,
            cache: str = "model") -> RunOutcome:
        from vdla.runtime.backends import run as run_program
        from vdla.runtime.program import Program

        result = run_program(Program.load(artifact), backend="cycle")
        if not check:
            return RunOutcome((float(result.cycles),), True)
        wl, cfg, ep = self.workload, self.target.config, self.epilogue
        nb, ocb = wl.n // cfg.batch, wl.oc // cfg.block_out
        got = ref.unpack_output(result.read("out").reshape(nb, ocb, wl.oh, wl.ow, cfg.batch, cfg.block_out))
        data, kernel, bias = random_conv_data(wl)
        want = ref.conv2d_reference(data, kernel, bias, wl.stride, wl.pad, ep.shift, ep.relu, cfg.out_width,
                                    cfg.acc_width)
        same = bool(np.array_equal(got, want))
        detail = "bit-exact" if same else f"{int((got != want).sum())} of {want.size} outputs differ"
        return RunOutcome((float(result.cycles),), same, detail)

    @property
    def flops(self) -> int:
        return 2 * self.workload.macs
