"""Spill counting (``autotune.spills``) and the measurer's handling of a config that spills: it is not timed
(its time moves with the stack position of the call), the log says why, and the default is timed whatever it
spills."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from vdla.compiler.autotune.database import Database
from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import MeasureOptions, Measurer, Status, build_job
from vdla.compiler.autotune.spills import SpillCount, count_spills, spills_of
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.autotune.tuner import make_tuner, tune_task
from vdla.compiler.codegen.llvm import parse_target

needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None and shutil.which("llvm-objdump") is None,
                                   reason="objdump (binutils) is not installed")

# objdump -d --no-show-raw-insn text of two functions.  The first (no frame pointer): a zmm spill store and
# its reload folded into an FMA, a ymm read of a slot no vector store wrote (stack data, not a spill), an indexed
# read of a padded row, a scalar stack store, a heap load, the closure pointers' xmm round trip, and %rbp used
# as a data pointer (stored and read at one offset: not the stack).  The second sets %rbp up as its frame
# pointer: a ymm spill and two reloads off it.
_LINES = """\
0000000000001120 <conv2d_nchwc_kernel_par0>:
    1292:\tvmovups %zmm0,0x40(%rsp)
    15c5:\tvfmadd231ps 0x40(%rsp),%zmm3,%zmm7
    15d0:\tvmovups 0x80(%rsp),%ymm2
    1610:\tvbroadcastss 0x4(%rsp,%rax,4),%zmm5
    1620:\tmov    %rax,0x8(%rsp)
    1630:\tvmovups (%rdi),%zmm1
    1599:\tvmovaps %xmm0,(%rsp)
    199e:\tvmovaps (%rsp),%xmm0
    1a00:\tvmovups %zmm4,-0x40(%rbp)
    1a10:\tvfmadd231ps -0x40(%rbp),%zmm3,%zmm7

0000000000001840 <conv2d_nchwc>:
    1840:\tpush   %rbp
    1841:\tmov    %rsp,%rbp
    1850:\tvmovups %ymm2,-0x80(%rbp)
    1860:\tvmovups -0x80(%rbp),%ymm2
    1870:\tvaddps -0x80(%rbp),%ymm1,%ymm1
"""


def _stem(target: str, hw: int = 56) -> Task:
    """A model's first conv (3 -> 32 channels, 3 x 3 stride 2, the NCHW input blocked one channel per block)."""
    lanes = parse_target(target).vector_lanes()
    wl = {"n": 1, "ic_outer": 3, "h": hw, "w": hw, "ic_block": 1, "oc_outer": 32 // lanes, "kh": 3, "kw": 3,
          "oc_block": lanes, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}
    return make_task("conv2d_nchwc", wl, target)


def _spills(task: Task, **knobs: Any) -> SpillCount:
    default = template_for(task).default().to_dict()
    return spills_of(build_job(task.to_json(), None, dict(default, **knobs)))


def test_spills_are_ymm_and_zmm_reloads_of_stack_slots_a_vector_store_wrote() -> None:
    assert count_spills(_LINES) == SpillCount(reloads=3, stores=2)
    assert count_spills(_LINES).spills
    assert count_spills("") == SpillCount(0, 0) and not SpillCount(0, 3).spills
    assert "3 reloads, 2 stores" in count_spills(_LINES).describe()


@needs_objdump
@pytest.mark.parametrize("hw", [224, 56])
def test_avx512_stem_2x14_tile_spills_and_its_2x8_default_does_not(hw: int) -> None:
    """The stem's old AVX-512 default (2 rows x 14 columns, taps unrolled) spills; the 2 x 8 (224 px) or
    2 x 7 (56 px) that replaced it reloads nothing from the stack."""
    task = _stem("llvm -mcpu=skylake-avx512", hw)
    assert template_for(task).default().to_dict()["ow_block"] in (7, 8)
    assert _spills(task) == SpillCount(0, 0)
    wide = _spills(task, ow_block=14)
    assert wide.spills and wide.reloads >= 8, wide


@needs_objdump
def test_avx2_stem_default_spills_and_rolled_or_narrower_tiles_do_not() -> None:
    """AVX2's stem default (2 x 6, taps unrolled: 12 accumulators in 16 ymm) spills; 2 x 4 does not, nor the
    2 x 6 tile with its taps rolled (``kh_kw_ic``) on the 224-wide rows."""
    task = _stem("llvm -mcpu=haswell", 224)
    assert template_for(task).default().to_dict()["ow_block"] == 6
    assert _spills(task).spills
    assert _spills(task, ow_block=4) == SpillCount(0, 0)
    assert _spills(task, unroll_kw=False, reduce_order="kh_kw_ic") == SpillCount(0, 0)


def test_avx2_configs_are_timed_whatever_they_spill() -> None:
    """With AVX2's 16 registers spilling is the rule and moved kernels 2-7% (docs/autotune.md): the measurer
    counts nothing there; an AVX-512 task of the same layer is counted."""
    from vdla.compiler.autotune.spills import REJECT_MIN_REGISTERS

    with LocalExecutor(workers=1) as ex:
        avx2 = Measurer(_stem("llvm -mcpu=haswell"), ex, MeasureOptions())
        assert avx2.template.registers < REJECT_MIN_REGISTERS and not avx2.counts_spills
        if shutil.which("objdump") or shutil.which("llvm-objdump"):
            assert Measurer(_stem("llvm -mcpu=skylake-avx512"), ex, MeasureOptions()).counts_spills


def test_without_objdump_the_tuner_times_every_config_and_says_so(monkeypatch) -> None:
    """No disassembler: the measurer does not count (it times spilling configs too) and warns, naming binutils."""
    from vdla.compiler.autotune import spills

    monkeypatch.setattr(spills.shutil, "which", lambda name: None)
    spills.warn_no_objdump.cache_clear()
    with LocalExecutor(workers=1) as ex, pytest.warns(RuntimeWarning, match="binutils"):
        m = Measurer(_stem("llvm -mcpu=skylake-avx512"), ex, MeasureOptions())
    assert not m.counts_spills
    with pytest.raises(spills.ToolchainError, match="objdump"):
        spills.objdump()


def test_a_negative_reload_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_spill_reloads"):
        MeasureOptions(max_spill_reloads=-1)


@needs_objdump
def test_a_spilling_config_is_not_timed_and_the_log_says_why(tmp_path) -> None:
    """On the host's target, when it has AVX-512's 32 registers: the stem configs that reload more vectors than
    the limit are logged as ``spills`` (not timed, the count in the detail) and never become the best; the
    default is timed whatever it spills; without a limit every config is timed."""
    if parse_target("llvm").vector_registers < 32:
        pytest.skip("the host has no AVX-512: its configs are timed whatever they spill (the test above)")
    task = _stem("llvm", 56)
    template = template_for(task)
    default = template.default()
    candidates = [c for c in (dict(default.to_dict(), ow_block=w) for w in (14, 7, 4, 2))
                  if template.space.why_illegal(template.space.from_dict(c)) is None]
    counts = {template.space.from_dict(c).key: spills_of(build_job(task.to_json(), None, c)) for c in candidates}
    counts[default.key] = spills_of(build_job(task.to_json(), None, default.to_dict()))
    limit = 0
    assert any(n.reloads > limit for k, n in counts.items() if k != default.key), counts  # a config to reject
    configs = [default] + [template.space.from_dict(c) for c in candidates if template.space.from_dict(c).key != default.key]
    with LocalExecutor(workers=1) as ex:
        strict = Measurer(task, ex, MeasureOptions(repeats=2, warmup=1, max_spill_reloads=limit))
        assert strict.counts_spills
        for res in strict.measure(configs):
            spilling = counts[res.config.key].reloads > limit
            if res.config.key != default.key and spilling:
                assert res.status == Status.SPILLS and not res.costs and res.cost == float("inf")
                assert f"{counts[res.config.key].reloads} reloads" in res.detail and "not timed" in res.detail
            else:
                assert res.status == Status.OK and res.costs, (res.status, res.detail)
        loose = Measurer(task, ex, MeasureOptions(repeats=2, warmup=1, max_spill_reloads=None))
        assert not loose.counts_spills
        assert all(r.status == Status.OK for r in loose.measure(configs))
        db = Database(tmp_path / "t.jsonl")
        tune_task(make_tuner("grid", template, seed=0), strict, db, trials=6, batch=3, retime=0)
    records = db.of_task(task)
    assert records
    rejected = [r for r in records if r.status == Status.SPILLS.value]
    for r in rejected:
        assert "not timed" in r.detail and r.config_key != default.key and not r.costs
    assert db.best(task).status == "ok"
    assert db.best(task).config_key not in {r.config_key for r in rejected}
