"""TIR -> LLVM IR -> native code for the host CPU (or a named x86 CPU).

``codegen`` translates lowered PrimFuncs to an ``LLVMModule``; ``jit`` compiles it in
memory, ``export_library`` writes a shared library the runtime loads without the compiler.
"""
from .jit import export_library, jit
from .module import FuncInfo, LLVMModule, ParamInfo, codegen
from .target import (Target, TargetError, cpu_simd_features, current_target, host_features, host_target,
                     parse_target, using_target)
from .types import CodegenError

__all__ = ["CodegenError", "FuncInfo", "LLVMModule", "ParamInfo", "Target", "TargetError", "codegen",
           "cpu_simd_features", "current_target", "export_library", "host_features", "host_target", "jit",
           "parse_target", "using_target"]
