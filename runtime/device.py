"""A small device API: DRAM buffers that persist across program runs on one backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from vdla_hw.config import HwConfig, load_config

from vdla.runtime.backends import check_options, get_backend
from vdla.runtime.memory import BufferSpec, DramImage
from vdla.runtime.program import Program, ProgramBuilder
from vdla.runtime.result import RunResult


class Device:
    """One accelerator reached through a backend, with its own DRAM.

    ``alloc`` reserves buffers, ``copy_to``/``copy_from`` move host arrays in and out
    (in the packed tile layout), ``builder()`` returns a :class:`ProgramBuilder` over
    the device's DRAM, and ``run`` executes a built program and keeps the final DRAM,
    so results stay on the device until copied out.
    """

    def __init__(self, cfg: HwConfig | str = "default", backend: str = "fsim", **options: Any) -> None:
        self.cfg = load_config(cfg) if isinstance(cfg, str) else cfg
        self.backend = get_backend(backend)
        check_options(self.backend, options)
        self.options = options
        self.memory = DramImage(self.cfg)

    def alloc(self, name: str, kind: str, shape: tuple[int, ...] | int, dtype: str | None = None) -> BufferSpec:
        """Reserve a DRAM buffer (see :meth:`vdla.runtime.memory.DramImage.alloc`)."""
        return self.memory.alloc(name, kind, shape, dtype)

    def copy_to(self, buf: str | BufferSpec, values: np.ndarray) -> None:
        """Host -> device."""
        self.memory.write(buf, values)

    def copy_from(self, buf: str | BufferSpec) -> np.ndarray:
        """Device -> host."""
        return self.memory.read(buf)

    def builder(self) -> ProgramBuilder:
        """A program builder whose buffers live in this device's DRAM."""
        return ProgramBuilder(self.cfg, self.memory)

    def run(self, program: ProgramBuilder | Program) -> RunResult:
        """Run a program built over this device's memory; its final DRAM becomes the device DRAM."""
        if isinstance(program, ProgramBuilder):
            if program.memory is not self.memory:
                raise ValueError("this builder belongs to another device; use Device.builder()")
            program = program.build()
        if program.config != self.cfg:
            raise ValueError(f"program built for config {program.config.name!r}, device is {self.cfg.name!r}")
        if program.dram.size > self.memory.size:
            raise ValueError("program DRAM image is larger than the device memory; build it with Device.builder()")
        result = self.backend.run(program, **self.options)
        # The program's image is the device memory as of build(); the run's final image replaces it.
        self.memory.data[: result.dram.size] = result.dram
        return result
