"""Every backend detects the same program faults, with the same error class, naming the same instruction.

Each fault is a small program built with :class:`ProgramBuilder` whose faulting instruction
is not the first one; it runs on fsim, cycle, rtl and fpga (the emulated board; the tiny config:
one cached Verilator build per backend serves every case). Range faults (SRAM blocks and micro-op
loops past a buffer, DMA outside the DRAM address window) run with the functional pre-check off
on rtl and fpga: the design itself stops and the driver turns its FAULT registers into fsim's
error. Reads of never-written SRAM are found by the pre-check only, deadlocks and watchdog expiry
on the design itself (docs/rtl.md, "Faults"); the fpga backend's pre-check also refuses deadlocks
(docs/fpga.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

from vdla.runtime import run
from vdla.runtime.program import Program, ProgramBuilder
from vdla.simulator.errors import (
    DeadlockError,
    IllegalInstructionError,
    MemoryAccessError,
    SimTimeoutError,
    UninitializedReadError,
)
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import ProgramFaultError
from vdla_hw.isa import INSN_BYTES, AluOp, MemType, Uop, opcode_of

BACKENDS = ("fsim", "cycle", "rtl", "fpga")
_ON_BOARD = {"fpga": {"emulate": True}}
"""Options that put a backend on the machine here: the fpga backend on the emulated board (the RTL)."""


@pytest.fixture(scope="module")
def cfg() -> HwConfig:
    return load_config("tiny")


def _with_data(cfg: HwConfig) -> tuple[ProgramBuilder, Any, Any, Any]:
    """A builder with an 8-tile input, an 8-tile weight and an 8-tile output buffer in DRAM."""
    pb = ProgramBuilder(cfg)
    rng = np.random.default_rng(0)
    inp = pb.alloc("inp", "inp", (8 * cfg.batch, cfg.block_in), rng.integers(-8, 8, (8 * cfg.batch, cfg.block_in)))
    wgt = pb.alloc("wgt", "wgt", (8 * cfg.block_out, cfg.block_in), rng.integers(-8, 8, (8 * cfg.block_out, cfg.block_in)))
    out = pb.alloc("out", "out", (8 * cfg.batch, cfg.block_out))
    return pb, inp, wgt, out


def _gemm_program(cfg: HwConfig, *, load_inp: bool = True, reset: bool = True, acc_uop: int = 0,
                  iter_out: int = 1) -> Program:
    """LOAD UOP; LOAD INP; LOAD WGT (push); [GEMM reset]; GEMM (pop, push); STORE; FINISH.

    ``acc_uop`` is the micro-op's accumulator index and ``iter_out`` the GEMMs' outer loop
    (walking one accumulator per iteration), so the loop can be made to leave the buffer.
    """
    pb, inp, wgt, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(acc_uop, 0, 0)]))  # 0
    if load_inp:
        pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)
    pb.load(MemType.WGT, 0, wgt.addr, 1, 1, 1, push_next=True)
    loop = dict(iter_out=iter_out, dst_factor=(1, 0))
    if reset:
        pb.gemm(0, 1, reset=True, pop_prev=True, **loop)
    pb.gemm(0, 1, pop_prev=not reset, push_next=True, **loop)
    pb.store(acc_uop, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


@dataclass(frozen=True)
class Fault:
    """A faulty program and what every backend must say about it."""

    build: Callable[[HwConfig], Program]
    error: type[ProgramFaultError]
    index: int
    fragment: str
    options: Callable[[str], dict[str, Any]] = lambda backend: {}


def _load_past_sram(cfg: HwConfig) -> Program:
    pb, inp, _, _ = _with_data(cfg)
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)
    pb.load(MemType.INP, cfg.inp_buff_depth - 2, inp.addr, 1, 4, 4, push_next=True)  # 1: tiles depth-2 .. depth+1
    pb.finish(pop_prev=True)
    return pb.build()


def _load_past_dram(cfg: HwConfig) -> Program:
    pb, inp, _, _ = _with_data(cfg)
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)
    pb.load(MemType.WGT, 0, 1 << 15, 2, 1, 1, push_next=True)  # 1: far beyond the image
    pb.finish(pop_prev=True)
    return pb.build()


def _acc_overrun(cfg: HwConfig) -> Program:
    return _gemm_program(cfg, acc_uop=cfg.acc_buff_depth - 2, iter_out=4)  # reset GEMM (3) walks past the end


def _gemm_src_overrun(cfg: HwConfig) -> Program:
    """The GEMM's input index walks past the input buffer at iteration 2 (the accumulators stay inside)."""
    pb, inp, wgt, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, cfg.inp_buff_depth - 2, 0)]))  # 0
    pb.load(MemType.INP, cfg.inp_buff_depth - 2, inp.addr, 1, 2, 2)
    pb.load(MemType.WGT, 0, wgt.addr, 1, 1, 1, push_next=True)
    pb.gemm(0, 1, reset=True, pop_prev=True, iter_out=4, dst_factor=(1, 0))
    pb.gemm(0, 1, push_next=True, iter_out=4, dst_factor=(1, 0), src_factor=(1, 0))  # 4: INP element depth
    pb.store(0, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


def _store_past_sram(cfg: HwConfig) -> Program:
    pb, _, _, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.gemm(0, 1, reset=True, push_next=True)
    pb.store(cfg.acc_buff_depth - 1, out.addr, 1, 2, 2, pop_prev=True, push_prev=True)  # 2: ACC depth-1, depth
    pb.finish(pop_next=True)
    return pb.build()


def _store_outside_window(cfg: HwConfig) -> Program:
    """A STORE inside the DRAM image but outside the window the job is given (its input data)."""
    pb, inp, _, _ = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.gemm(0, 1, reset=True, push_next=True)
    pb.store(0, inp.addr, 1, 1, 1, pop_prev=True, push_prev=True)  # 2: writes over the input
    pb.finish(pop_next=True)
    return pb.build()


def _window_past_input(backend: str) -> dict[str, Any]:
    """A window that leaves out the first 64 bytes of the image, where the input lives."""
    return {"window": (64, _store_outside_window(load_config("tiny")).dram.size)}


def _fetch_outside_window(backend: str) -> dict[str, Any]:
    """A window that ends before the instruction stream."""
    return {"window": (0, _gemm_program(load_config("tiny")).insn_addr)}


def _unloaded_input(cfg: HwConfig) -> Program:
    return _gemm_program(cfg, load_inp=False)  # GEMM 3 reads INP tile 0, never loaded


def _unreset_accumulator(cfg: HwConfig) -> Program:
    return _gemm_program(cfg, reset=False)  # GEMM 3 accumulates into ACC tile 0, never written


def _store_of_unwritten(cfg: HwConfig) -> Program:
    pb, _, _, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.gemm(0, 1, reset=True)  # writes ACC tile 0
    pb.alu(AluOp.ADD, 0, 1, imm=1, push_next=True)
    pb.store(0, out.addr, 1, 2, 2, pop_prev=True, push_prev=True)  # 3: ACC tile 1 was never written
    pb.finish(pop_next=True)
    return pb.build()


def _alu_unwritten_operand(cfg: HwConfig) -> Program:
    pb, _, _, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 1, 0)]))
    pb.gemm(0, 1, reset=True)  # writes ACC tile 0 only
    pb.alu(AluOp.ADD, 0, 1, push_next=True)  # 2: acc[0] += acc[1], never written
    pb.store(0, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


def _unloaded_uop(cfg: HwConfig) -> Program:
    pb, _, _, out = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))  # micro-op 0 only
    pb.gemm(0, 2, reset=True, push_next=True)  # 1: micro-op 1 was never loaded
    pb.store(0, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


def _token_underflow(cfg: HwConfig) -> Program:
    pb, inp, _, _ = _with_data(cfg)
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)  # pushes nothing
    pb.gemm(0, 1, reset=True, pop_prev=True)  # 2: pops l2c, which no instruction pushes
    pb.finish()
    return pb.build()


def _unknown_opcode(cfg: HwConfig) -> Program:
    good = _gemm_program(cfg)
    image = good.dram.copy()
    at = good.insn_addr + 3 * INSN_BYTES
    image[at] = (image[at] & 0xF8) | 7  # opcode 7 in the low 3 bits of instruction 3
    return Program(cfg, good.instructions, image, good.insn_addr, good.buffers)


def _watchdog_options(backend: str) -> dict[str, Any]:
    return {"fsim": {"max_steps": 3}, "cycle": {"max_cycles": 20}, "rtl": {"max_cycles": 20}}[backend]


FAULTS: dict[str, Fault] = {
    "load_past_sram": Fault(_load_past_sram, MemoryAccessError, 1, "INP SRAM elements"),
    "load_past_dram": Fault(_load_past_dram, MemoryAccessError, 1, "outside the"),
    "acc_overrun": Fault(_acc_overrun, MemoryAccessError, 3, "ACC SRAM element"),
    "gemm_src_overrun": Fault(_gemm_src_overrun, MemoryAccessError, 4, "iteration 2 (of 4, in i0/i1/uop order) "
                              "addresses INP SRAM element"),
    "store_past_sram": Fault(_store_past_sram, MemoryAccessError, 2, "ACC (stored as OUT) SRAM elements"),
    "store_outside_window": Fault(_store_outside_window, MemoryAccessError, 2, "outside the DRAM window [64, ",
                                  _window_past_input),
    "fetch_outside_window": Fault(_gemm_program, MemoryAccessError, -1, "the instruction stream of 7 instructions",
                                  _fetch_outside_window),
    "unloaded_input": Fault(_unloaded_input, UninitializedReadError, 3, "reads INP SRAM element 0, which no instruction"),
    "unreset_accumulator": Fault(_unreset_accumulator, UninitializedReadError, 3, "reads ACC SRAM element 0"),
    "store_of_unwritten": Fault(_store_of_unwritten, UninitializedReadError, 3, "reads ACC SRAM element 1"),
    "alu_unwritten_operand": Fault(_alu_unwritten_operand, UninitializedReadError, 2, "reads ACC SRAM element 1"),
    "unloaded_uop": Fault(_unloaded_uop, UninitializedReadError, 1, "reads UOP SRAM element 1"),
    "token_underflow": Fault(_token_underflow, DeadlockError, 2, "GEMM"),
    "unknown_opcode": Fault(_unknown_opcode, IllegalInstructionError, 3, "unknown opcode 7"),
    "watchdog": Fault(_gemm_program, SimTimeoutError, -1, "watchdog", _watchdog_options),
}


# The fpga backend's watchdog is wall-clock time on a board whose driver cannot see which
# instruction each module is on; tests/fpga/test_fpga_backend.py tests it on a program that never ends.
@pytest.mark.parametrize("name,backend", [(n, b) for n in FAULTS for b in BACKENDS if (n, b) != ("watchdog", "fpga")])
def test_backends_agree_on_fault(cfg: HwConfig, name: str, backend: str) -> None:
    fault = FAULTS[name]
    program = fault.build(cfg)
    options = {**fault.options(backend), **_ON_BOARD.get(backend, {})}
    if fault.error is MemoryAccessError and backend in ("rtl", "fpga"):
        options["no_precheck"] = True  # the design's own checks find every range fault
    if "window" in options and backend == "fpga":
        pytest.skip("a board's window is its job buffer; the fpga backend takes no --window")
    with pytest.raises(fault.error) as info:
        run(program, backend, **options)
    text = str(info.value)
    assert fault.fragment in text
    if fault.index >= 0:  # the instruction's index, then its disassembly (or the undecodable word)
        shown = "word 0x" if fault.error is IllegalInstructionError else opcode_of(program.instructions[fault.index]).name
        assert f"instruction {fault.index} ({shown}" in text
    else:  # the watchdog names where the machine was, which differs by backend but is an instruction
        assert "instruction " in text
    # The RTL detects range faults, deadlocks and its watchdog itself; reads of never-written SRAM
    # only through the pre-check. A board would hang on a deadlock until the next bitstream load:
    # the fpga pre-check refuses it.
    found_by_precheck = (backend == "rtl" and fault.error is UninitializedReadError) or (
        backend == "fpga" and fault.error in (UninitializedReadError, DeadlockError))
    assert ("functional pre-check" in text) == found_by_precheck


@pytest.mark.parametrize("name", [n for n, f in FAULTS.items() if f.error is MemoryAccessError])
def test_rtl_fault_message_is_fsims(cfg: HwConfig, name: str) -> None:
    """The RTL's own fault (pre-check off) gives fsim's message word for word, and the design
    stopped by itself: its FAULT registers name the instruction."""
    fault = FAULTS[name]
    program = fault.build(cfg)
    options = fault.options("fsim")
    with pytest.raises(MemoryAccessError) as want:
        run(program, "fsim", **options)
    with pytest.raises(MemoryAccessError) as got:
        run(program, "rtl", no_precheck=True, **options)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fault_free_program_runs_everywhere(cfg: HwConfig, backend: str) -> None:
    """The programs above differ from a correct one by a single change: the correct one runs
    on every backend with the same result, so the faults are what each backend rejects."""
    program = _gemm_program(cfg)
    np.testing.assert_array_equal(run(program, backend, **_ON_BOARD.get(backend, {})).dram, run(program, "fsim").dram)


def test_zeroed_sram_opt_in_accepts_unwritten_reads(cfg: HwConfig) -> None:
    """Hand-made fsim/cycle tests can ask for SRAM that starts at zero; the default rejects the read."""
    from vdla.simulator.cycle import run_cycle
    from vdla.simulator.fsim import run_fsim

    program = _unreset_accumulator(cfg)
    fsim = run_fsim(cfg, program.instructions, program.dram, zeroed_sram=True)
    cycle = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr, zeroed_sram=True)
    np.testing.assert_array_equal(fsim.dram, cycle.dram)
    correct = _gemm_program(cfg)  # the same GEMM after a reset
    np.testing.assert_array_equal(program.read("out", fsim.dram), correct.read("out", run(correct, "fsim").dram))


def test_cli_reports_a_fault_as_one_line_user_error(cfg: HwConfig, tmp_path, capsys) -> None:
    """``vdla sim`` prints a program fault as a user error (exit 2), naming the instruction."""
    from vdla.compiler.cli.main import main as vdla

    path = _unloaded_input(cfg).save(tmp_path / "fault.vdlaprog")
    assert vdla(["sim", str(path), "--backend", "cycle"]) == 2
    err = capsys.readouterr().err
    assert "instruction 3 (GEMM" in err and "reads INP SRAM element 0" in err
    assert "Traceback" not in err
