"""Waveforms of RTL runs (size warning, ``--fst-window``) and the progress bars' quiet rules."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import warnings
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main as vdla
from vdla.runtime import run
from vdla.runtime.backends import waveform
from vdla.runtime.backends.waveform import Window, WaveformSizeWarning, min_cycles, traced_signals
from vdla.runtime.system_programs import build_case
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError
from vdla_hw.harness import harness_library

ROOT = Path(__file__).resolve().parents[2]
TINY = load_config("tiny")


def test_window_parsing() -> None:
    assert Window.parse("100:250") == Window(100, 250)
    assert Window.parse("5000:").start == 5000 and Window.parse(":10") == Window(0, 10)
    for bad in ("100", "9:3", "a:b", "-1:5", "4:4"):
        with pytest.raises(UsageError, match="is not START:END"):
            Window.parse(bad)


@pytest.mark.parametrize("case", ["gemm", "gemm_vt2", "alu_chain", "padding", "random0"])
def test_min_cycles_is_a_lower_bound_of_the_cycle_model(case: str) -> None:
    program = build_case(TINY, case)
    assert 0 < min_cycles(program) <= run(program, "cycle").cycles


def test_a_window_records_only_those_cycles_and_large_waveforms_are_announced(tmp_path: Path, monkeypatch) -> None:
    program, _ = tiled_gemm_program(TINY, 16, 32, 32, virtual_threads=2)
    assert traced_signals(harness_library(TINY, trace=True)) > 100
    full, part = tmp_path / "full.fst", tmp_path / "part.fst"
    monkeypatch.setattr(waveform, "WARN_BYTES", 100_000)  # a small run: lower the bar below its ~1 MB
    with pytest.warns(WaveformSizeWarning, match=r"full.fst will take about .* --fst-window START:END"):
        whole = run(program, "rtl", fst=str(full))
    with warnings.catch_warnings():
        warnings.simplefilter("error", WaveformSizeWarning)  # 20 cycles stay under the bar
        windowed = run(program, "rtl", fst=str(part), fst_window="0:20")
    assert (windowed.dram == whole.dram).all() and windowed.cycles == whole.cycles
    assert part.read_bytes()[:1] == b"\x00" and part.stat().st_size * 4 < full.stat().st_size


def test_fst_window_needs_fst(tmp_path: Path, capsys) -> None:
    path = build_case(TINY, "gemm").save(tmp_path / "p.vdlaprog")
    assert vdla(["sim", str(path), "--backend", "rtl", "--fst-window", "0:10"]) == 2
    assert "--fst-window needs --fst" in capsys.readouterr().err


def _run_on_a_terminal(code: str, *env_items: tuple[str, str]) -> str:
    """Run ``code`` with stderr on a pseudo-terminal; returns what it wrote there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # tqdm draws nothing on a 0x0 terminal
    env = {k: v for k, v in os.environ.items() if k != "VDLA_QUIET"}
    env.update({"PYTHONPATH": str(ROOT), **dict(env_items)})
    proc = subprocess.run([sys.executable, "-c", code], stderr=follower, stdout=subprocess.DEVNULL, env=env, timeout=60)
    chunks = []
    # The follower stays open until everything is read: closing it first may discard the output.
    while select.select([leader], [], [], 0.5)[0]:
        chunks.append(os.read(leader, 65536))
    os.close(follower)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode(errors="replace")


BAR_CODE = "from vdla_hw.progress import bar\nfor _ in bar(iterable=range(3), desc='building the thing'): pass\n"


def test_progress_is_drawn_on_a_terminal_only_and_never_when_quiet(capsys) -> None:
    assert "building the thing" in _run_on_a_terminal(BAR_CODE)
    assert "building the thing" not in _run_on_a_terminal(BAR_CODE, ("VDLA_QUIET", "1"))
    proc = subprocess.run([sys.executable, "-c", BAR_CODE], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stderr == ""  # not a terminal


def test_vdla_quiet_silences_the_tools_and_their_subprocesses(tmp_path: Path) -> None:
    code = ("import os, sys\nfrom vdla.compiler.cli.main import main\n"
            f"main(['--quiet', 'example', {str(tmp_path)!r}])\n"
            "assert os.environ.get('VDLA_QUIET') == '1'\n" + BAR_CODE)
    assert "building the thing" not in _run_on_a_terminal(code)
    assert (tmp_path / "model.onnx").exists()
