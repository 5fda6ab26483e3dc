"""Schedule templates: a config space bound to an existing schedule, plus how to build and check it.

A template is thin: its knobs are the knob dataclass of the operator's schedule
(``vdla.compiler.topi.*`` for the CPU, ``vdla.compiler.vdla.topi.tiling`` for the VDLA), its default config
is the knobs the lowering picks without a log, and :meth:`Template.knobs` turns a config back into
that dataclass (the lowerings receive it through :mod:`vdla.compiler.autotune.dispatch`).  ``build``
writes a self-contained artifact (a shared library, a bound VDLA program) that ``run`` times and
checks against the NumPy reference, so building and running can happen in different processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vdla.compiler.tir.stmt import PrimFunc

from .features import program_features
from .space import Config, ConfigSpace
from .task import Task


@dataclass(frozen=True)
class RunOutcome:
    """What one run of a built artifact gave: its costs (seconds or cycles) and whether it was right."""

    costs: tuple[float, ...]
    correct: bool
    detail: str = ""


class Template(ABC):
    """The tunable schedule of one operator kind."""

    kind: str
    unit: str = "s"

    def __init__(self, task: Task) -> None:
        self.task = task
        self._space: ConfigSpace | None = None

    @property
    def space(self) -> ConfigSpace:
        if self._space is None:
            self._space = self.make_space()
        return self._space

    @abstractmethod
    def make_space(self) -> ConfigSpace:
        """The knobs as a config space (legality checked by the space's ``legal``)."""

    @abstractmethod
    def default(self) -> Config:
        """The config the lowering uses without a tuning log (a point of the space)."""

    @abstractmethod
    def knobs(self, config: Config) -> Any:
        """The schedule's knob dataclass for ``config``."""

    @abstractmethod
    def program(self, config: Config) -> PrimFunc:
        """The scheduled loop program of ``config`` (what the features describe)."""

    @abstractmethod
    def build(self, config: Config, directory: Path) -> Path:
        """Build ``config`` into a file in ``directory`` (raises on a build error)."""

    @abstractmethod
    def run(self, artifact: Path, check: bool, repeats: int, warmup: int, flush_bytes: int,
            cache: str = "model") -> RunOutcome:
        """Run the artifact, checking its output against the reference when ``check``; a timed CPU call
        starts from the cache state ``cache`` (:data:`vdla.compiler.autotune.measure.CACHE_STATES`)."""

    prior_feature: int | None = None
    """The column of :meth:`features` holding an analytic cost estimate (log2 cycles, lower is faster),
    if the template has one: the model starts from it and learns the corrections."""

    def prior_estimate(self, config: Config) -> float | None:
        """The :attr:`prior_feature` column of ``config``'s features computed alone, without lowering its
        program (cheap enough to rank a whole legal space), or None when the template has no such
        shortcut."""
        return None

    def features(self, config: Config) -> np.ndarray:
        return program_features(self.program(config))

    @property
    def flops(self) -> int:
        """Floating-point (or integer) operations of one run, for throughput reports."""
        return 0


def template_for(task: Task, hw_config: dict[str, Any] | None = None) -> Template:
    """The template of ``task``'s kind; VDLA tasks need the hardware config (as ``HwConfig.to_dict()``)."""
    from .templates_cpu import CPU_TEMPLATES
    from .templates_cpu_ops import OP_TEMPLATES
    from .templates_vdla import VdlaConv2dTemplate

    if task.kind in CPU_TEMPLATES:
        return CPU_TEMPLATES[task.kind](task)
    if task.kind in OP_TEMPLATES:
        return OP_TEMPLATES[task.kind](task)
    if task.kind == VdlaConv2dTemplate.kind:
        if hw_config is None:
            raise ValueError("a vdla_conv2d template needs the hardware config")
        return VdlaConv2dTemplate(task, hw_config)
    raise ValueError(f"no template for task kind {task.kind!r}")
