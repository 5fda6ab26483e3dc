"""split_prologue_load and split_drain_store: the prologue and the drain split by block.

Each pass is run on a real lowered conv2d and the program before and after it runs on the TIR
interpreter bit-exact against NumPy; the compiled layers run bit-exact on fsim and cycle, the fit
model counts the pieces' micro-op lists exactly, and the split programs take fewer cycles on the
cycle model than the unsplit ones (the same layer, knobs and model)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.tir import SeqStmt, run as interpret
from vdla.compiler.vdla import VdlaTarget, passes
from vdla.compiler.vdla.decode import as_dma, as_uop_insn, module_and_ranges
from vdla.compiler.vdla.passes.split_block import split_count, split_dma, split_gemm
from vdla.compiler.vdla.target import SCOPE_UOP
from vdla.compiler.vdla.topi import RESNET18_CONVS, Conv2dKnobs, Conv2dWorkload, Requantize, conv2d_func, requant_shift
from vdla.compiler.vdla.topi import reference as ref
from vdla.compiler.vdla.topi.fit import footprint, knob_space
from vdla.compiler.vdla.topi.ops import check_conv2d, compile_conv2d, random_conv_data

TARGET = VdlaTarget.from_config("default")
WL = Conv2dWorkload(1, 64, 8, 8, 64, 1, 1, 1, 0)
KNOBS = Conv2dKnobs(oc_tile=4, oh_tile=4, ic_tile=2, virtual_threads=2, vt_axis="oh", loop_order="oc_oh")
EPI = Requantize(shift=8)


def _run(func, wl: Conv2dWorkload, data, kernel, bias):  # type: ignore[no-untyped-def]
    cfg = TARGET.config
    out = np.zeros((1, wl.oc // 16, wl.oh, wl.ow, 1, 16), np.int8)
    interpret(func, ref.pack_data(cfg, data), ref.pack_kernel(cfg, kernel), ref.pack_bias(cfg, bias), out)
    return ref.unpack_output(out)


def _stages(wl: Conv2dWorkload, knobs: Conv2dKnobs, ep: Requantize) -> dict:  # type: ignore[type-arg]
    func = conv2d_func(wl, knobs, TARGET, ep)
    out = {}
    for name, fn in passes(TARGET):
        func = fn(func)
        out[name] = func
    return out


def _stream(func) -> list:  # type: ignore[no-untyped-def]
    body = func.body
    while not isinstance(body, SeqStmt):
        body = body.body
    return list(body.stmts)


def _uops_loaded(compiled) -> int:  # type: ignore[no-untyped-def]
    program = compiled.module.program
    return program.buffers["uops"].nbytes // 4 if "uops" in program.buffers else 0


@pytest.fixture(scope="module")
def stages():  # type: ignore[no-untyped-def]
    return _stages(WL, KNOBS, EPI)


def test_each_split_pass_runs_bit_exact_on_the_interpreter(stages) -> None:  # type: ignore[no-untyped-def]
    data, kernel, bias = random_conv_data(WL, seed=3)
    want = ref.conv2d_reference(data, kernel, bias, 1, 0, EPI.shift, EPI.relu)
    before = len(_stream(stages["unroll_stream"]))
    for name in ("unroll_stream", "split_prologue_load", "split_prologue_rest", "split_drain_store"):
        assert np.array_equal(_run(stages[name], WL, data, kernel, bias), want), f"after {name}"
    # both passes split something here: the prologue's weight LOADs and first GEMMs, the last GEMMs and STOREs
    pro, drain = len(_stream(stages["split_prologue_load"])), len(_stream(stages["split_drain_store"]))
    assert before < pro < drain
    loads = [as_dma(s) for s in _stream(stages["split_prologue_load"]) if as_dma(s) is not None and as_dma(s).load]
    first_gemm = next(i for i, s in enumerate(_stream(stages["split_prologue_load"])) if as_uop_insn(s) is not None)
    assert sum(d.sram.scope == "vdla.wgt" for d in loads[:first_gemm]) > KNOBS.virtual_threads


def test_drain_stores_follow_their_own_gemm_piece(stages) -> None:  # type: ignore[no-untyped-def]
    """Each STORE group of the drain comes right after the GEMM piece that writes what it stores."""
    stream = _stream(stages["split_drain_store"])
    info = [module_and_ranges(s) for s in stream]
    last_load = max(i for i, (m, _, _) in enumerate(info) if m.name == "LOAD")
    stores = [i for i in range(last_load + 1, len(stream)) if info[i][0].name == "STORE"]
    assert len(stores) > KNOBS.virtual_threads
    for j in stores:
        prev = info[j - 1]
        assert prev[0].name in ("COMPUTE", "STORE")
        if prev[0].name == "COMPUTE":
            assert prev[2][0] == info[j][1][0]  # the piece writes exactly the accumulators the STORE reads


def test_split_gemm_per_block_refolds_and_keeps_every_micro_op(stages) -> None:  # type: ignore[no-untyped-def]
    """Every GEMM of the stream split into one piece per block (refolded): same micro-op iterations,
    and the program still runs bit-exact on the interpreter."""
    func = stages["unroll_stream"]
    stream = _stream(func)
    out, split = [], 0
    for s in stream:
        pieces = split_gemm(s, TARGET)
        if pieces is None:
            out.append(s)
            continue
        insn = as_uop_insn(s)
        assert sum(as_uop_insn(p).iterations for p in pieces) == insn.iterations  # type: ignore[union-attr]
        assert all(len(as_uop_insn(p).uops) <= len(insn.uops) for p in pieces)  # type: ignore[union-attr]
        out.extend(pieces)
        split += 1
    assert split > 0
    data, kernel, bias = random_conv_data(WL, seed=4)
    want = ref.conv2d_reference(data, kernel, bias, 1, 0, EPI.shift, EPI.relu)
    body = func.body
    arenas = []
    while not isinstance(body, SeqStmt):
        arenas.append(body.buffer)
        body = body.body
    from vdla.compiler.vdla.passes.split_block import rebuild_stream
    assert np.array_equal(_run(rebuild_stream(func, arenas, out), WL, data, kernel, bias), want)


def test_split_dma_covers_the_same_tiles(stages) -> None:  # type: ignore[no-untyped-def]
    for s in _stream(stages["unroll_stream"]):
        dma = as_dma(s)
        if dma is None or dma.pad != (0, 0, 0, 0):
            continue
        for n in (2, 4):
            parts = split_dma(s, n)
            if parts is None:
                continue
            ranges = sorted(r for p in parts for r in (module_and_ranges(p)[2] or module_and_ranges(p)[1][:1]))
            whole = (module_and_ranges(s)[2] or module_and_ranges(s)[1][:1])[0]
            assert ranges[0][1] == whole[1] and ranges[-1][2] == whole[2]
            assert all(a[2] == b[1] for a, b in zip(ranges, ranges[1:]))  # contiguous, no overlap


def test_split_count_trades_the_first_piece_against_per_piece_overhead() -> None:
    assert split_count(16, 1574, 39, 2) == 4
    assert split_count(16, 100, 39, 2) == 1      # not worth an extra instruction
    assert split_count(7, 10_000, 1, 1) == 7     # a prime: all or nothing
    assert split_count(1, 10_000, 1, 1) == 1


def test_prologue_rest_runs_beside_its_weight_blocks() -> None:
    """C5's first tile: each weight block's guarded rest right after its overwriting first step (not one rest
    waiting for every block), so the rest's GEMMs start as their own block arrives."""
    wl = RESNET18_CONVS["C5"]
    knobs = Conv2dKnobs(oc_tile=8, oh_tile=1, ic_tile=4, virtual_threads=2, vt_axis="oh", loop_order="oc_oh")
    st = _stages(wl, knobs, Requantize(shift=requant_shift(wl)))

    def gemms(name: str) -> list[bool]:  # the overwrite flag of the GEMMs, in order
        return [u.overwrite for s in _stream(st[name]) if (u := as_uop_insn(s)) is not None and u.kind == "gemm"]

    before, after = gemms("split_prologue_load"), gemms("split_prologue_rest")
    assert before[:5] == [True, True, True, True, False]  # 4 first-step pieces, then one rest over all blocks
    assert after[:8] == [True, False] * 4 and len(after) == len(before) + 3


@pytest.mark.parametrize("layer, knobs", [
    ("C11", Conv2dKnobs(oc_tile=16, oh_tile=7, ic_tile=2, virtual_threads=2, vt_axis="oc", loop_order="oc_oh")),
    ("C5", Conv2dKnobs(oc_tile=8, oh_tile=1, ic_tile=4, virtual_threads=2, vt_axis="oh", loop_order="oc_oh")),
])
def test_split_layer_is_bit_exact_and_faster_on_the_cycle_model(layer: str, knobs: Conv2dKnobs) -> None:
    wl = RESNET18_CONVS[layer]
    cycles = {}
    for split in (False, True):
        ep = Requantize(shift=requant_shift(wl), split_edges=split)
        compiled = compile_conv2d(wl, TARGET, knobs=knobs, epilogue=ep)
        assert footprint(wl, knobs, TARGET.config, ep)[SCOPE_UOP] == _uops_loaded(compiled)
        ok, result, got, _ = check_conv2d(compiled, backend="cycle")
        assert ok, f"{layer} split={split} not bit-exact on cycle"
        ok_f, _, got_f, _ = check_conv2d(compiled, backend="fsim")
        assert ok_f and np.array_equal(got, got_f)
        cycles[split] = result.cycles
    assert cycles[True] < cycles[False], cycles


@pytest.mark.parametrize("cfg, layer, count", [
    ("default", "C11", 3), ("tiny", "C4", 2),
    pytest.param("default", "C3", 6, marks=pytest.mark.slow), pytest.param("default", "C6", 6, marks=pytest.mark.slow),
    pytest.param("tiny", "C11", 6, marks=pytest.mark.slow), pytest.param("wide", "C8", 6, marks=pytest.mark.slow)])
def test_fit_counts_the_split_micro_op_lists_exactly(cfg: str, layer: str, count: int) -> None:
    target = VdlaTarget.from_config(cfg)
    wl = RESNET18_CONVS[layer].with_padded_channels(target.config)
    ep = Requantize(shift=requant_shift(wl))
    space = knob_space(wl, target, (1, 2), ep)
    picks = [space[i * (len(space) - 1) // max(1, count - 1)] for i in range(count)]
    for knobs in picks:
        compiled = compile_conv2d(wl, target, knobs=knobs, epilogue=ep)
        assert footprint(wl, knobs, target.config, ep)[SCOPE_UOP] == _uops_loaded(compiled), knobs


@pytest.mark.slow
def test_split_layer_bit_exact_on_rtl(stages) -> None:  # type: ignore[no-untyped-def]
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.skip(why)
    compiled = compile_conv2d(WL, TARGET, knobs=KNOBS, epilogue=EPI)
    assert compiled.module.program.insn_count > len(_stream(stages["unroll_stream"]))  # the split program
    ok, result, got, _ = check_conv2d(compiled, backend="rtl")
    _, cyc, got_c, _ = check_conv2d(compiled, backend="cycle")
    assert ok and np.array_equal(got, got_c) and result.cycles > 0
