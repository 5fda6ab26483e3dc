"""The ULX3S SoC end to end without the board: the whole SoC (UART bridge, LiteDRAM controller with the
SDRAM chip model, accelerator) under Verilator, driven by the serial driver through a pseudo-terminal.

The first test builds the Verilated SoC once (~4 min on this machine; cached in the build cache after).
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from vdla.runtime.backends import run
from vdla.runtime.fpga.serial_board import open_serial_board
from vdla.runtime.fpga.serial_link import BoardNotAnsweringError, SerialLink
from vdla.runtime.random_programs import random_program
from vdla_hw.config import load_config
from vdla_hw.errors import DeviceFaultError, ToolchainError, UsageError
from vdla_hw.fpga.program import loader_command, loader_error, program_board
from vdla_hw.fpga.ulx3s_sim import SimulatedUlx3s

TINY = load_config("tiny")


@pytest.fixture(scope="module")
def sim():
    with SimulatedUlx3s(TINY) as board:
        yield board


@pytest.fixture(scope="module")
def opened(sim):
    board = open_serial_board(sim.folder, sim.port, timeout=60)
    yield board
    board.close()


def test_open_checks_identifier_config_build_and_self_test(opened, sim) -> None:
    manifest = json.loads((sim.folder / "bitstream.json").read_text())
    assert opened.identifier.startswith(f"VDLA tiny {TINY.digest}")
    assert opened.build_id == manifest["build_id"] != 0
    assert [c.split()[0] for c in opened.checks] == ["identifier", "CONFIG_ID", "BUILD_ID", "self-test"]


@pytest.mark.parametrize("seed", [3, 11])
def test_random_program_on_the_simulated_soc_is_bit_exact_vs_fsim(opened, seed: int) -> None:
    program = random_program(TINY, seed)
    got = opened.run(program)
    want = run(program, "fsim")
    assert np.array_equal(got.dram, want.dram)
    # the SDRAM's latency shows: the SoC takes more cycles than the rtl backend's fixed-latency DRAM
    assert got.cycles and got.cycles > 0 and got.extra["physical_address"] == 1 << 20


def test_sdram_keeps_what_the_link_wrote(opened) -> None:
    data = np.random.default_rng(5).integers(0, 256, 1024, dtype=np.uint8)
    opened.write_dram(8 << 20, data)
    assert np.array_equal(opened.read_dram(8 << 20, data.size), data)


def test_program_of_another_config_is_refused_naming_both(opened) -> None:
    program = random_program(load_config("default"), 1)
    with pytest.raises(DeviceFaultError, match="built for 'tiny'.*compiled for 'default'"):
        opened.run(program)


def test_missing_port_busy_port_and_silent_port_are_clear_errors(sim, tmp_path) -> None:
    with pytest.raises(DeviceFaultError, match="no serial port /dev/ttyVDLA_NONE"):
        SerialLink("/dev/ttyVDLA_NONE", 3_000_000)
    master, slave = os.openpty()  # a port with nothing behind it
    try:
        with pytest.raises(BoardNotAnsweringError, match="no VDLA SoC answers on"):
            open_serial_board(sim.folder, os.ttyname(slave), timeout=0.5)
        with SerialLink(os.ttyname(slave), 3_000_000):
            with pytest.raises(DeviceFaultError, match="busy"):
                SerialLink(os.ttyname(slave), 3_000_000)
    finally:
        os.close(master)
        os.close(slave)


def test_bitstream_folder_of_another_build_is_refused(sim, tmp_path) -> None:
    other = tmp_path / "other"
    shutil.copytree(sim.folder, other)
    for name in ("bitstream.json", "soc.json"):
        data = json.loads((other / name).read_text())
        data["build_id"] ^= 0x5A5A
        (other / name).write_text(json.dumps(data))
    with SimulatedUlx3s(TINY) as second:  # the module's board holds its port
        with pytest.raises(DeviceFaultError, match="build id .* describes build"):
            open_serial_board(other, second.port, timeout=60, selftest=False)


def test_flash_command_and_its_errors(tmp_path) -> None:
    bit = tmp_path / "x.bit"
    assert loader_command("ulx3s", bit, flash=True, loader="ofl") == ["ofl", "-b", "ulx3s", "-f", str(bit)]
    with pytest.raises(UsageError, match="Vivado"):
        loader_command("pynq-z2", bit, flash=False, loader="ofl")
    err = loader_error("openFPGALoader: error while loading shared libraries: libftdi1.so.2: cannot open", 127)
    assert isinstance(err, ToolchainError) and "apt install libftdi1-2" in err.hint
    assert "found no ULX3S" in str(loader_error("unable to open ftdi device: -3 (device not found)", 1))
    with pytest.raises(Exception, match="no bitstream|has no bitstream.json|not a bitstream folder"):
        program_board("ulx3s", tmp_path)
