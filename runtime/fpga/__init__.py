"""FPGA boards through the pynq API: :func:`open_board` loads a bitstream folder, :class:`Board` runs programs.

The contract with the device pool (issue 13): ``open_board(bitstream_dir, *, emulate=None) -> Board``;
``Board`` has ``board``, ``config``, ``config_id``, ``build_id``, ``run(program) -> RunResult`` and
``close()``. With ``emulate=True`` (or ``VDLA_FPGA_EMULATE=1``) the board is the Verilated RTL of the
folder's config (:mod:`vdla.runtime.fpga.emulated_pynq`). See docs/fpga.md, "The fpga backend".
"""

from vdla.runtime.fpga.board import (
    EMULATE_ENV,
    Board,
    FpgaTimeoutError,
    emulate_default,
    open_board,
)

__all__ = ["EMULATE_ENV", "Board", "FpgaTimeoutError", "emulate_default", "open_board"]
