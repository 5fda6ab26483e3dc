"""The VDLA lowering passes, one per module (ordered in ``vdla.compiler.vdla.pipeline``)."""

from .allocate_sram import allocate_sram
from .common import VdlaLoweringError
from .fold_alu_store import fold_alu_store
from .fold_bias_init import fold_bias_init
from .fold_bias_store import fold_bias_store
from .fold_requant_store import fold_requant_store
from .fold_uop_loop import fold_uop_loop
from .inject_alu_op import inject_alu_op
from .inject_dma_copy import inject_dma_copy
from .inject_uop_scope import inject_uop_scope
from .inject_virtual_thread import inject_virtual_thread
from .insert_dep_token import insert_dep_token
from .split_drain_store import split_drain_store
from .split_prologue_load import split_prologue_load
from .split_prologue_rest import split_prologue_rest
from .unroll_stream import unroll_stream

__all__ = ["VdlaLoweringError", "allocate_sram", "fold_alu_store", "fold_bias_init", "fold_bias_store", "fold_requant_store", "fold_uop_loop", "inject_alu_op", "inject_dma_copy",
           "inject_uop_scope", "inject_virtual_thread", "insert_dep_token", "split_drain_store", "split_prologue_load",
           "split_prologue_rest", "unroll_stream"]
