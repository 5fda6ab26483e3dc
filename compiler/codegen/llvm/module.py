"""Lowered PrimFuncs to one optimized LLVM module.

Every PrimFunc ``f`` becomes

* ``f_kernel(ptr noalias A, ptr noalias B, ...)``, internal: the translated body, one
  pointer per parameter (distinct buffers, hence ``noalias``);
* ``int32_t f(void **args)``, exported: the stable entry point taking an array of buffer
  pointers, which ctypes calls (and which releases the GIL while it runs).

The module also exports ``int32_t vdla_num_threads`` (threads of parallel loops, 0 = the
pool's default: ``OMP_NUM_THREADS`` or the number of cores) and ``char vdla_module_meta[]``: JSON naming the target CPU and
features and each function's parameter shapes and dtypes. The runtime reads it to check
arguments and to refuse to run on a CPU lacking a feature.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ...tir import dtype as dt
from ...tir.ir import IntImm, PrimFunc
from ..symbols import SymbolTable, c_identifier
from .emitter import FunctionEmitter
from .intrinsics import MathEmitter
from .pool import POOL_SYMBOL, pool_ir
from .target import Target, init_llvm
from .types import I8, I32, I64, PTR, VOID, CodegenError

META_SYMBOL = "vdla_module_meta"
THREADS_SYMBOL = "vdla_num_threads"
META_FORMAT = 1


@dataclass(frozen=True)
class ParamInfo:
    """One buffer argument: name, constant shape and element dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class FuncInfo:
    name: str
    params: tuple[ParamInfo, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "params": [p.to_json() for p in self.params]}


class ModuleContext:
    """Module-wide state shared by the function emitters: declarations and names."""

    def __init__(self, name: str, target: Target):
        self.module = ir.Module(name=name)
        self.module.triple = target.triple
        self.target = target
        self.math = MathEmitter(self.module)
        self.uses_threads = False
        self._names: set[str] = set()
        threads = ir.GlobalVariable(self.module, I32, name=THREADS_SYMBOL)
        threads.initializer = ir.Constant(I32, 0)
        self._threads = threads

    def fresh_name(self, prefix: str) -> str:
        n = 0
        while f"{prefix}{n}" in self._names:
            n += 1
        self._names.add(f"{prefix}{n}")
        return f"{prefix}{n}"

    def _declare(self, name: str, ty: ir.FunctionType) -> ir.Function:
        fn = self.module.globals.get(name)
        return fn if fn is not None else ir.Function(self.module, ty, name=name)

    def libc(self, name: str) -> ir.Function:
        types = {"aligned_alloc": ir.FunctionType(PTR, [I64, I64]), "free": ir.FunctionType(VOID, [PTR])}
        return self._declare(name, types[name])

    def thread_pool(self) -> ir.Function:
        """The pool's entry point ``vdla_parallel(fn, data, n)`` (``pool.py``; defined outside the module:
        linked into an exported library, the process's one pool for the JIT)."""
        self.uses_threads = True
        return self._declare(POOL_SYMBOL, ir.FunctionType(VOID, [PTR, PTR, I32]))

    def num_threads_global(self) -> ir.GlobalVariable:
        return self._threads


def _param_info(func: PrimFunc) -> tuple[ParamInfo, ...]:
    out = []
    for p in func.params:
        if not all(isinstance(s, IntImm) for s in p.shape):
            raise CodegenError(f"parameter {p.name} of {func.name} has the symbolic shape "
                               f"{[str(s) for s in p.shape]}: the LLVM backend compiles "
                               f"constant shapes; bind the shape variables first")
        dt.to_numpy(p.dtype)
        out.append(ParamInfo(p.name, tuple(int(s.value) for s in p.shape), p.dtype))
    return tuple(out)


def _emit_func(ctx: ModuleContext, func: PrimFunc) -> FuncInfo:
    # Callers that need the exported name to equal func.name give identifiers (vdla.compiler.codegen.symbols).
    name = c_identifier(func.name)
    if name in ctx.module.globals:
        raise CodegenError(f"two functions are named {name!r}; give them distinct names")
    info = FuncInfo(name, _param_info(func))
    n = len(func.params)
    kernel = ir.Function(ctx.module, ir.FunctionType(VOID, [PTR] * n), name=f"{name}_kernel")
    kernel.linkage = "internal"
    arg_names = SymbolTable()
    for arg, p in zip(kernel.args, func.params):
        arg.name = arg_names.symbol(p.name)
        arg.add_attribute("noalias")
    em = FunctionEmitter(ctx, kernel, {p.data: a for p, a in zip(func.params, kernel.args)})
    em.stmt(func.body)
    em.finish()

    entry = ir.Function(ctx.module, ir.FunctionType(I32, [PTR]), name=name)
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    ptrs = []
    for i in range(n):
        slot = b.gep(entry.args[0], [ir.Constant(I64, i)], inbounds=True, source_etype=PTR)
        ptrs.append(b.load(slot, typ=PTR, align=8))
    b.call(kernel, ptrs)
    b.ret(ir.Constant(I32, 0))
    return info


def module_meta(target: Target, functions: Sequence[FuncInfo]) -> dict[str, Any]:
    # "needs" lists libraries to load first; the thread pool is in the module (libc's pthreads).
    return {"format": META_FORMAT, "target": target.to_json(),
            "functions": [f.to_json() for f in functions], "needs": []}


@dataclass(frozen=True)
class LLVMModule:
    """Generated (unoptimized) LLVM IR with what is needed to compile and describe it."""

    ir_text: str
    target: Target
    functions: tuple[FuncInfo, ...]
    uses_threads: bool
    """Whether it has parallel loops: it calls the thread pool ``vdla_parallel`` (``pool.py``)."""

    def meta(self) -> dict[str, Any]:
        """The JSON stored in the module's ``vdla_module_meta`` symbol."""
        return module_meta(self.target, self.functions)

    def optimized(self, opt: int = 3) -> llvm.ModuleRef:
        """Parse, verify and optimize (``O<opt>`` for this module's target machine)."""
        init_llvm()
        try:
            mod = llvm.parse_assembly(self.ir_text)
            mod.verify()
        except RuntimeError as err:
            raise CodegenError(f"the generated LLVM IR is invalid (a code generator bug): "
                               f"{err}") from None
        tm = self.target.target_machine(opt)
        mod.triple = self.target.triple
        mod.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        pto.loop_vectorization = opt >= 2
        pto.slp_vectorization = opt >= 2
        pto.loop_unrolling = opt >= 2
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return mod

    def assembly(self, opt: int = 3) -> str:
        """The host assembly (look for ``vfmadd...ps zmm`` in hot loops)."""
        return self.target.target_machine(opt).emit_assembly(self.optimized(opt))

    def object_code(self, opt: int = 3) -> bytes:
        return self.target.target_machine(opt).emit_object(self.optimized(opt))


def codegen(funcs: Sequence[PrimFunc], target: Target, name: str = "vdla") -> LLVMModule:
    """Translate lowered PrimFuncs (no blocks left) into one LLVM module for ``target``."""
    if not funcs:
        raise CodegenError("nothing to compile: pass at least one PrimFunc")
    ctx = ModuleContext(name, target)
    infos = tuple(_emit_func(ctx, f) for f in funcs)
    meta = json.dumps(module_meta(target, infos), sort_keys=True).encode() \
        + b"\0"
    g = ir.GlobalVariable(ctx.module, ir.ArrayType(I8, len(meta)), name=META_SYMBOL)
    g.global_constant = True
    g.initializer = ir.Constant(ir.ArrayType(I8, len(meta)), bytearray(meta))
    return LLVMModule(str(ctx.module), target, infos, ctx.uses_threads)


def thread_pool_module(target: Target, hidden: bool = True) -> LLVMModule:
    """The thread pool alone (``pool.py``) for ``target``: linked into every exported library with parallel
    loops (``hidden``: each library calls its own), JIT-compiled once per process for JIT modules."""
    return LLVMModule(pool_ir(target.triple, target.arch, hidden), target, (), False)
