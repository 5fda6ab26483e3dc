"""The VDLA template: a thin binding of the conv2d tiling knobs (``vdla.compiler.vdla.topi.tiling``) and of
the resident 1x1 template's settings.

Its axes are the knobs of :class:`~vdla.compiler.vdla.topi.tiling.Conv2dKnobs` (tile sizes, virtual
threads and the axis they split, loop order) plus ``resident``: empty for a tiling, else one of the
layer's :func:`~vdla.compiler.vdla.topi.resident_fit.resident_space` settings written as text (``b1=9;first_piece=8;...``,
what the tuning log holds), whose config has the default tiling's values on the other axes (one point per
setting).  Legality is :func:`check_knobs` (a tiling) or :func:`resident_error` (a resident setting), so
whatever the topi decides fits the hardware config is what the tuner may try; a log written before the
``resident`` axis existed reads as tilings.  A config is measured in cycle-model cycles on seeded int8
data and checked bit-exactly against NumPy.
"""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from vdla.compiler.tir.stmt import PrimFunc
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (
    Conv2dKnobs,
    Conv2dWorkload,
    Requantize,
    ResidentKnobs,
    check_knobs,
    compile_conv2d,
    conv2d_func,
    default_knobs,
    estimate_cycles,
    footprint,
    random_conv_data,
    requant_shift,
    resident_error,
    resident_footprint,
    resident_space,
    compile_default_conv,
    estimate_resident_cycles,
)
from vdla.compiler.vdla.topi import reference as ref
from vdla_hw.config import from_dict

from .space import Axis, Config, ConfigSpace, divisors
from .task import Task
from .template import RunOutcome, Template

VIRTUAL_THREADS = (1, 2, 4)
_SCOPES = ("vdla.inp", "vdla.wgt", "vdla.acc", "vdla.uop")
TILING = ""
"""The ``resident`` knob's value of a tiling (``Conv2dKnobs``)."""
_TILING_AXES = ("oc_tile", "oh_tile", "ow_tile", "ic_tile", "virtual_threads", "vt_axis", "loop_order")


def resident_text(k: ResidentKnobs) -> str:
    """A resident setting as the ``resident`` knob's value (its fields, ``name=value`` joined by ``;``)."""
    return ";".join(f"{name}={int(v)}" for name, v in asdict(k).items())


_BOOL_FIELDS = frozenset(f.name for f in fields(ResidentKnobs) if f.type in (bool, "bool"))
"""The ResidentKnobs fields that are flags (written as 0/1)."""


def parse_resident(text: str) -> ResidentKnobs:
    """The inverse of :func:`resident_text`; ValueError naming the field for text that is not one."""
    names = {f.name for f in fields(ResidentKnobs)}
    values: dict[str, int | bool] = {}
    for part in text.split(";"):
        name, eq, value = part.partition("=")
        if not eq or name not in names or not value.lstrip("-").isdigit():
            raise ValueError(f"{part!r} of resident setting {text!r} is not a ResidentKnobs field=integer")
        values[name] = bool(int(value)) if name in _BOOL_FIELDS else int(value)
    return ResidentKnobs(**values)  # type: ignore[arg-type]


class VdlaConv2dTemplate(Template):
    """Tiles (output channels, rows, columns, input channels), virtual threads, their axis and the loop order;
    or one of the resident 1x1 template's settings."""

    kind = "vdla_conv2d"
    unit = "cycles"
    prior_feature = -1  # log2 of tiling.estimate_cycles over the GEMM core's ideal cycles

    def __init__(self, task: Task, hw_config: dict[str, Any]) -> None:
        super().__init__(task)
        self.target = VdlaTarget(from_dict(hw_config))
        self.workload = Conv2dWorkload(**task.wl)
        self.epilogue = Requantize(shift=requant_shift(self.workload))
        self.residents = tuple(resident_text(k) for k in resident_space(self.workload, self.target, self.epilogue))
        self.default_tiling = self._make_default_tiling()
        """The default tiling's config (a resident point carries its values on the tiling axes)."""
        self._default: Config | None = None

    def make_space(self) -> ConfigSpace:
        wl, cfg = self.workload, self.target.config
        canonical = self.default_tiling.to_dict()

        def legal(c: Config) -> None:
            knobs = self.knobs(c)
            if isinstance(knobs, ResidentKnobs):
                if any(c[a] != canonical[a] for a in _TILING_AXES):  # one point per setting: the default tiling's
                    raise ValueError("a resident setting's point has the default tiling's values on the tiling axes")
                why = resident_error(wl, knobs, self.target, self.epilogue)
                if why is not None:
                    raise ValueError(why)
                return
            check_knobs(wl, knobs, self.target)

        return ConfigSpace((
            Axis("oc_tile", divisors(wl.oc // cfg.block_out)),
            Axis("oh_tile", divisors(wl.oh)),
            Axis("ow_tile", divisors(wl.ow)),
            Axis("ic_tile", divisors(wl.ic // cfg.block_in)),
            Axis("virtual_threads", VIRTUAL_THREADS),
            Axis("vt_axis", ("oc", "oh")),
            Axis("loop_order", ("oc_oh", "oh_oc")),
            Axis("resident", (TILING, *self.residents), absent=TILING),
        ), legal)

    def default(self) -> Config:
        """What the graph lowering compiles without a log (``compile_conv_workload``): the default tiling, or the
        resident setting ``compile_default_conv`` picks (it runs both on the cycle model: decided once)."""
        if self._default is None:
            self._default = self.default_tiling
            if self.residents:
                pick = compile_default_conv(self.workload, self.target, self.epilogue, 2).knobs
                if isinstance(pick, ResidentKnobs) and resident_text(pick) in self.residents:
                    self._default = Config(tuple((k, resident_text(pick) if k == "resident" else v)
                                                 for k, v in self.default_tiling.values))
        return self._default

    def _make_default_tiling(self) -> Config:
        # Two virtual threads, else one.
        try:
            k = default_knobs(self.workload, self.target, 2)
        except ValueError:
            k = default_knobs(self.workload, self.target, 1)
        return Config((("oc_tile", k.oc_tile), ("oh_tile", k.oh_tile), ("ow_tile", k.tile_ow(self.workload)),
                       ("ic_tile", k.ic_tile),
                       ("virtual_threads", k.virtual_threads), ("vt_axis", k.vt_axis), ("loop_order", k.loop_order),
                       ("resident", TILING)))

    def knobs(self, config: Config) -> Conv2dKnobs | ResidentKnobs:
        values = config.to_dict()
        resident = values.pop("resident", TILING)
        if resident != TILING:
            return parse_resident(str(resident))
        if values["ow_tile"] == self.workload.ow:  # whole rows: the knobs the lowering picks by itself
            values["ow_tile"] = None
        return Conv2dKnobs(**values)  # type: ignore[arg-type]

    def program(self, config: Config) -> PrimFunc:
        """The tiled loop program (a resident setting writes its instructions directly: its point's tiling's)."""
        k = self.knobs(config)
        if isinstance(k, ResidentKnobs):
            k = self.knobs(self.default_tiling)
        return conv2d_func(self.workload, k, self.target, self.epilogue)  # type: ignore[arg-type]

    def features(self, config: Config) -> np.ndarray:
        k = self.knobs(config)
        cfg = self.target.config
        if isinstance(k, ResidentKnobs):  # its own buffer use and estimate on the tiling's loop features
            fp = resident_footprint(self.workload, k, cfg, self.epilogue)
            estimate = estimate_resident_cycles(self.workload, k, cfg, self.epilogue)
        else:
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
