"""CLI consistency: options a backend does not take are refused, `vdla run --profile` keeps device and host
time apart, every --help is plain text, and an assembled program runs through `vdla sim` bit-exactly."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.cli.main import build_parser
from vdla.compiler.cli.main import run as cli
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw.config import load_config

# y = relu((b + x @ w.T) >> 2) on the tiny preset (1x4 input tiles, 4x4 weight tiles): x is 2x8 (2x2 tiles),
# w is 4x8 (1x2 tiles), b and y are 2x4 (2x1 tiles). DRAM addresses count elements of each kind:
# micro-ops at byte 0, x at inp element 16 (byte 64), w at wgt element 8 (byte 128), b at acc element 12
# (byte 192), y at out element 64 (byte 256).
PROGRAM = """\
LOAD UOP sram=0 dram=0 y=1 x=1 stride=1
LOAD ACC sram=0 dram=12 y=2 x=1 stride=1
LOAD INP sram=0 dram=16 y=2 x=2 stride=2
LOAD WGT sram=0 dram=8 y=1 x=2 stride=2 deps=push_next
GEMM uop=0:1 iter=2,2 dst=1,0 src=2,1 wgt=0,1 deps=pop_prev
ALU SHR imm=2 uop=0:1 iter=2,1 dst=1,0
ALU MAX imm=0 uop=0:1 iter=2,1 dst=1,0 deps=push_next
STORE OUT sram=0 dram=64 y=2 x=1 stride=1 deps=pop_prev,push_prev
FINISH deps=pop_next
.uops
0 0 0
"""


def fails(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program, _ = tiled_gemm_program(load_config("tiny"), 4, 8, 4)
    return program.save(tmp_path_factory.mktemp("bundle") / "gemm.vdlaprog")


@pytest.fixture
def assembled(tmp_path: Path) -> dict[str, Path]:
    """prog.s assembled by `vdla asm`, its inputs, and the NumPy reference of its output."""
    (tmp_path / "prog.s").write_text(PROGRAM)
    assert cli(["asm", str(tmp_path / "prog.s"), "-o", str(tmp_path / "prog.bin"), "--uops-out",
                str(tmp_path / "prog.uops"), "--config", "tiny"]) == 0
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (2, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    b = rng.integers(-5000, 5000, (2, 4)).astype(np.int32)
    for name, a in (("x", x), ("w", w), ("b", b)):
        np.save(tmp_path / f"{name}.npy", a)
    acc = b + x.astype(np.int32) @ w.astype(np.int32).T
    # STORE keeps the low 8 bits of each accumulator (the hardware wraps, it does not saturate).
    expected = (np.maximum(acc >> 2, 0) & 0xFF).astype(np.uint8).view(np.int8)
    np.save(tmp_path / "expected.npy", expected)
    return {"prog": tmp_path / "prog.bin", "uops": tmp_path / "prog.uops", "source": tmp_path / "prog.s",
            "x": tmp_path / "x.npy", "w": tmp_path / "w.npy", "b": tmp_path / "b.npy",
            "expected": tmp_path / "expected.npy", "dir": tmp_path}


def raw_args(f: dict[str, Path]) -> list[str]:
    return [str(f["prog"]), "--config", "tiny", "--uops", str(f["uops"]), "--dram", f"inp@16={f['x']}",
            "--dram", f"wgt@8={f['w']}", "--dram", f"acc@12={f['b']}"]


# ---- options of another backend ------------------------------------------------------------------------
@pytest.mark.parametrize("backend, option, owner", [
    ("fsim", ["--trace", "t.json"], "cycle"),
    ("fsim", ["--fst", "w.fst"], "rtl"),
    ("cycle", ["--fst", "w.fst"], "rtl"),
    ("cycle", ["--max-steps", "9"], "fsim"),
])
def test_an_option_of_another_backend_is_refused(bundle: Path, capsys, backend: str, option: list[str],
                                                 owner: str) -> None:
    fails(["sim", str(bundle), "--backend", backend, *option], capsys,
          f"{option[0]} is an option of the {owner} backend and does nothing on '{backend}'",
          f"--backend {owner}")


def test_image_options_are_refused_with_a_bundle(bundle: Path, assembled, capsys) -> None:
    fails(["sim", str(bundle), "--dram", f"inp@0={assembled['x']}"], capsys, "is a program bundle", "drop --dram")


def test_json_without_profile_still_profiles(compiled_files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "p.json"
    assert cli(["run", str(compiled_files.module), "--input", str(compiled_files.x), "--json", str(out)]) == 0
    assert "host ms" in capsys.readouterr().out
    assert json.loads(out.read_text())["nodes"]


# ---- profile columns -----------------------------------------------------------------------------------
def test_profile_separates_device_time_from_host_time(compiled_files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "p.json"
    assert cli(["run", str(compiled_files.module), "--input", str(compiled_files.x), "--backend", "cycle",
                "--profile", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    clock = load_config("default").clock_mhz
    assert re.split(r"\s{2,}|\s(?=\S)", lines[0])[:2] == ["node", "device"]
    for header in ("host ms", "VDLA cycles", f"VDLA ms@{clock:g}MHz"):
        assert header in lines[0]
    vdla_rows = [line.split() for line in lines[1:] if line.split()[1:2] == ["vdla"]]
    assert vdla_rows
    for row in vdla_rows:
        cycles, device_ms = int(row[3].replace(",", "")), float(row[4])
        assert device_ms == pytest.approx(1e3 * cycles / (clock * 1e6), abs=1e-3)
    total = next(line for line in lines if line.startswith("total:"))
    assert "ms device time at" in total and "host time" in total
    profile = json.loads(out.read_text())
    for node in profile["nodes"]:
        if node["device"] == "vdla":
            assert node["device_seconds"] == pytest.approx(node["cycles"] / (clock * 1e6))
        else:
            assert node["device_seconds"] is None


def test_profile_names_its_host_clock_and_refuses_the_thread_clock_on_several_threads(compiled_files, tmp_path: Path,
                                                                                      capsys) -> None:
    base = ["run", str(compiled_files.module), "--input", str(compiled_files.x)]
    for args, want in (([], "thread"), (["--clock", "wall", "--repeat", "2"], "wall")):
        out = tmp_path / f"{want}.json"
        assert cli([*base, "--json", str(out), *args]) == 0
        total = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("total:"))
        assert ("host CPU time of the calling thread" in total) == (want == "thread")
        assert json.loads(out.read_text())["host_clock"] == want
    assert cli([*base, "--profile", "--clock", "thread", "--threads", "2"]) == 2
    err = capsys.readouterr().err
    assert "--clock thread times the calling thread only" in err and "--threads 1" in err
    assert cli([*base, "--profile", "--repeat", "0"]) == 2
    assert "--repeat 0" in capsys.readouterr().err


# ---- help texts ----------------------------------------------------------------------------------------
def _parsers(name: str, parser: argparse.ArgumentParser):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _parsers(f"{name} {sub}", p)


def test_every_help_text_is_plain() -> None:
    markup = re.compile(r"``|:(class|func|mod|meth|data|attr):`|^\.\. ", re.M)
    found = {name: markup.findall(p.format_help()) for name, p in _parsers("vdla", build_parser())}
    assert len(found) > 8
    assert not {k: v for k, v in found.items() if v}


# ---- asm -> sim ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["fsim", "cycle", pytest.param("rtl", marks=pytest.mark.slow)])
def test_assembled_program_runs_bit_exact(assembled, backend: str, capsys) -> None:
    y = assembled["dir"] / f"y_{backend}.npy"
    assert cli(["sim", *raw_args(assembled), "--backend", backend, "--dump", f"out@64:2x4={y}"]) == 0
    assert "9 instructions on config 'tiny'" in capsys.readouterr().out
    got = np.load(y)
    assert got.dtype == np.int8 and got.shape == (2, 4)
    np.testing.assert_array_equal(got, np.load(assembled["expected"]))


def test_raw_image_usage_errors(assembled, tmp_path: Path, capsys) -> None:
    base = raw_args(assembled)
    fails(["sim", *base, "--dram", "inp0=x.npy"], capsys, "--dram 'inp0=x.npy' is malformed",
          "KIND@ADDR=FILE.npy")
    fails(["sim", *base, "--dump", "out@64:2by4=y.npy"], capsys, "--dump 'out@64:2by4=y.npy' is malformed",
          "KIND@ADDR:ROWSxCOLS=FILE.npy")
    fails(["sim", *base, "--dump", "psum@0:1x1=y.npy"], capsys, "unknown kind 'psum'", "inp, wgt, acc, out")
    fails(["sim", *base, "--dram", f"out@zero={assembled['x']}"], capsys, "address 'zero' is not an integer")
    fails(["sim", str(assembled["prog"]), "--config", "tiny", "--uops-addr", "4"], capsys,
          "--uops-addr places the micro-ops of --uops, which is missing")
    # Weights at wgt element 4 are bytes 64..127, where x already is.
    fails(["sim", *base[:-2], "--dram", f"wgt@4={assembled['w']}"], capsys, "overlap in DRAM")
    np.save(tmp_path / "big.npy", np.full((2, 8), 300, np.int16))
    fails(["sim", *base[:5], "--dram", f"inp@16={tmp_path / 'big.npy'}"], capsys, "do not fit the 8-bit inp elements")
    np.save(tmp_path / "f.npy", np.zeros((2, 8), np.float32))
    fails(["sim", *base[:5], "--dram", f"inp@16={tmp_path / 'f.npy'}"], capsys, "needs a 2-D integer matrix")


def test_raw_image_bad_files(assembled, tmp_path: Path, capsys) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes(assembled["prog"].read_bytes()[:-5])
    fails(["sim", str(cut), "--config", "tiny"], capsys, "is not a multiple of 16 (the instruction size)")
    fails(["sim", str(assembled["source"]), "--config", "tiny"], capsys, "is a text file",
          "vdla asm prog.s -o prog.bin")
    fails(["disasm", str(assembled["source"]), "--config", "tiny"], capsys,
          "is a text file, not an instruction image")
    fails(["disasm", str(assembled["prog"]), "--config", "tiny", "--uops", str(assembled["x"])], capsys,
          "is a NumPy array (.npy), not a micro-op image")
    cut_uops = tmp_path / "cut.uops"
    cut_uops.write_bytes(assembled["uops"].read_bytes()[:-1])
    fails(["sim", str(assembled["prog"]), "--config", "tiny", "--uops", str(cut_uops)], capsys,
          "is not a multiple of the 4-byte micro-op")
