"""`vdla asm`, `vdla disasm` and `vdla hw` through the real argument parser."""

from __future__ import annotations

import json

import numpy as np

from vdla.compiler.cli.main import main
from vdla_hw.config import load_config
from vdla_hw.gen_docs import EXAMPLE_PROGRAM, render_isa_doc
from vdla_hw.isa import INSN_BYTES


def test_asm_then_disasm_round_trips_through_files(tmp_path, capsys):
    src = tmp_path / "prog.s"
    src.write_text(EXAMPLE_PROGRAM)
    assert main(["asm", str(src), "--uops-out", str(tmp_path / "prog.uops"), "--config", "tiny"]) == 0
    image = (tmp_path / "prog.bin").read_bytes()
    assert len(image) == 9 * INSN_BYTES
    assert np.frombuffer((tmp_path / "prog.uops").read_bytes(), dtype="<u4").tolist() == [0]
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "prog.bin"), "--uops", str(tmp_path / "prog.uops"), "--config", "tiny"]) == 0
    text = capsys.readouterr().out
    canonical = (tmp_path / "canon.s")
    canonical.write_text(text)
    assert main(["asm", str(canonical), "-o", str(tmp_path / "again.bin"), "--config", "tiny"]) == 0
    assert (tmp_path / "again.bin").read_bytes() == image
    assert "were not written" in capsys.readouterr().err


def test_user_errors_exit_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.s"
    bad.write_text("FINISH\nGEMM uop=0:1\n")
    assert main(["asm", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"vdla asm: error: {bad}: line 2: 'GEMM': missing operand iter=" in err
    (tmp_path / "odd.bin").write_bytes(b"\0" * 17)
    assert main(["disasm", str(tmp_path / "odd.bin")]) == 2
    assert "17 bytes is not a multiple of 16" in capsys.readouterr().err
    (tmp_path / "odd.uops").write_bytes(b"\0" * 6)
    (tmp_path / "ok.bin").write_bytes(b"\0" * 16)
    assert main(["disasm", str(tmp_path / "ok.bin"), "--uops", str(tmp_path / "odd.uops")]) == 2
    assert "6 bytes is not a multiple of the 4-byte micro-op" in capsys.readouterr().err
    assert main(["hw", "show-config", "--config", "nope"]) == 2
    assert "no hardware preset named 'nope'" in capsys.readouterr().err


def test_gen_docs_writes_the_rendered_reference(tmp_path, capsys):
    out = tmp_path / "docs" / "isa.md"
    assert main(["hw", "gen-docs", "-o", str(out)]) == 0
    assert out.read_text() == render_isa_doc()
    assert main(["hw", "gen-docs", "-o", "-"]) == 0
    assert capsys.readouterr().out.endswith(render_isa_doc())


def test_show_config_json_loads_back(tmp_path, capsys):
    assert main(["hw", "show-config", "--config", "wide", "--json"]) == 0
    path = tmp_path / "wide.json"
    path.write_text(capsys.readouterr().out)
    assert load_config(path) == load_config("wide")
    assert json.loads(path.read_text())["name"] == "wide"
    assert main(["hw", "show-config", "--config", "tiny"]) == 0
    text = capsys.readouterr().out
    assert "MACs per cycle" in text and "1 × 4 × 4" in text and "dram_latency" in text
