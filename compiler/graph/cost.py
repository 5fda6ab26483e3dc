"""The partitioner's cost rule: an ALU kernel goes to the VDLA only when it is faster there.

The VDLA's residual adds, pools and standalone clamps reach the ALU through identity GEMMs that do
1/BLOCK_IN of their multiply-accumulates usefully (a max pool's every window tap is a whole GEMM):
their VDLA form keeps an int8 chain on the accelerator but can be far slower than the host
(ResNet-18's max pool: ~47x).  :func:`weigh_kernel` compares, for one compiled VDLA kernel:

* **VDLA time**: :func:`program_cycles`, the cycle model's per-instruction costs summed over the
  program (GEMM and ALU executor cycles as :mod:`vdla.simulator.cycle.compute` counts them; every
  LOAD / STORE as its bytes over the DRAM bus plus a quarter of the DRAM latency per row, as the
  schedule's estimate does), the busier of the compute unit and the shared DRAM port, at the config
  clock;
* **host time**: :func:`host_ops` (the kernel's element operations: a max pool's window taps in int8, a
  residual add's two multiplies, two adds, shift and clamp per element in int32, ...) at one vector
  instruction over all of the host's lanes per cycle at its clock (:class:`HostModel`: the CPU being
  compiled for; its peak, so the estimate is a lower bound of the host's time), **plus the
  transfers** the host placement adds: the kernel's int8 operands and result cross between the
  accelerator's DRAM and the host, priced at the VDLA's own bus rate.

Kernels anchored on a conv2d / dense / batch_matmul are not weighed: their multiply-accumulates are
useful ones, and a peak-rate host estimate of a GEMM (every lane busy every cycle) says nothing about
the CPU kernels this compiler generates for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, GemmInsn, Insn, MemInsn, MemType

from vdla.compiler.codegen.llvm import current_target
from vdla.compiler.codegen.llvm.target import Target, host_target
from vdla.compiler.graph.ir import Node, TensorType
from vdla.compiler.graph.layout import parse_layout
from vdla.simulator.cycle.compute import alu_cycles, gemm_cycles

#: Kernels the rule weighs (one op each; the identity-GEMM forms of :mod:`~vdla.compiler.graph.lower_vdla_alu`).
WEIGHED_OPS = ("qadd", "qavg_pool2d", "max_pool2d", "relu", "clip")
#: The host clock assumed for a CPU target whose clock cannot be read here (a board's ARM core: the
#: design's boards run theirs at 650 MHz - 1.2 GHz).
BOARD_HOST_HZ = 1.0e9
#: int8 lanes of the board host's vectors when the CPU target is not the board's own (a 128-bit NEON register).
BOARD_HOST_LANES = 16
#: Which host the rule judges a kernel against: ``board`` (the default for ``--target vdla``: a model built for the
#: VDLA runs beside a board's ~1 GHz ARM core) or ``native`` (this machine, its detected clock).
COST_HOSTS = ("board", "native")


@dataclass(frozen=True)
class HostModel:
    """What the cost rule assumes of the host: int8 lanes per vector instruction and the clock."""

    lanes: int
    """int8 lanes of one vector instruction (a quarter of them for int32 arithmetic)."""
    clock_hz: float
    source: str
    """Where the clock came from (for the report)."""

    def seconds(self, int8_ops: int, int32_ops: int = 0) -> float:
        """One vector instruction per cycle over every lane: the host's peak."""
        return (int8_ops + 4 * int32_ops) / (self.lanes * self.clock_hz)


def detected_clock_hz() -> float | None:
    """This machine's highest CPU clock (cpufreq's maximum, else /proc/cpuinfo's MHz), or None."""
    try:
        return int(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().split()[0]) * 1e3
    except (OSError, ValueError, IndexError):
        pass
    try:
        mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
               if line.lower().startswith("cpu mhz")]
    except (OSError, ValueError, IndexError):
        return None
    return max(mhz) * 1e6 if mhz else None


def host_model(target: Target | None = None, where: str = "native") -> HostModel:
    """The host of a CPU target (default: the one being compiled for).

    ``native``: the target's int8 lanes, and this machine's clock when the target is this machine's
    architecture, else :data:`BOARD_HOST_HZ`.  ``board``: the board's host -- a cross-compiled target's own
    lanes, else :data:`BOARD_HOST_LANES` (the code runs here, but the model is built for a board), at
    :data:`BOARD_HOST_HZ`.  ``VDLA_HOST_HZ`` overrides the clock of either."""
    if where not in COST_HOSTS:
        raise ValueError(f"unknown cost host {where!r}; use one of {COST_HOSTS}")
    tgt = target or current_target()
    native = tgt.arch == host_target().arch
    lanes = BOARD_HOST_LANES if where == "board" and native else tgt.vector_lanes(8)
    override = os.environ.get("VDLA_HOST_HZ")
    if override:
        return HostModel(lanes, float(override), "VDLA_HOST_HZ")
    if where == "native" and native:
        hz = detected_clock_hz()
        if hz:
            return HostModel(lanes, hz, "detected")
    return HostModel(lanes, BOARD_HOST_HZ, "board host (assumed)")


def _elem_bytes(cfg: HwConfig, mem: MemType) -> int:
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes, MemType.INP: cfg.inp_elem_bytes,
            MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}[mem]


def program_cycles(cfg: HwConfig, insns: Sequence[Insn]) -> int:
    """A static estimate of a program's cycles (see the module doc): the busier of compute and DRAM."""
    t = cfg.timing
    compute = memory = 0.0
    for insn in insns:
        if isinstance(insn, GemmInsn):
            compute += gemm_cycles(t, insn) + t.insn_overhead
        elif isinstance(insn, AluInsn):
            compute += alu_cycles(t, insn) + t.insn_overhead
        elif isinstance(insn, MemInsn):
            nbytes = insn.y_size * insn.x_size * _elem_bytes(cfg, insn.mem_type)
            memory += nbytes / cfg.bus_bytes + insn.y_size * t.dram_latency / 4
    return int(math.ceil(max(compute, memory)))


def host_ops(op: Node, input_types: Sequence[TensorType]) -> tuple[int, int]:
    """The (int8, int32) element operations the host does for one op of :data:`WEIGHED_OPS`."""
    out = math.prod(op.type.shape)
    if op.op == "max_pool2d":
        kh, kw = op.attrs["pool_size"]
        return out * kh * kw, 0
    if op.op == "qadd":
        return 0, out * 6  # two multiplies (or shifts), two adds, the shift and the clamp, in int32
    if op.op == "qavg_pool2d":
        kh, kw = op.attrs["pool_size"]
        return 0, out * (kh * kw + 3)  # the window sums, then add, multiply, shift
    return out, 0  # a clamp


def host_kernel_seconds(ops: Sequence[Node], input_types: dict[str, TensorType], host: HostModel) -> float:
    """A peak-rate estimate of a host kernel made of ``ops`` (for whole-model figures such as ``vdla dse
    --model``, not for placing anything): a conv2d / dense / matmul's multiply-accumulates and every other op's
    output elements, one vector instruction over all lanes per cycle (int8 values at the int8 lanes, wider ones at
    a quarter of them).  ``input_types`` gives the type of every value the ops read."""
    int8 = wide = 0
    for op in ops:
        out = math.prod(op.type.shape)
        if op.op in ("conv2d", "dense", "batch_matmul", "matmul"):
            w = input_types[op.inputs[1]]
            layout = op.attrs.get("kernel_layout")
            if op.op in ("conv2d", "dense") and layout:
                o = parse_layout(layout).primal_shape(w.shape)[0]
                wide += out * math.prod(w.shape) // max(1, o)
            else:
                wide += out * input_types[op.inputs[0]].shape[-1]
        elif op.type.dtype == "int8":
            int8 += out
        else:
            wide += out
    return host.seconds(int8, wide)


@dataclass(frozen=True)
class CostDecision:
    """The two sides of the rule for one kernel, in seconds."""

    vdla_cycles: int
    vdla_s: float
    host_s: float
    transfer_s: float
    host: HostModel

    @property
    def on_vdla(self) -> bool:
        return self.vdla_s <= self.host_s + self.transfer_s

    def reason(self, name: str) -> str:
        """The partition report's reason when the kernel stays on the host."""
        return (f"cost: {name} takes {self.vdla_s * 1e3:.3f} ms on the VDLA ({self.vdla_cycles} cycles, static "
                f"estimate) against {1e3 * (self.host_s + self.transfer_s):.3f} ms on the host "
                f"({self.host_s * 1e3:.3f} ms at {self.host.lanes} int8 lanes x {self.host.clock_hz / 1e9:.2f} GHz "
                f"[{self.host.source}] + {self.transfer_s * 1e3:.3f} ms moving its operands and result over the "
                f"VDLA's DRAM bus); build with placement='all' to keep it on the VDLA")


def weigh_kernel(op: Node, input_types: Sequence[TensorType], insns: Sequence[Insn], cfg: HwConfig,
                 host: HostModel) -> CostDecision:
    """The cost rule's figures for a compiled VDLA kernel of one op (``insns`` its program)."""
    cycles = program_cycles(cfg, insns)
    nbytes = sum(math.prod(t.shape) for t in input_types) + math.prod(op.type.shape)  # int8 operands and result
    return CostDecision(cycles, cycles / (cfg.clock_mhz * 1e6), host.seconds(*host_ops(op, input_types)),
                        nbytes / (cfg.bus_bytes * cfg.clock_mhz * 1e6), host)


__all__ = ["BOARD_HOST_HZ", "BOARD_HOST_LANES", "COST_HOSTS", "CostDecision", "HostModel", "WEIGHED_OPS", "detected_clock_hz", "host_kernel_seconds", "host_model",
           "host_ops",
           "program_cycles", "weigh_kernel"]
