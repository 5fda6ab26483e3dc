"""TIR passes, one per module; each is a pure ``PrimFunc -> PrimFunc`` function."""
from .align_storage import align_storage
from .compact_buffer import compact_buffer
from .flatten_storage import flatten_storage
from .inject_double_buffer import inject_double_buffer
from .lower_blocks import lower_blocks
from .lower_virtual_thread import lower_virtual_thread
from .partition_loop import partition_loop
from .remove_no_op import remove_no_op
from .simplify import simplify
from .unroll_loop import unroll_loop
from .vectorize_loop import vectorize_loop

__all__ = ["align_storage", "compact_buffer", "flatten_storage", "inject_double_buffer", "lower_blocks",
           "lower_virtual_thread", "partition_loop", "remove_no_op", "simplify", "unroll_loop",
           "vectorize_loop"]
