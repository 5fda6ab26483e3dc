"""``vdla.compiler.vdla.build``: scheduled TIR -> a module that runs on any VDLA backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from vdla.compiler.tir import PrimFunc
from vdla.runtime.backends import run as run_program
from vdla.runtime.memory import to_bytes
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult

from .codegen import ParamBinding, codegen, pack_param
from .pipeline import lower
from .target import VdlaTarget


@dataclass(frozen=True)
class VdlaModule:
    """A compiled operator: the program template plus how its parameters map to DRAM buffers."""

    name: str
    target: VdlaTarget
    program: Program
    params: tuple[ParamBinding, ...]
    lowered: PrimFunc | None
    """The lowered program (None for a template that writes its instructions directly, ``topi.resident``)."""
    outputs: tuple[str, ...] = field(default=())

    def bind(self, *arrays: np.ndarray) -> Program:
        """The program with the input arrays (one per non-output parameter, in order) in DRAM."""
        inputs = [p for p in self.params if p.kind != "out"]
        if len(arrays) != len(inputs):
            raise ValueError(f"{self.name} takes {len(inputs)} inputs ({', '.join(p.name for p in inputs)}), "
                             f"got {len(arrays)}")
        cfg = self.target.config
        dram = self.program.dram.copy()
        for p, a in zip(inputs, arrays):
            spec = self.program.buffers[p.name]
            dram[spec.offset: spec.offset + spec.nbytes] = to_bytes(cfg, spec, pack_param(p, a))
        return Program(cfg, self.program.instructions, dram, self.program.insn_addr, self.program.buffers)

    def run(self, *arrays: np.ndarray, backend: str = "fsim", **options: Any) -> tuple[dict[str, np.ndarray], RunResult]:
        """Run on ``backend``; returns the outputs by name (in the parameters' packed shapes) and the run result."""
        result = run_program(self.bind(*arrays), backend=backend, **options)
        outs = {p.name: result.read(p.name).reshape(p.shape) for p in self.params if p.kind == "out"}
        return outs, result

    def __call__(self, *arrays: np.ndarray, backend: str = "fsim") -> np.ndarray:
        outs, _ = self.run(*arrays, backend=backend)
        return next(iter(outs.values()))


def build(func: PrimFunc, target: VdlaTarget | str = "default",
          dump: Callable[[str, PrimFunc], None] | None = None) -> VdlaModule:
    """Lower a scheduled VDLA ``func`` through the pass pipeline and generate its program."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    lowered = lower(func, tgt, dump)
    program, binds = codegen(lowered, tgt)
    params = tuple(binds[p.name] for p in func.params)
    return VdlaModule(func.name, tgt, program, params, lowered, tuple(p.name for p in params if p.kind == "out"))
