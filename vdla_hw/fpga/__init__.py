"""Bitstreams for FPGA boards: the board table, each board's flow, and the project writers."""

from vdla_hw.fpga.boards import BOARDS, Board, ZynqPs, get_board
from vdla_hw.fpga.flow import BuildResult, build_bitstream

__all__ = ["BOARDS", "Board", "BuildResult", "ZynqPs", "build_bitstream", "get_board"]
