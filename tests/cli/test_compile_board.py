"""``vdla compile --board B``: the CPU kernels are the board processor's code, the manifest says so, this x86
machine refuses to run them by name, and a bitstream folder fixes the VDLA config."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla.runtime.file_checks import elf_machine


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("board")
    assert main(["--quiet", "example", str(folder)]) == 0
    return folder


def test_compile_for_the_pynq_z2_writes_armv7_kernels_that_x86_refuses(example: Path, capsys) -> None:
    out = example / "pynq.vdla"
    assert main(["--quiet", "compile", str(example / "model.onnx"), "--board", "pynq-z2", "-o", str(out)]) == 0
    assert "CPU kernels: arm cortex-a9 (board pynq-z2), 128-bit vectors, 16 vector registers" in capsys.readouterr().out
    with zipfile.ZipFile(out) as zf:
        library = zf.read("kernels.so")
        kernels = json.loads(zf.read("manifest.json"))["kernels"]
    assert library[4] == 1 and elf_machine(library) == "arm"  # 32-bit ARM ELF
    assert kernels["triple"].startswith("armv7a") and kernels["cpu"] == "cortex-a9" and "neon" in kernels["features"]
    assert main(["run", str(out), "--input", str(example / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert "was compiled for arm (cortex-a9); this host is x86_64: run it on the board" in err


def test_bitstream_folder_fixes_the_config(example: Path, tmp_path: Path, capsys) -> None:
    bit = tmp_path / "bit"
    assert main(["--quiet", "fpga", "build", "--board", "pynq-z2", "--config", "tiny", "--no-run", "-o", str(bit)]) == 0
    capsys.readouterr()
    base = ["compile", str(example / "model.onnx"), "--target", "vdla", "--calibrate", str(example / "samples.npz"),
            "-o", str(tmp_path / "m.vdla")]
    assert main([*base, "--board", "pynq-z2", "--bitstream", str(bit), "--config", "default"]) == 2
    assert "is not the config the bitstream" in capsys.readouterr().err
    assert main([*base, "--board", "ultra96-v2", "--bitstream", str(bit)]) == 2
    assert "holds a bitstream for board 'pynq-z2', not 'ultra96-v2'" in capsys.readouterr().err
    assert main([*base, "--board", "pynq-z2", "--cpu-target", "board:zcu104"]) == 2
    assert "drop --cpu-target" in capsys.readouterr().err
    assert main([*base, "--board", "ulx3s"]) == 2
    assert "no processor of its own" in capsys.readouterr().err
    assert main([*base, "--bitstream", str(bit)]) == 2
    assert "pass --board too" in capsys.readouterr().err
