"""Program bundles, the builder's tile layout, the device API and the backend registry."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from vdla.runtime import BackendError, Device, Program, ProgramBuilder, get_backend, pack_matrix, run, unpack_matrix
from vdla.runtime.backends import backend_names
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla_hw.config import load_config, preset_names
from vdla_hw.errors import BadFileError
from vdla_hw.isa import AluOp, IsaError, MemType, Uop

PRESETS = preset_names()


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("kind", ["inp", "wgt", "acc", "out"])
def test_pack_unpack_round_trip_with_partial_tiles(preset: str, kind: str) -> None:
    cfg = load_config(preset)
    width = {"inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width, "out": cfg.out_width}[kind]
    rng = np.random.default_rng(0)
    m = rng.integers(-(1 << (width - 1)), 1 << (width - 1), size=(2 * cfg.batch + 1, 3 * cfg.block_in - 1))
    raw = pack_matrix(cfg, kind, m)
    np.testing.assert_array_equal(unpack_matrix(cfg, kind, raw, m.shape), m)


def test_pack_layout_is_row_major_tiles() -> None:
    cfg = load_config("tiny")  # 1x4x4 tiles
    m = np.arange(2 * 8).reshape(2, 8)
    raw = pack_matrix(cfg, "inp", m).view(np.int8)
    # tile (0, 1) is the second DRAM element: row 0, columns 4..7
    np.testing.assert_array_equal(raw[4:8], [4, 5, 6, 7])


def test_pack_rejects_values_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match=r"do not fit 8-bit signed"):
        pack_matrix(load_config("tiny"), "inp", np.array([[300, 0, 0, 0]]))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("vt", [1, 2])
def test_tiled_gemm_workload_is_bit_exact(preset: str, vt: int) -> None:
    cfg = load_config(preset)
    m, k, n = 4 * cfg.batch, 3 * cfg.block_in, 4 * cfg.block_out
    for tiling in (None, GemmTiling(2, 2, 1)):
        program, expected = tiled_gemm_program(cfg, m, k, n, virtual_threads=vt, tiling=tiling, seed=vt)
        result = run(program)
        np.testing.assert_array_equal(result.read("out"), expected)
        assert result.counters["macs"] == m * k * n
        assert all(v == 0 for v in result.extra["tokens_left"].values())
    assert len(np.unique(expected)) > 4  # the requantization keeps a spread of values


def test_workload_rejects_bad_shapes() -> None:
    cfg = load_config("default")
    with pytest.raises(ValueError, match="multiples of"):
        tiled_gemm_program(cfg, 16, 15, 16)
    with pytest.raises(ValueError, match="virtual_threads"):
        tiled_gemm_program(cfg, 16, 16, 16, virtual_threads=3)


def test_save_load_round_trip(tmp_path) -> None:
    program, expected = tiled_gemm_program(load_config("tiny"), 8, 8, 8, virtual_threads=2, tiling=GemmTiling(2, 1, 1))
    path = program.save(tmp_path / "gemm.vdlaprog")
    assert path.exists() and path.suffix == ".vdlaprog"
    loaded = Program.load(path)
    assert loaded.config == program.config
    assert loaded.instructions == program.instructions
    assert loaded.insn_addr == program.insn_addr
    assert dict(loaded.buffers) == dict(program.buffers)
    np.testing.assert_array_equal(loaded.dram, program.dram)
    np.testing.assert_array_equal(run(loaded).read("out"), expected)


def test_pickle_round_trip_keeps_the_program_and_stores_each_distinct_instruction_once() -> None:
    cfg = load_config("default")
    program, reference = tiled_gemm_program(cfg, 64, 64, 64, virtual_threads=2, tiling=GemmTiling(1, 1, 1))
    data = pickle.dumps(program)
    copy = pickle.loads(data)
    assert copy.instructions == program.instructions and copy.insn_addr == program.insn_addr
    assert copy.config == program.config and dict(copy.buffers) == dict(program.buffers)
    np.testing.assert_array_equal(copy.dram, program.dram)
    assert (run(copy, "fsim").read("out") == reference).all()
    # Repeated instructions are pickled once (plus a 4-byte index each), not once per occurrence.
    assert len(set(program.instructions)) < program.insn_count // 4
    assert len(data) < program.dram.nbytes + 4 * program.insn_count + 200 * len(set(program.instructions)) + 4096


def test_load_rejects_other_files(tmp_path) -> None:
    bad = tmp_path / "x.vdlaprog"
    bad.write_bytes(b"not a program")
    with pytest.raises(BadFileError, match="is a text file, not a VDLA program bundle"):
        Program.load(bad)


def test_program_image_is_read_only_and_instructions_are_in_dram() -> None:
    program, _ = tiled_gemm_program(load_config("tiny"), 4, 4, 4)
    with pytest.raises(ValueError):
        program.dram[0] = 1
    again = Program.from_image(program.config, program.dram, program.insn_addr, program.insn_count)
    assert again.instructions == program.instructions


def test_builder_reports_field_overflow_with_index() -> None:
    pb = ProgramBuilder(load_config("tiny"))
    pb.finish()
    pb.gemm(0, 1, iter_out=1 << 20)
    with pytest.raises(IsaError, match=r"instruction 1: .*iter_out"):
        pb.build()


def test_device_copy_run_copy_back() -> None:
    dev = Device("tiny")
    cfg = dev.cfg
    x = np.arange(-8, 8).reshape(cfg.batch * 4, -1)[:, : cfg.block_out]
    acc = dev.alloc("acc", "acc", x.shape)
    out = dev.alloc("out", "out", x.shape)
    dev.copy_to(acc, x)
    pb = dev.builder()
    uops = pb.uops([Uop(0, 0, 0)])
    pb.load_uops(uops)
    rows = x.shape[0] // cfg.batch
    pb.load(MemType.ACC, 0, acc.addr, rows, 1, 1)
    pb.alu(AluOp.MUL, 0, 1, imm=3, iter_out=rows, dst_factor=(1, 0), push_next=True)
    pb.store(0, out.addr, rows, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    result = dev.run(pb)
    np.testing.assert_array_equal(dev.copy_from(out), 3 * x)
    np.testing.assert_array_equal(dev.copy_from(acc), x)
    assert result.counters["insn.ALU"] == 1


def test_backend_registry_errors() -> None:
    assert set(backend_names()) == {"fsim", "cycle", "rtl", "fpga"}  # every name has a module behind it
    with pytest.raises(BackendError, match=r"unknown backend 'nope'; available backends: fsim"):
        get_backend("nope")
    program, _ = tiled_gemm_program(load_config("tiny"), 4, 4, 4)
    with pytest.raises(BackendError, match=r"does not accept option\(s\) \['bogus'\]"):
        run(program, "fsim", bogus=1)
