"""The VDLA target: memory scopes, tensor intrinsics, lowering passes, code generation and operators."""

from .build import VdlaModule, build
from .intrin import ALU_OPS, GemmIntrin, alu_uop
from .pipeline import lower, passes
from .target import SCOPES, CapacityError, MemScope, VdlaTarget

__all__ = ["ALU_OPS", "SCOPES", "CapacityError", "GemmIntrin", "MemScope", "VdlaModule", "VdlaTarget", "alu_uop",
           "build", "lower", "passes"]
