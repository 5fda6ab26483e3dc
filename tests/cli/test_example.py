"""``vdla example``: the README tour's files, and what they promise (a model that compiles, a
program whose DRAM regions are disjoint and which computes what its header says)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np

from vdla.compiler.cli.main import main
from vdla.compiler.examples import EXAMPLE_FILES
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph import run_graph
from vdla.runtime import run
from vdla.runtime.program import Program
from vdla_hw.asm import assemble
from vdla_hw.config import load_config
from vdla_hw.isa import MemInsn, MemType

INSN_AREA = 1024  # prog.s: "the instruction stream can go anywhere from byte 1024 on"


def test_example_writes_the_files_and_never_overwrites_silently(tmp_path: Path, capsys) -> None:
    assert main(["example", str(tmp_path / "tour")]) == 0
    assert sorted(p.name for p in (tmp_path / "tour").iterdir()) == sorted(EXAMPLE_FILES)
    assert main(["example", str(tmp_path / "tour")]) == 2
    assert "already exist" in capsys.readouterr().err
    assert main(["example", str(tmp_path / "tour"), "--force"]) == 0


def test_the_model_classifies_the_example_input(tmp_path: Path) -> None:
    assert main(["example", str(tmp_path)]) == 0
    graph = from_onnx(str(tmp_path / "model.onnx"))
    x = np.load(tmp_path / "x.npy")
    with np.load(tmp_path / "samples.npz") as samples:
        assert samples["x"].shape == (16, *x.shape[1:]) and samples["x"].dtype == np.float32
    assert int(run_graph(graph, {"x": x})[0].argmax()) == 2  # the example input is a held-out "2"


def _regions(cfg, insns) -> list[tuple[MemType, int, int]]:
    sizes = {MemType.UOP: cfg.uop_elem_bytes, MemType.INP: cfg.inp_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
             MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}
    out = []
    for i in insns:
        if isinstance(i, MemInsn):
            size = sizes[i.mem_type]
            out.append((i.mem_type, i.dram_base * size, (i.dram_base + (i.y_size - 1) * i.x_stride + i.x_size) * size))
    return out


def test_prog_s_regions_are_disjoint_and_it_computes_relu_of_a_matrix_product(tmp_path: Path) -> None:
    assert main(["example", str(tmp_path)]) == 0
    cfg = load_config("tiny")
    insns, uops = assemble((tmp_path / "prog.s").read_text(), cfg)
    regions = _regions(cfg, insns)
    for (ta, a0, a1), (tb, b0, b1) in combinations(regions, 2):
        assert ta == tb or a1 <= b0 or b1 <= a0, f"{ta.name} [{a0}, {a1}) overlaps {tb.name} [{b0}, {b1})"
    assert max(end for _, _, end in regions) <= INSN_AREA
    rng = np.random.default_rng(7)
    inp, wgt = (rng.integers(-128, 128, (4, 4), dtype=np.int8) for _ in range(2))
    image = np.zeros(INSN_AREA + 16 * len(insns), np.uint8)
    starts = {t: a for t, a, _ in regions}
    image[starts[MemType.UOP]:starts[MemType.UOP] + 4 * len(uops)] = np.frombuffer(cfg.isa.encode_uops(uops).tobytes(), np.uint8)
    image[starts[MemType.INP]:starts[MemType.INP] + 16] = inp.view(np.uint8).ravel()
    image[starts[MemType.WGT]:starts[MemType.WGT] + 16] = wgt.view(np.uint8).ravel()
    image[INSN_AREA:] = np.frombuffer(cfg.isa.encode_program(insns).tobytes(), np.uint8)
    program = Program.from_image(cfg, image, INSN_AREA, len(insns))
    expected = np.maximum(inp.astype(np.int32) @ wgt.astype(np.int32).T, 0).astype(np.int8)  # low 8 bits, as STORE
    for backend in ("fsim", "cycle"):
        dram = run(program, backend).dram
        out = dram[starts[MemType.OUT]:starts[MemType.OUT] + 16].view(np.int8).reshape(4, 4)
        np.testing.assert_array_equal(out, expected)
