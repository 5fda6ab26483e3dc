"""Benchmark: simulated RTL cycles per second on three ways of driving the Verilated vdla_top.

* **ctypes + C++ loop** (the ``rtl`` backend): the clock loop and the DRAM model run in
  C++ inside the harness library; Python crosses ctypes a handful of times per program.
* **Python per cycle** (pyverilator-style): the same Verilated model, but Python pokes
  and peeks the AXI pins through ctypes every cycle and answers DRAM with
  :class:`vdla_hw.harness.py_dram.PinAxiDram` (the Python twin of the C++ model that
  ``vdla hw shell`` uses) -- the way pyverilator drives a design.
* **cocotb** (the system tests): cocotb 2.1 + cocotbext-axi's AXI RAM and AXI-lite
  master over VPI, no back-pressure.

All three run the same program in the same process run, and every run's final DRAM is
checked against fsim.  The Python paths only run the smaller program (they would take
minutes on the ResNet-18-sized one).  Target: >= 1,000,000 cycles/s on ``default`` for
the C++ loop.  Run: ``python bench/rtl_speed.py [--repeat N] [--skip-cocotb]``; writes
``bench/results/rtl_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from vdla.runtime import run
from vdla.runtime.program import Program
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config
from vdla_hw.harness import DramLatency, RtlSim
from vdla_hw.harness.py_dram import PinAxiDram

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # already there when this runs as a script
from host import host_line, host_record  # noqa: E402

TARGET = 1_000_000


class SimPins:
    """Name-based pin access to an :class:`RtlSim` (the ``Pins`` of :class:`PinAxiDram`).

    The AXI data ports are as wide as the bus, wider than the 64 bits ``peek``/``poke``
    carry, so they go through bytes.
    """

    def __init__(self, sim: RtlSim) -> None:
        self.sim = sim
        self.wide = {sim.port(name) for name in ("m_axi_rdata", "m_axi_wdata")}
        self.bus = sim.cfg.bus_bytes

    def peek(self, name: str) -> int:
        port = self.sim.port(name)
        if port in self.wide:
            return int.from_bytes(self.sim.peek_bytes(port, self.bus), "little")
        return self.sim.peek(port)

    def poke(self, name: str, value: int) -> None:
        port = self.sim.port(name)
        if port in self.wide:
            self.sim.poke_bytes(port, value.to_bytes(self.bus, "little"))
        else:
            self.sim.poke(port, value)


def clock(sim: RtlSim, pins: SimPins, dram: PinAxiDram, axil: dict[str, int]) -> dict[str, int]:
    """One clock cycle in ``Harness::tick``'s order; ``axil`` pokes AXI-lite inputs.  Returns the
    AXI-lite outputs sampled before the rising edge."""
    for name, value in axil.items():
        pins.poke(name, value)
    dram.drive()
    sim.eval_clock(0)
    dram.sample()
    seen = {name: pins.peek(name) for name in ("s_axil_awready", "s_axil_bvalid")}
    sim.eval_clock(1)
    return seen


def write_reg(sim: RtlSim, pins: SimPins, dram: PinAxiDram, name: str, value: int) -> None:
    """An AXI-lite register write, pin by pin."""
    axil = {"s_axil_awaddr": regmap.offset(name), "s_axil_wdata": value, "s_axil_wstrb": 0xF,
            "s_axil_awvalid": 1, "s_axil_wvalid": 1, "s_axil_bready": 1}
    while not (seen := clock(sim, pins, dram, axil))["s_axil_awready"]:
        pass
    axil = {"s_axil_awvalid": 0, "s_axil_wvalid": 0, "s_axil_bready": 1}
    while not seen["s_axil_bvalid"]:
        seen = clock(sim, pins, dram, axil)


def python_loop(program: Program, max_cycles: int) -> tuple[int, float, float, np.ndarray]:
    """Run ``program`` with Python driving every cycle; returns (cycles, wall s, CPU s, final DRAM)."""
    cfg = program.config
    with RtlSim(cfg) as sim:
        pins, latency = SimPins(sim), DramLatency.of(cfg)
        dram = PinAxiDram(pins, cfg.bus_bytes, latency.read, latency.write)
        dram.load(program.dram)
        write_reg(sim, pins, dram, "WINDOW_LIMIT", program.dram.size)
        write_reg(sim, pins, dram, "INSN_ADDR", program.insn_addr)
        write_reg(sim, pins, dram, "INSN_COUNT", program.insn_count)
        start, cpu = time.perf_counter(), time.process_time()
        first = dram.now
        write_reg(sim, pins, dram, "CONTROL", regmap.CONTROL_START)
        done = sim.port("done")
        while not sim.peek(done):
            if dram.now - first > max_cycles:
                raise SystemExit(f"the Python-driven run did not finish in {max_cycles} cycles")
            clock(sim, pins, dram, {})
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        return dram.now - first, seconds, cpu, dram.image(program.dram.size)


def cocotb_loop(name: str, program: Program) -> tuple[int, float]:
    """Run ``program`` through the cocotb system-test path without pauses; (cycles, seconds)."""
    sys.path.insert(0, str(ROOT / "tests" / "rtl" / "system"))
    from system_runner import run_on_cocotb  # type: ignore[import-not-found]

    res = run_on_cocotb(f"bench-{name}", program, pause=0.0)
    return res.sim_cycles, res.wall_seconds


def programs(cfg: HwConfig) -> dict[str, tuple[Program, bool]]:
    """Name -> (program, whether the Python paths run it too)."""
    small, _ = tiled_gemm_program(cfg, 4 * 16 * cfg.batch, 16 * cfg.block_in, 16 * cfg.block_out, virtual_threads=2)
    big, _ = tiled_gemm_program(cfg, 784, 1152, 128, virtual_threads=2)  # ResNet-18 conv3_x 3x3 as a GEMM
    return {"gemm 64x256x256 vt2": (small, True), "resnet18 conv3 784x1152x128 vt2": (big, False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="default")
    parser.add_argument("--repeat", type=int, default=3, help="C++-loop runs per program; the best is kept (default 3)")
    parser.add_argument("--skip-cocotb", action="store_true", help="leave out the cocotb path (it builds its own model)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "rtl_speed.json"))
    args = parser.parse_args()

    cfg = load_config(args.config)
    load = os.getloadavg()[0]
    rows = []
    cases = programs(cfg)
    steps = sum(1 + (2 - args.skip_cocotb) * python for _, python in cases.values())
    with tqdm(total=steps, desc="rtl speed") as bar:
        for name, (program, python) in cases.items():
            expected = run(program, "fsim").dram
            best = None
            for _ in range(args.repeat):
                result = run(program, "rtl")
                if not np.array_equal(result.dram, expected):
                    raise SystemExit(f"{name}: the rtl backend's DRAM differs from fsim")
                if best is None or result.extra["wall_seconds"] < best.extra["wall_seconds"]:
                    best = result
            bar.update()
            row = {"program": name, "rtl_cycles": best.cycles, "cpp_cycles": best.extra["simulated_cycles"],
                   "cpp_seconds": best.extra["wall_seconds"], "cpp_cycles_per_s": best.extra["cycles_per_second"],
                   "cpp_cpu_seconds": best.extra["cpu_seconds"], "cpp_cycles_per_cpu_s": best.extra["cycles_per_cpu_second"]}
            if python:
                cycles, seconds, cpu, dram = python_loop(program, 20 * best.cycles)
                if not np.array_equal(dram, expected):
                    raise SystemExit(f"{name}: the Python-driven run's DRAM differs from fsim")
                row.update({"python_cycles": cycles, "python_seconds": seconds, "python_cycles_per_s": cycles / seconds,
                            "python_cpu_seconds": cpu, "python_cycles_per_cpu_s": cycles / cpu})
                bar.update()
                if not args.skip_cocotb:
                    cycles, seconds = cocotb_loop(name.split()[0], program)
                    row.update({"cocotb_cycles": cycles, "cocotb_seconds": seconds, "cocotb_cycles_per_s": cycles / seconds})
                    bar.update()
            rows.append(row)

    def rate(r: dict, key: str) -> str:
        return f"{r[key] / 1e3:>10,.1f}" if key in r else f"{'-':>10}"

    header = (f"{'program':<34} {'RTL cycles':>10} {'C++ kc/s':>10} {'C++ kc/cpu-s':>12} {'Python kc/s':>11} "
              f"{'cocotb kc/s':>11} {'C++/Python':>10} {'C++/cocotb':>10}")
    print(f"\n{host_line()}")
    print(f"Simulated cycles per second of vdla_top ({cfg.name}), one thread; target >= {TARGET:,} for the C++ loop")
    print(f"(kc/s = per wall-clock second, kc/cpu-s = per CPU second of this process; load average at start "
          f"{load:.1f} on {os.cpu_count()} cores)")
    print(header)
    print("-" * len(header))
    for r in rows:
        vs_py = f"{r['cpp_cycles_per_s'] / r['python_cycles_per_s']:>9.0f}x" if "python_cycles_per_s" in r else f"{'-':>10}"
        vs_co = f"{r['cpp_cycles_per_s'] / r['cocotb_cycles_per_s']:>9.0f}x" if "cocotb_cycles_per_s" in r else f"{'-':>10}"
        print(f"{r['program']:<34} {r['rtl_cycles']:>10,} {rate(r, 'cpp_cycles_per_s')} {rate(r, 'cpp_cycles_per_cpu_s'):>12} "
              f"{rate(r, 'python_cycles_per_s'):>11} {rate(r, 'cocotb_cycles_per_s'):>11} {vs_py} {vs_co}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": cfg.name, "target_cycles_per_s": TARGET, "host": host_record(),
                               "load_average": load, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
