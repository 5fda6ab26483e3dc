"""The Verilator harness of ``vdla_top``: the RTL plus a C++ DRAM model in one shared library.

``build`` compiles and caches the library per config; ``sim.RtlSim`` drives it through
ctypes (load DRAM, start over the AXI-lite registers, run the clock loop in C++, read
DRAM and the cycle counter back).  ``vdla.runtime.backends.rtl`` is built on top of it.
"""

from vdla_hw.harness.build import harness_library
from vdla_hw.harness.sim import DramLatency, HarnessError, RtlSim, RunStatus

__all__ = ["DramLatency", "HarnessError", "RtlSim", "RunStatus", "harness_library"]
