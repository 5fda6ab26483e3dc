"""FPGA bitstream flows: board records and the scripts that build a bitstream for a config."""
