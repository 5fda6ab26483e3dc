"""The README is executable: every command of its tour runs verbatim in a fresh folder.

The tour is the first ``bash`` block under the ``## A short tour`` heading. Each line runs in a
shell (so ``a && b`` and trailing comments work as a user would type them) in one temporary
folder, in order, with the ``vdla`` of this checkout first on ``PATH``; it must exit 0 and
create every file it names as an output. A few lines are inherently long (synthesis, the RTL
regression, a waveform of the Verilated RTL): the default test runs every other line and checks
that the long ones are exactly those listed in :data:`SLOW_LINES`; the slow test runs them all.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

SLOW_LINES: tuple[str, ...] = (
    "vdla sim c10.vdlaprog --backend rtl",
    "vdla hw synth",
    "vdla hw test",
)
"""Prefixes of the tour lines only the slow test runs (each must match exactly one line)."""

OUTPUT_FLAGS = frozenset({"-o", "--output", "--plot", "--save", "--trace", "--fst", "--dump", "--uops-out"})
"""Options whose value is a file or folder the command must create."""


def tour_lines(text: str) -> list[str]:
    """The command lines of the README's tour block (blank lines and comment-only lines dropped)."""
    match = re.search(r"^## A short tour\s*$.*?^```bash\n(.*?)^```", text, re.S | re.M)
    assert match, "README.md has no ```bash block under '## A short tour'"
    lines = [line.strip() for line in match.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def python_block(text: str) -> str:
    """The ```python block under the tour (the 'From Python' example)."""
    match = re.search(r"^From Python:\s*\n+```python\n(.*?)^```", text, re.S | re.M)
    assert match, "README.md has no ```python block after 'From Python:'"
    return match.group(1)


def outputs_of(line: str) -> list[str]:
    """The files a tour line promises to write: the values of :data:`OUTPUT_FLAGS`."""
    words = shlex.split(line, comments=True)
    # A --dump value is KIND@ADDR:ROWSxCOLS=FILE: the file is after the '='.
    return [words[i + 1].rpartition("=")[2] for i, w in enumerate(words[:-1]) if w in OUTPUT_FLAGS]


def is_slow(line: str) -> bool:
    return line.startswith(SLOW_LINES)


def tour_env() -> dict[str, str]:
    """This checkout's ``vdla`` first: its interpreter's ``bin`` on PATH, the repository on PYTHONPATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def run_tour(folder: Path, lines: list[str]) -> None:
    env = tour_env()
    for line in lines:
        proc = subprocess.run(line, shell=True, cwd=folder, env=env, capture_output=True, text=True,
                              executable="/bin/bash")
        assert proc.returncode == 0, f"README tour line failed (exit {proc.returncode}): {line}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        for out in outputs_of(line):
            assert (folder / out).exists(), f"README tour line did not write {out}: {line}"


def test_tour_block_parses_and_names_its_files() -> None:
    lines = tour_lines(README.read_text())
    assert shlex.split(lines[0], comments=True) == ["vdla", "example", "."], "the tour starts by writing its files"
    assert all(line.startswith("vdla ") for line in lines)
    for prefix in SLOW_LINES:
        assert sum(line.startswith(prefix) for line in lines) == 1, f"no single README tour line starts with {prefix!r}"


def test_readme_tour_runs_verbatim(tmp_path: Path) -> None:
    lines = tour_lines(README.read_text())
    run_tour(tmp_path, [line for line in lines if not is_slow(line)])
    for name in ("model.onnx", "samples.npz", "x.npy", "prog.s", "model.vdla", "c10.vdlaprog", "prog.bin"):
        assert (tmp_path / name).stat().st_size > 0
    # The assembled program, run by `vdla sim prog.bin`, computed relu(inp @ wgt.T) (low 8 bits, as STORE).
    inp, wgt = (np.load(tmp_path / f"prog_{n}.npy").astype(np.int32) for n in ("inp", "wgt"))
    expected = np.maximum(inp @ wgt.T, 0).astype(np.int8)
    np.testing.assert_array_equal(np.load(tmp_path / "prog_out.npy"), expected)


@pytest.mark.slow
def test_readme_tour_runs_verbatim_with_the_long_lines(tmp_path: Path) -> None:
    run_tour(tmp_path, tour_lines(README.read_text()))


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", python_block(README.read_text())], cwd=tmp_path, env=tour_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
