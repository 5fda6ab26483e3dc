"""The board scripts as package data: Vivado Tcl for the Zynq boards and the ULX3S self-test top.

A package (not just a folder) so that a wheel or a non-editable install ships them and
:func:`importlib.resources.files` finds them; ``vdla_hw.fpga.boards.FPGA_SCRIPTS_DIR`` is that
location. Nothing here is Python but this marker.
"""
