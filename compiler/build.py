"""``build``: a schedule or PrimFunc to a callable native module.

>>> mod = build(s, [A, B, C], target="llvm", name="matmul")
>>> mod(a, b, c)            # NumPy arrays; shapes and dtypes are checked
>>> mod.export("matmul.so") # vdla.runtime.cpu_module.load_module("matmul.so") loads it
"""
from __future__ import annotations

import os
import time
from typing import Any, Sequence, Union

import numpy as np

from vdla.runtime.cpu_module import CpuModule, Function

from vdla_hw.errors import UsageError
from .codegen.llvm import LLVMModule, Target, codegen, export_library, jit, parse_target
from .te.tensor import Tensor
from .tir.ir import Buffer, PrimFunc
from .tir.pipeline import lower


class BuildError(UsageError):
    """The arguments of ``build`` do not describe a compilable function."""


class Module:
    """A compiled function, JIT-loaded in this process.

    Call it with NumPy arrays in parameter order (outputs are written in place);
    ``export`` writes a shared library for deployment without the compiler.
    """

    def __init__(self, llvm_module: LLVMModule, lowered: PrimFunc, runtime: CpuModule):
        self.llvm_module = llvm_module
        self.lowered = lowered
        self.runtime = runtime
        self.name = llvm_module.functions[0].name

    @property
    def target(self) -> Target:
        return self.llvm_module.target

    @property
    def function(self) -> Function:
        return self.runtime[self.name]

    def __call__(self, *arrays: np.ndarray) -> None:
        self.function(*arrays)

    def set_num_threads(self, n: int) -> None:
        """Threads for parallel loops (0 = OpenMP's default)."""
        self.runtime.set_num_threads(n)

    def export(self, path: str | os.PathLike[str]) -> str:
        """Write a shared library recording the target CPU and features."""
        return export_library(self.llvm_module, path)

    def get_source(self, fmt: str = "ll") -> str:
        """``"tir"`` (lowered program), ``"ll"`` (LLVM IR before optimization),
        ``"opt"`` (after O3) or ``"asm"`` (host assembly)."""
        if fmt == "tir":
            return str(self.lowered)
        if fmt == "ll":
            return self.llvm_module.ir_text
        if fmt == "opt":
            return str(self.llvm_module.optimized())
        if fmt == "asm":
            return self.llvm_module.assembly()
        raise BuildError(f"unknown source format {fmt!r}; use 'tir', 'll', 'opt' or 'asm'")

    def time(self, *arrays: np.ndarray, number: int = 10, repeat: int = 5,
             warmup: int = 1) -> list[float]:
        """Seconds per call, one figure per repeat (each the mean of ``number`` calls)."""
        fn = self.function
        fn.check(arrays)
        argv = fn.pack(arrays)
        for _ in range(warmup):
            fn.call_unchecked(argv)
        out = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn.call_unchecked(argv)
            out.append((time.perf_counter() - t0) / number)
        return out

    def __repr__(self) -> str:
        return f"Module({self.function!r}, target={self.target})"


Lowerable = Union[PrimFunc, Any]


def _order_params(func: PrimFunc, args: Sequence[Tensor | Buffer] | None) -> PrimFunc:
    if args is None:
        return func
    bufs = [a.buffer if isinstance(a, Tensor) else a for a in args]
    for a, b in zip(args, bufs):
        if not isinstance(b, Buffer):
            raise BuildError(f"build args must be Tensors or Buffers, got {type(a).__name__}")
    params = {id(p): p for p in func.params}
    unknown = [b.name for b in bufs if id(b) not in params]
    if unknown:
        raise BuildError(f"{unknown} are not parameters of {func.name} (its parameters are "
                         f"{[p.name for p in func.params]}); pass the tensors the schedule "
                         f"was created from")
    missing = [p.name for p in func.params if p not in bufs]
    if missing:
        raise BuildError(f"args leave out the parameters {missing} of {func.name}")
    return PrimFunc(func.name, tuple(bufs), func.body, func.attrs)


def build(sch: Lowerable, args: Sequence[Tensor | Buffer] | None = None,
          target: str | Target | None = None, name: str | None = None) -> Module:
    """Lower ``sch`` (a Schedule or a PrimFunc), generate native code for ``target`` (default: the
    target being compiled for, :func:`~vdla.compiler.codegen.llvm.current_target`, else the host) and
    JIT it. ``args`` fixes the parameter order (default: the schedule's); ``name`` the
    exported function name (default: the PrimFunc's)."""
    if not isinstance(sch, PrimFunc) and not isinstance(getattr(sch, "func", None), PrimFunc):
        raise BuildError(f"build takes a Schedule or a PrimFunc, got {type(sch).__name__}")
    tgt = parse_target(target)
    lowered = _order_params(lower(sch, "llvm"), args)
    if name is not None:
        lowered = PrimFunc(name, lowered.params, lowered.body, lowered.attrs)
    mod = codegen([lowered], tgt, name=lowered.name)
    return Module(mod, lowered, jit(mod))
