"""The ``fpga`` backend's driver on the emulated pynq board, whose registers and memory are the Verilated RTL.

The bitstream folder is what ``vdla fpga build --board pynq-z2 --config tiny --no-run`` writes; the
emulated board builds ``vdla_top`` with the folder's build id (one cached Verilator build).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.runtime import run
from vdla.runtime.backends import BackendError
from vdla.runtime.backends import fpga as fpga_backend_module
from vdla.runtime.fpga import FpgaTimeoutError, emulated_pynq, open_board
from vdla.runtime.fpga import board as board_module
from vdla.runtime.fpga.emulated_pynq import CMA_BASE, MemoryOp, MmioAccess
from vdla.runtime.fpga.relocate import alignment
from vdla.runtime.program import Program, ProgramBuilder
from vdla.runtime.system_programs import build_case
from vdla.simulator.errors import DeadlockError
from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import (
    BadFileError,
    DeviceFaultError,
    ToolchainError,
    UnsupportedError,
)
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.flow import build_bitstream
from vdla_hw.fpga.manifest import read_manifest, write_manifest
from vdla_hw.isa import INSN_BYTES, AluOp, MemInsn, MemType, Uop

CASES = ["gemm", "gemm_vt2", "alu_shr", "alu_mul", "alu_chain", "padding", "tokens_full", "random0", "random1", "random2"]
"""The program suite the rtl backend passes (tests/rtl/backend/test_rtl_backend.py)."""


@pytest.fixture(scope="module")
def tiny() -> HwConfig:
    return load_config("tiny")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bitstream") / "pynq-z2-tiny"
    build_bitstream("pynq-z2", "tiny", out, run=False)
    return out


def test_a_redeployed_folder_is_loaded_again(folder: Path, tiny: HwConfig, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend keeps a board loaded between runs, but not past a redeploy of its folder: a folder
    whose manifest changed is opened again (here the new manifest names a build the board does not hold,
    so the second run is refused naming both ids instead of running the stale bitstream)."""
    deployed = tmp_path / "deployed"
    shutil.copytree(folder, deployed)
    program = build_case(tiny, "alu_shr")
    expected = run(program, "fsim").dram
    np.testing.assert_array_equal(run(program, "fpga", bitstream=deployed, emulate=True).dram, expected)
    real = read_manifest(deployed)
    other = dataclasses.replace(real, build_id=real.build_id ^ 1)
    monkeypatch.setattr(fpga_backend_module, "read_manifest", lambda _folder: other)
    monkeypatch.setattr(board_module, "read_manifest", lambda _folder: other)
    with pytest.raises(DeviceFaultError, match=f"build id {real.build_id:#010x}.*describes build {other.build_id:#010x}"):
        run(program, "fpga", bitstream=deployed, emulate=True)
    monkeypatch.undo()
    np.testing.assert_array_equal(run(program, "fpga", bitstream=deployed, emulate=True).dram, expected)


def _steps(trace: list[MmioAccess | MemoryOp]) -> list[tuple[str, str]]:
    """The trace as (operation, register name) and (memory operation, "") steps."""
    names = {r.offset: r.name for r in regmap.REGISTERS}
    return [(a.op, names[a.offset]) if isinstance(a, MmioAccess) else (a.op, "") for a in trace]


def test_driver_register_sequence(folder: Path, tiny: HwConfig) -> None:
    """Open, then one run: the exact MMIO accesses, their values, and a program image placed at a
    non-zero physical address with its LOAD/STORE addresses moved there."""
    board = open_board(folder, emulate=True, slice_cycles=64)
    try:
        trace = board.device.trace
        manifest = read_manifest(folder)
        assert trace == [MmioAccess("read", 0x18, regmap.config_id(tiny)), MmioAccess("read", 0x1C, manifest.build_id)]
        assert (board.board, board.config, board.config_id, board.build_id) == (
            "pynq-z2", tiny, regmap.config_id(tiny), manifest.build_id)
        program = build_case(tiny, "gemm")
        trace.clear()
        result = board.run(program)
        polls = result.extra["status_polls"]
        assert polls > 1  # 64-cycle slices: the driver saw the accelerator busy first
        # Registers, and the buffer's cache maintenance: flushed before the start, invalidated after done.
        assert _steps(trace) == [("read", "CONFIG_ID"), ("read", "STATUS"), ("allocate", ""), ("flush", ""),
                                 ("write", "WINDOW_BASE"), ("write", "WINDOW_LIMIT"),
                                 ("write", "INSN_ADDR"), ("write", "INSN_COUNT"), ("write", "CONTROL")] + \
            [("read", "STATUS")] * (polls + 1) + [("read", "CYCLES_LO"), ("read", "CYCLES_HI"), ("invalidate", ""), ("free", "")]
        base = result.extra["physical_address"]
        assert base >= CMA_BASE and base % alignment(tiny) == 0
        allocated, flushed, invalidated = trace[2], trace[3], trace[-2]
        assert allocated.address <= base < base + program.dram.size <= allocated.address + allocated.nbytes
        whole = (allocated.address, allocated.nbytes)  # both cover the whole buffer
        assert (flushed.address, flushed.nbytes) == (invalidated.address, invalidated.nbytes) == whole
        # The window is the job's buffer: the image, relocated to base.
        assert [a.value for a in trace[4:9]] == [base, base + program.dram.size, base + program.insn_addr,
                                                 program.insn_count, regmap.CONTROL_START]
        statuses = [a.value for a in trace[9:9 + polls + 1]]
        assert all(s & regmap.STATUS_BUSY and not s & regmap.STATUS_DONE for s in statuses[:polls - 1])
        assert all(s & regmap.STATUS_DONE and not s & regmap.STATUS_FAULT for s in statuses[polls - 1:])
        assert trace[-4].value | trace[-3].value << 32 == result.cycles > 0
        # The device memory holds the relocated instructions: every LOAD/STORE moved by base.
        sim = board.device.sim
        raw = sim.read_dram(base + program.insn_addr, program.insn_count * INSN_BYTES)
        placed = tiny.isa.decode_program(raw)
        for before, after in zip(program.instructions, placed):
            if isinstance(before, MemInsn):
                eb = getattr(tiny, f"{before.mem_type.name.lower()}_elem_bytes")
                assert after == dataclasses.replace(before, dram_base=before.dram_base + base // eb)
            else:
                assert after == before
        np.testing.assert_array_equal(result.dram, run(program, "fsim").dram)
    finally:
        board.close()


@pytest.mark.parametrize("case", CASES)
def test_fpga_dram_equals_fsim(folder: Path, tiny: HwConfig, case: str) -> None:
    program = build_case(tiny, case)
    result = run(program, "fpga", bitstream=str(folder), emulate=True)
    np.testing.assert_array_equal(result.dram, run(program, "fsim").dram)
    assert result.backend == "fpga" and result.cycles > 0
    assert result.counters["instructions"] == program.insn_count


def test_same_cycles_as_the_rtl_backend(folder: Path, tiny: HwConfig) -> None:
    """The image moved to a 4 KiB-aligned physical address makes the same bursts: the same cycle count."""
    program = build_case(tiny, "random1")
    assert run(program, "fpga", bitstream=str(folder), emulate=True).cycles == run(program, "rtl").cycles


def test_a_program_of_another_config_is_refused_naming_both(folder: Path, tiny: HwConfig) -> None:
    default = load_config("default")
    board = open_board(folder, emulate=True)
    try:
        board.device.trace.clear()
        with pytest.raises(DeviceFaultError) as info:
            board.run(build_case(default, "gemm"))
        assert tiny.label() in str(info.value) and default.label() in str(info.value)
        assert "--config" in info.value.hint
        assert _steps(board.device.trace) == [("read", "CONFIG_ID")]  # nothing written, nothing started
    finally:
        board.close()


def test_a_folder_describing_another_build_is_refused(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The design's BUILD_ID must be the manifest's: a folder whose manifest is not the loaded build's."""
    real = read_manifest(folder)
    other = dataclasses.replace(real, build_id=real.build_id ^ 1)
    monkeypatch.setattr(board_module, "read_manifest", lambda _folder: other)
    with pytest.raises(DeviceFaultError, match=f"build id {real.build_id:#010x}.*describes build {other.build_id:#010x}"):
        open_board(folder, emulate=True)


def _never_finishes(cfg: HwConfig) -> Program:
    """GEMM pops a load->compute token no instruction pushes: the accelerator waits forever."""
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (cfg.batch, cfg.block_in), np.ones((cfg.batch, cfg.block_in), dtype=np.int8))
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1)
    pb.gemm(0, 1, reset=True, pop_prev=True)
    pb.finish()
    return pb.build()


def test_watchdog_on_a_program_that_never_finishes(folder: Path, tiny: HwConfig) -> None:
    program = _never_finishes(tiny)
    with pytest.raises(FpgaTimeoutError) as info:
        run(program, "fpga", bitstream=str(folder), emulate=True, timeout=0.5, no_precheck=True)
    text = str(info.value)
    assert "did not finish within 0.5 s" in text and "busy=True" in text
    cycles = re.search(r"CYCLES ([\d,]+), INSN_ADDR", text)
    assert cycles and int(cycles[1].replace(",", "")) > 0  # the design's counter kept running
    assert "reload the bitstream" in info.value.hint
    # With the pre-check (the default) fsim finds the deadlock first and names the instruction.
    with pytest.raises(DeadlockError, match=r"(?s)instruction 2 \(GEMM.*functional pre-check.*hang the accelerator"):
        run(program, "fpga", bitstream=str(folder), emulate=True)


def test_the_board_works_after_a_hung_run(folder: Path, tiny: HwConfig) -> None:
    """After the watchdog fired, the next run loads the bitstream again instead of finding it busy."""
    with pytest.raises(FpgaTimeoutError):
        run(_never_finishes(tiny), "fpga", bitstream=str(folder), emulate=True, timeout=0.2, no_precheck=True)
    program = build_case(tiny, "alu_chain")
    np.testing.assert_array_equal(run(program, "fpga", bitstream=str(folder), emulate=True).dram,
                                  run(program, "fsim").dram)


def test_without_a_folder_or_emulation_the_backend_says_what_to_do(tiny: HwConfig, monkeypatch) -> None:
    monkeypatch.delenv("VDLA_FPGA_BITSTREAM", raising=False)
    monkeypatch.delenv("VDLA_FPGA_EMULATE", raising=False)
    with pytest.raises(BackendError, match="needs a bitstream folder.*--bitstream DIR.*--emulate"):
        run(build_case(tiny, "gemm"), "fpga")


def test_emulation_from_the_environment_needs_no_folder(tiny: HwConfig, monkeypatch) -> None:
    monkeypatch.delenv("VDLA_FPGA_BITSTREAM", raising=False)
    monkeypatch.setenv("VDLA_FPGA_EMULATE", "1")
    program = build_case(tiny, "padding")
    result = run(program, "fpga")
    np.testing.assert_array_equal(result.dram, run(program, "fsim").dram)
    assert result.extra["emulated"] and result.extra["board"] == "pynq-z2"


def test_a_real_board_needs_pynq(folder: Path) -> None:
    if importlib.util.find_spec("pynq") is not None:
        pytest.skip("pynq is installed here: open_board takes the real-board path")
    with pytest.raises(ToolchainError, match="pynq package, which is not installed") as info:
        open_board(folder, emulate=False)
    assert "VDLA_FPGA_EMULATE=1" in info.value.hint


def test_bad_folders_are_named(tmp_path: Path, tiny: HwConfig) -> None:
    with pytest.raises(BadFileError, match="has no bitstream.json"):
        open_board(tmp_path, emulate=True)
    (tmp_path / "bitstream.json").write_text(json.dumps({"format": "something/9"}))
    with pytest.raises(BadFileError, match="format 'something/9'"):
        open_board(tmp_path, emulate=True)
    ulx3s = tmp_path / "ulx3s"
    write_manifest(ulx3s, get_board("ulx3s-selftest"), tiny, 7)
    with pytest.raises(UnsupportedError, match="ulx3s-selftest has no processor") as info:
        open_board(ulx3s, emulate=True)
    assert "pynq-z2" in info.value.hint
    write_manifest(ulx3s, get_board("ulx3s"), tiny, 7)
    with pytest.raises(UnsupportedError, match="ulx3s is driven over its USB serial port") as info:
        open_board(ulx3s, emulate=True)
    assert "--port" in info.value.hint


def test_two_boards_in_one_process(folder: Path, tiny: HwConfig) -> None:
    """Two emulated boards (two Verilated models) live side by side; closing one leaves the other working
    (Verilator's per-thread current context once made the survivor hang on close)."""
    first = open_board(folder, emulate=True)
    second = open_board(folder, emulate=True)
    second.close()
    program = build_case(tiny, "alu_shr")
    np.testing.assert_array_equal(first.run(program).dram, run(program, "fsim").dram)
    first.close()


def test_the_real_board_path_with_pynq_present(folder: Path, tiny: HwConfig, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``emulate=False`` with a ``pynq`` module importable: the driver loads the folder's Vivado outputs on
    pynq's active device (here the stand-in plays pynq, its active device the emulated board)."""
    monkeypatch.setitem(sys.modules, "pynq", emulated_pynq)
    monkeypatch.setattr(emulated_pynq.Device, "active_device", emulated_pynq.EmulatedDevice())
    built = tmp_path / "built"
    shutil.copytree(folder, built)
    with pytest.raises(DeviceFaultError, match="holds no bitstream: Vivado has not built it"):
        open_board(built, emulate=False)
    (built / "out").mkdir()
    for name in ("vdla.bit", "vdla.hwh"):  # as `vivado -mode batch -source build.tcl` run by hand leaves them
        (built / "out" / name).write_bytes(b"from Vivado")
    board = open_board(built, emulate=False)
    try:
        assert not board.emulated and board.device is None  # pynq's active device, as on a board
        program = build_case(tiny, "gemm_vt2")
        np.testing.assert_array_equal(board.run(program).dram, run(program, "fsim").dram)
    finally:
        emulated_pynq.Device.active_device.close()
    # Files recorded by `vdla fpga build` must be the ones in the folder.
    manifest = read_manifest(built)
    write_manifest(built, get_board(manifest.board), tiny, manifest.build_id,
                   {"bit": built / "out" / "vdla.bit", "hwh": built / "out" / "vdla.hwh"})
    (built / "out" / "vdla.bit").write_bytes(b"another build")
    with pytest.raises(BadFileError, match="vdla.bit is not the bit file bitstream.json describes"):
        open_board(built, emulate=False)


def test_device_api_on_the_fpga_backend(folder: Path, tiny: HwConfig) -> None:
    """runtime.Device keeps its DRAM across runs on the fpga backend as on the others."""
    from vdla.runtime import Device

    dev = Device(tiny, backend="fpga", bitstream=str(folder), emulate=True)
    x = np.arange(-8, 8).reshape(tiny.batch * 4, -1)[:, : tiny.block_out]
    acc, out = dev.alloc("acc", "acc", x.shape), dev.alloc("out", "out", x.shape)
    dev.copy_to(acc, x)
    for factor in (3, 5):  # the second program runs on the DRAM the first one left
        pb = dev.builder()
        pb.load_uops(pb.uops([Uop(0, 0, 0)], name=f"uops_x{factor}"))
        rows = x.shape[0] // tiny.batch
        pb.load(MemType.ACC, 0, acc.addr, rows, 1, 1)
        pb.alu(AluOp.MUL, 0, 1, imm=factor, iter_out=rows, dst_factor=(1, 0), push_next=True)
        pb.store(0, out.addr, rows, 1, 1, pop_prev=True, push_prev=True)
        pb.finish(pop_next=True)
        assert dev.run(pb).backend == "fpga"
        np.testing.assert_array_equal(dev.copy_from(out), factor * x)
    np.testing.assert_array_equal(dev.copy_from(acc), x)
