"""The conv2d schedule and each VDLA pass, checked by running the program before and after it on
the TIR interpreter, and the final stream on fsim and cycle, bit-exact vs NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.tir import Allocate, AttrStmt, BufferLoad, Evaluate, For, IfThenElse, IntImm, SeqStmt, run as interpret
from vdla_hw.isa import AluOp
from vdla.compiler.tir.functor import collect, replace_node
from vdla.compiler.vdla import VdlaTarget, build, passes
from vdla.compiler.vdla.intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, UOP_SCOPE, alu_uop
from vdla.compiler.vdla.passes.common import perfect_nest
from vdla.compiler.vdla.passes import VdlaLoweringError, fold_bias_init, inject_alu_op
from vdla.compiler.vdla.decode import as_dma, as_uop_insn, split_deps
from vdla.compiler.vdla.stmt import DEPS, UOP_LOOP, packed_call
from vdla.compiler.vdla.topi import Conv2dKnobs, Conv2dWorkload, Requantize, conv2d_func, conv2d_schedule
from vdla.compiler.vdla.target import SCOPE_UOP
from vdla.compiler.vdla.topi.fit import footprint
from vdla.compiler.vdla.topi.ops import check_conv2d, compile_conv2d
from vdla.compiler.vdla.topi import reference as ref
from vdla.compiler.vdla.topi.ops import random_conv_data

TARGET = VdlaTarget.from_config("default")
WL = Conv2dWorkload(1, 32, 6, 6, 32, 3, 3, 1, 1)
KNOBS = Conv2dKnobs(oc_tile=1, oh_tile=3, ic_tile=1, virtual_threads=2, vt_axis="oc", loop_order="oc_oh")
EPI = Requantize(shift=9)


def _run(func, data, kernel, bias):  # type: ignore[no-untyped-def]
    cfg = TARGET.config
    out = np.zeros((1, WL.oc // 16, WL.oh, WL.ow, 1, 16), np.int8)
    interpret(func, ref.pack_data(cfg, data), ref.pack_kernel(cfg, kernel), ref.pack_bias(cfg, bias), out)
    return ref.unpack_output(out)


def _stages():  # type: ignore[no-untyped-def]
    func = conv2d_func(WL, KNOBS, TARGET, EPI)
    out = [("scheduled", func)]
    for name, fn in passes(TARGET):
        func = fn(func)
        out.append((name, func))
    return out


@pytest.fixture(scope="module")
def stages():  # type: ignore[no-untyped-def]
    return _stages()


def test_every_stage_runs_bit_exact_on_the_interpreter(stages) -> None:  # type: ignore[no-untyped-def]
    data, kernel, bias = random_conv_data(WL, seed=1)
    want = ref.conv2d_reference(data, kernel, bias, 1, 1, EPI.shift, EPI.relu)
    for name, func in stages:
        assert np.array_equal(_run(func, data, kernel, bias), want), f"after {name}"


def test_pass_outputs_have_the_expected_form(stages) -> None:  # type: ignore[no-untyped-def]
    text = {name: str(func) for name, func in stages}
    assert "block " in text["scheduled"] and "block " not in text["lower_blocks"]
    assert "vdla.gemm_uop" in text["scheduled"] and "vdla.gemm_reset_uop" in text["scheduled"]
    # the scope is lifted above the loops around the tensorized micro-op
    assert text["lower_blocks"].count("vdla.uop_scope") == text["inject_uop_scope"].count("vdla.uop_scope")
    lifted = text["inject_uop_scope"].split("vdla.uop_scope = 'gemm'")[2]
    assert lifted.lstrip().startswith("for ")
    assert "vdla.alu_uop" not in text["inject_uop_scope"] and "vdla.alu_uop" in text["inject_alu_op"]
    assert "vdla.load" not in text["inject_alu_op"] and "vdla.load" in text["inject_dma_copy"]
    assert "vdla.store" in text["inject_dma_copy"]
    assert UOP_LOOP in text["fold_uop_loop"]
    assert "virtual_thread" in text["fold_uop_loop"] and "virtual_thread" not in text["inject_virtual_thread"]
    assert ".vt1" in text["inject_virtual_thread"]
    assert "alloc vdla_inp" in text["allocate_sram"]
    assert " for " not in text["unroll_stream"].split("vdla.uop_scope")[0]
    assert DEPS in text["insert_dep_token"]


def test_schedule_uses_the_generic_primitives() -> None:
    s = conv2d_schedule(WL, KNOBS, TARGET, EPI)
    steps = " ".join(s.trace)
    for primitive in ("cache_read(data_pad, 'vdla.inp')", "cache_read(kernel, 'vdla.wgt')",
                      "cache_write(conv, 'vdla.acc')", "compute_at(", "decompose_reduction(", "compact_buffers()",
                      "'vthread')", "tensorize(b_c, vdla.gemm_1x16x16)", "vdla.gemm_1x16x16_reset)"):
        assert primitive in steps
    # every on-chip buffer was compacted to one tile's region
    text = str(s.func)
    assert "data_pad_vdla.inp: int8[1, 1, 5, 8, 1, 16]" in text and "conv_vdla.acc: int32[1, 1, 3, 6, 1, 16]" in text


def _alu_ops_and_stores(func):  # type: ignore[no-untyped-def]
    stmts = [split_deps(s)[1] for s in func.body.body.body.body.stmts]  # type: ignore[union-attr]
    ops = [as_uop_insn(s).alu_op.name for s in stmts if as_uop_insn(s) is not None and as_uop_insn(s).kind == "alu"]
    stores = [as_dma(s) for s in stmts if as_dma(s) is not None and not as_dma(s).load]
    return ops, stores


def test_epilogue_tail_folds_into_the_store(stages) -> None:  # type: ignore[no-untyped-def]
    ops, stores = _alu_ops_and_stores(dict(stages)["unroll_stream"])
    # nothing stays on the ALU: the STORE requantizes and adds the bias (fold_bias_store)
    assert ops == [] and stores and all(d.bias is not None for d in stores)
    assert {(d.requant.shift, d.requant.clip, d.requant.relu) for d in stores} == {(EPI.shift, True, True)}
    text = {name: str(func) for name, func in stages}
    assert "vdla.requant" not in text["inject_uop_scope"] and "vdla.requant" in text["fold_requant_store"]


def _resets(func) -> int:  # type: ignore[no-untyped-def]
    stmts = [split_deps(s)[1] for s in func.body.body.body.body.stmts]  # type: ignore[union-attr]
    return sum(1 for s in stmts if as_uop_insn(s) is not None and as_uop_insn(s).kind == "gemm" and as_uop_insn(s).reset)


def _overwrites(func) -> int:  # type: ignore[no-untyped-def]
    stmts = [split_deps(s)[1] for s in func.body.body.body.body.stmts]  # type: ignore[union-attr]
    return sum(1 for s in stmts if as_uop_insn(s) is not None and as_uop_insn(s).kind == "gemm"
               and as_uop_insn(s).overwrite)


def test_bias_on_the_store_removes_the_accumulator_init() -> None:
    """fold_bias_store (the default) on a reduction chunked over input channels: the first chunk's
    loop iteration is peeled, each output tile's first reduction step is one overwriting GEMM, no
    reset or ALU op is left, and every STORE adds its tile's bias."""
    func = conv2d_func(WL, KNOBS, TARGET, EPI)
    data, kernel, bias = random_conv_data(WL, seed=7)
    want = ref.conv2d_reference(data, kernel, bias, 1, 1, EPI.shift, EPI.relu)
    for name, fn in passes(TARGET):
        func = fn(func)
        if name == "fold_bias_store":
            assert np.array_equal(_run(func, data, kernel, bias), want)
            assert "vdla.gemm_overwrite_uop" in str(func) and "vdla.alu_uop" not in str(func)
    ops, stores = _alu_ops_and_stores(func)
    assert ops == [] and _resets(func) == 0
    assert _overwrites(func) == len(stores) > 0 and all(d.bias is not None for d in stores)
    compiled = compile_conv2d(WL, TARGET, knobs=KNOBS, epilogue=EPI)
    # the capacity model counts the split lists: overwriting first step, guarded rest, whole list
    loaded = compiled.module.program.buffers["uops"].nbytes // 4
    assert footprint(WL, KNOBS, TARGET.config, EPI)[SCOPE_UOP] == loaded
    for backend in ("fsim", "cycle"):
        assert check_conv2d(compiled, seed=8, backend=backend)[0], backend


@pytest.mark.parametrize("bias_init", [True, False])
def test_bias_initialises_the_accumulators_instead_of_reset_and_add(bias_init: bool) -> None:
    # the MOV path (bias_store=False) and the reset + ADD path before it
    func = conv2d_func(WL, KNOBS, TARGET, Requantize(shift=9, bias_init=bias_init, bias_store=False))
    data, kernel, bias = random_conv_data(WL, seed=5)
    want = ref.conv2d_reference(data, kernel, bias, 1, 1, 9, True)
    for name, fn in passes(TARGET):
        func = fn(func)
        if name == "fold_bias_init":
            assert np.array_equal(_run(func, data, kernel, bias), want)
    ops, stores = _alu_ops_and_stores(func)
    # one ALU instruction per output tile either way; the GEMM resets go with the MOV
    assert ops == ["MOV" if bias_init else "ADD"] * len(stores)
    assert _resets(func) == (0 if bias_init else len(stores))
    ep = Requantize(shift=9, bias_init=bias_init, bias_store=False)
    compiled = compile_conv2d(WL, TARGET, knobs=KNOBS, epilogue=ep)
    # the capacity model counts the micro-op lists code generation loads: no reset list with the MOV
    loaded = compiled.module.program.buffers["uops"].nbytes // 4
    assert footprint(WL, KNOBS, TARGET.config, ep)[SCOPE_UOP] == loaded
    for backend in ("fsim", "cycle"):
        assert check_conv2d(compiled, seed=6, backend=backend)[0], backend


def test_epilogue_becomes_in_place_alu_ops_in_order_without_on_store() -> None:
    func = conv2d_func(WL, KNOBS, TARGET, Requantize(shift=9, on_store=False))
    for _, fn in passes(TARGET):
        func = fn(func)
    ops, stores = _alu_ops_and_stores(func)
    # bias, ReLU, requantize shift, clip (no lower clip after ReLU); the two virtual threads interleave
    assert ops[:8:2] == ops[1:8:2] == ["MOV", "MAX", "SHR", "MIN"]
    assert {(d.requant.shift, d.requant.clip, d.requant.relu) for d in stores} == {(0, False, False)}


@pytest.mark.parametrize("epi, alu, store", [
    (Requantize(shift=5, relu=False), [], (5, True, False)),            # signed clip: lower bound OUT_MIN
    (Requantize(shift=0, relu=True), [], (0, True, True)),              # no shift: ReLU + clip only
    (Requantize(shift=5, bias_store=False), ["MOV"], (5, True, True)),  # the bias MOV instead of the STORE's bias
    (Requantize(shift=5, bias_init=False), ["ADD"], (5, True, True)),   # reset + bias ADD, as before
    (Requantize(shift=3, relu=False, bias=False), [], (3, True, False)),  # nothing left for the ALU
])
def test_fold_requant_store_variants_run_bit_exact(epi, alu, store) -> None:  # type: ignore[no-untyped-def]
    func = conv2d_func(WL, KNOBS, TARGET, epi)
    data, kernel, bias = random_conv_data(WL, seed=3)
    want = ref.conv2d_reference(data, kernel, bias if epi.bias else None, 1, 1, epi.shift, epi.relu)
    for name, fn in passes(TARGET):
        func = fn(func)
        if name == "fold_requant_store":
            out = np.zeros((1, WL.oc // 16, WL.oh, WL.ow, 1, 16), np.int8)
            args = [ref.pack_data(TARGET.config, data), ref.pack_kernel(TARGET.config, kernel)]
            args += [ref.pack_bias(TARGET.config, bias)] if epi.bias else []
            interpret(func, *args, out)
            assert np.array_equal(ref.unpack_output(out), want)
    ops, stores = _alu_ops_and_stores(func)
    assert sorted(set(ops)) == alu
    assert {(d.requant.shift, d.requant.clip, d.requant.relu) for d in stores} == {store}


def test_in_place_epilogue_refuses_a_later_reader() -> None:
    func = dict(_stages())["inject_uop_scope"]
    body = func.body
    acc = next(n.buffer for n in collect(body, lambda n: isinstance(n, Allocate)) if n.buffer.name == "conv_vdla.acc")
    tile = next(n for n in collect(body, lambda n: isinstance(n, SeqStmt)) if any(
        isinstance(x, For) and x.loop_var.name == "o_i" for x in n.stmts))
    reread = Evaluate(BufferLoad(acc, tuple(IntImm(0) for _ in acc.shape)))
    broken = func.with_body(replace_node(body, tile, SeqStmt(tile.stmts + (reread,))))
    with pytest.raises(VdlaLoweringError, match="later statement reads it"):
        inject_alu_op(broken, TARGET)


def test_virtual_threads_get_disjoint_sram_regions(stages) -> None:  # type: ignore[no-untyped-def]
    func = dict(stages)["unroll_stream"]
    gemm_inputs = set()
    for s in func.body.body.body.body.stmts:  # three arena allocations around the stream
        insn = as_uop_insn(split_deps(s)[1])
        if insn is not None and insn.kind == "gemm" and insn.overwrite:  # a tile's first step: its first input
            gemm_inputs.add(min(u.src for u in insn.uops))
    assert len(gemm_inputs) == 2


def test_dma_padding_is_inferred_from_the_condition(stages) -> None:  # type: ignore[no-untyped-def]
    func = dict(stages)["unroll_stream"]
    pads = {as_dma(s).pad for s in func.body.body.body.body.stmts if as_dma(s) is not None and as_dma(s).load}  # type: ignore[union-attr]
    assert (1, 0, 1, 1) in pads and (0, 1, 1, 1) in pads  # top and bottom row tiles pad differently


@pytest.mark.parametrize("backend", ["fsim", "cycle"])
def test_compiled_program_is_bit_exact(backend: str) -> None:
    module = build(conv2d_func(WL, KNOBS, TARGET, EPI), TARGET)
    data, kernel, bias = random_conv_data(WL, seed=2)
    cfg = TARGET.config
    got = module(ref.pack_data(cfg, data), ref.pack_kernel(cfg, kernel), ref.pack_bias(cfg, bias), backend=backend)
    assert np.array_equal(ref.unpack_output(got), ref.conv2d_reference(data, kernel, bias, 1, 1, EPI.shift, EPI.relu))


def test_fold_requant_store_leaves_what_the_store_cannot_do_exactly() -> None:
    from vdla.compiler.tir import FloorDiv, Var
    from vdla.compiler.tir.ir import Max, Min
    from vdla.compiler.vdla.passes.fold_requant_store import _peel
    from vdla.compiler.vdla.stmt import Requant

    x = Var("x", "int32")
    assert _peel(Min(x, IntImm(127)), 8) is None                   # an upper bound alone is no saturating clip
    assert _peel(Max(x, IntImm(-128)), 8) is None                  # nor a lower bound alone
    assert _peel(Min(Max(x, IntImm(-100)), IntImm(127)), 8) is None  # a bound that is not the output range
    assert _peel(FloorDiv(x, IntImm(6)), 8) is None                # not a power of two
    assert _peel(Min(FloorDiv(Max(x, IntImm(0)), IntImm(16)), IntImm(127)), 8) == (x, Requant(4, True, True))
    assert _peel(Max(FloorDiv(x, IntImm(2)), IntImm(0)), 8) == (x, Requant(1, False, True))


def test_fold_bias_init_keeps_the_reset_when_the_accumulator_is_read_before_the_add() -> None:
    func = conv2d_func(WL, KNOBS, TARGET, EPI)
    for name, fn in passes(TARGET):
        func = fn(func)
        if name == "inject_alu_op":
            break
    tile = collect(func.body, lambda n: isinstance(n, SeqStmt) and "vdla.gemm_reset_uop" in str(n.stmts[0]))[0]
    acc = tile.stmts[0].node
    # An ALU op on the accumulator between its reset and the bias ADD sees the zeros: a MOV of the
    # bias in the reset's place would change its result, so the pass must leave the tile alone.
    probe = AttrStmt(acc, UOP_SCOPE, "alu", alu_uop(AluOp.MAX, acc, 0, imm=0))
    broken = func.with_body(replace_node(func.body, tile, SeqStmt((tile.stmts[0], probe) + tile.stmts[1:])))
    folded = str(fold_bias_init(broken))
    mov = f", {int(AluOp.MOV)}, 0, 0)"  # the op / use_imm / imm arguments of a tensor MOV micro-op
    assert folded.count("vdla.gemm_reset_uop") == 1 and mov not in folded
    unbroken = str(fold_bias_init(func))
    assert unbroken.count("vdla.gemm_reset_uop") == 0 and mov in unbroken


@pytest.mark.parametrize("bias_init", [True, False])
@pytest.mark.parametrize("ic_tile, oh_tile, sunk", [(4, 2, True), (2, 2, True), (4, 4, False)],
                         ids=["one-chunk", "chunk-loop-peeled", "one-tile-per-thread"])
def test_each_thread_initialises_its_accumulators_right_before_its_gemms(bias_init: bool, ic_tile: int, oh_tile: int,
                                                                         sunk: bool) -> None:
    # Merged position by position, both threads' inits would come before thread 0's GEMMs, and thread
    # 1's init would wait for the STORE of its previous tile while thread 0's GEMMs could run.  With
    # the reduction chunked, the chunk loop's first iteration is peeled off to take them; with one
    # tile per thread there is no store to wait for and the inits stay in front.
    wl = Conv2dWorkload(1, 64, 8, 8, 32, 1, 1, 1, 0)
    knobs = Conv2dKnobs(oc_tile=2, oh_tile=oh_tile, ic_tile=ic_tile, virtual_threads=2, vt_axis="oh", loop_order="oc_oh")
    ep = Requantize(shift=8, bias_init=bias_init)
    func = conv2d_func(wl, knobs, TARGET, ep)
    for name, fn in passes(TARGET):
        func = fn(func)
        if name == "inject_virtual_thread":
            break
    scopes = [(s.value, s.node.name, _writes_without_reading(s))
              for s in collect(func.body, lambda n: isinstance(n, AttrStmt) and n.key == UOP_SCOPE)]
    inits = [i for i, (_, _, init) in enumerate(scopes) if init]
    assert len(inits) == 2  # the tile loop's body: one init per thread
    if sunk:
        for i in inits:
            kind, buf, init = scopes[i + 1]
            assert (kind, buf, init) == ("gemm", scopes[i][1], False), scopes
    else:
        assert inits == [0, 1]
    compiled = compile_conv2d(wl, TARGET, knobs=knobs, epilogue=ep)
    for backend in ("fsim", "cycle"):
        assert check_conv2d(compiled, seed=2, backend=backend)[0], backend


def _writes_without_reading(scope: AttrStmt) -> bool:
    """A GEMM reset or overwrite or an ALU MOV scope."""
    body = perfect_nest(scope.body)[1]
    if isinstance(body, IfThenElse):  # the guarded rest of a split reduction (fold_bias_store)
        body = body.then_case
    call = packed_call(body)
    assert call is not None
    return call[0] in (GEMM_RESET_UOP, GEMM_OVERWRITE_UOP) or (call[0] == ALU_UOP and call[1][4].value == AluOp.MOV)
