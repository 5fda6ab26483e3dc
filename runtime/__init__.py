"""The VDLA runtime: program bundles, a device API and backends found by name.

``runtime`` never imports ``compiler``: a board runs the runtime alone.
"""

from vdla.runtime.backends import BackendError, BackendOption, backend_names, get_backend, run
from vdla.runtime.device import Device
from vdla.runtime.memory import BufferSpec, DramImage, pack_matrix, unpack_matrix
from vdla.runtime.program import Program, ProgramBuilder
from vdla.runtime.result import RunResult

__all__ = [
    "BackendError", "BackendOption", "BufferSpec", "Device", "DramImage", "Program", "ProgramBuilder", "RunResult",
    "backend_names", "get_backend", "pack_matrix", "run", "unpack_matrix",
]
