"""The VDLA lowering: an explicit, ordered list of passes from the scheduled program to the instruction stream.

Each pass is a pure ``PrimFunc -> PrimFunc`` function (target-dependent ones take the
target too); every intermediate program prints and runs on the TIR reference interpreter.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from vdla.compiler.tir import PrimFunc
from vdla.compiler.tir.transform import lower_blocks

from .passes import (allocate_sram, fold_alu_store, fold_bias_init, fold_bias_store, fold_requant_store, fold_uop_loop, inject_alu_op,
                     inject_dma_copy, inject_uop_scope, inject_virtual_thread, insert_dep_token, split_drain_store,
                     split_prologue_load, split_prologue_rest, unroll_stream)
from .target import VdlaTarget

Pass = Callable[[PrimFunc], PrimFunc]


def passes(target: VdlaTarget) -> list[tuple[str, Pass]]:
    """The VDLA pipeline for ``target``, in order, as (name, pass)."""
    return [
        ("lower_blocks", lower_blocks),                                    # schedule blocks -> plain statements
        ("inject_uop_scope", partial(inject_uop_scope, target=target)),   # tensorized uops -> instruction scopes
        ("fold_requant_store", fold_requant_store),                        # epilogue tail -> requantizing STORE
        ("inject_alu_op", partial(inject_alu_op, target=target)),         # fused epilogue -> in-place ALU uops
        ("fold_bias_store", fold_bias_store),                              # reset + bias ADD -> overwrite GEMM, bias STORE
        ("fold_bias_init", fold_bias_init),                                # reset + bias ADD -> MOV of the bias
        ("fold_alu_store", fold_alu_store),                                # ALU kernels: overwrite moves, round on STORE
        ("inject_dma_copy", partial(inject_dma_copy, target=target)),     # copy nests -> 2-D LOAD/STORE
        ("fold_uop_loop", partial(fold_uop_loop, target=target)),         # outer uop loops -> insn loop fields
        ("inject_virtual_thread", inject_virtual_thread),                  # interleave threads, private buffers
        ("allocate_sram", partial(allocate_sram, target=target)),         # fixed SRAM regions, capacity check
        ("unroll_stream", unroll_stream),                                  # straight-line instruction stream
        ("split_prologue_load", partial(split_prologue_load, target=target)),  # first weight LOADs + GEMMs by block
        ("split_prologue_rest", partial(split_prologue_rest, target=target)),  # the first tile's rest beside them
        ("split_drain_store", partial(split_drain_store, target=target)),  # last GEMMs + STOREs by block
        ("insert_dep_token", insert_dep_token),                            # load/compute/store synchronization
    ]


def lower(func: PrimFunc, target: VdlaTarget, dump: Callable[[str, PrimFunc], None] | None = None) -> PrimFunc:
    """Run the VDLA pipeline on a scheduled ``func``; ``dump(name, func)`` sees the program after each pass."""
    if dump is not None:
        dump("scheduled", func)
    for name, fn in passes(target):
        func = fn(func)
        if dump is not None:
            dump(name, func)
    return func
