"""TIR -> LLVM IR -> native code for the host CPU (or a named x86 CPU).

``codegen`` translates lowered PrimFuncs to an ``LLVMModule``; ``jit`` compiles it in
memory, ``export_library`` writes a shared library the runtime loads without the compiler.
"""
from .jit import export_library, jit
from .module import FuncInfo, LLVMModule, ParamInfo, codegen
from .target import Target, TargetError, host_features, host_target, parse_target
from .types import CodegenError

__all__ = ["CodegenError", "FuncInfo", "LLVMModule", "ParamInfo", "Target", "TargetError",
           "codegen", "export_library", "host_features", "host_target", "jit", "parse_target"]
