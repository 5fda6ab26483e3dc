"""``bench/conv_spills.py``: its count of vector spills in ``objdump -d`` text, and on a kernel it builds (the
stem's default tile on AVX-512 before and after the rule that narrows it)."""

from __future__ import annotations

import shutil
from types import ModuleType
from typing import Callable

import pytest

from vdla.compiler.autotune.measure import build_job
from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for

# objdump -d --no-show-raw-insn lines: a spill store, a reload folded into an FMA, a plain reload, an indexed
# read of a padded row on the stack (not a spill), a scalar stack access and a vector load from the heap.
_LINES = """\
    1292:\tvmovups %zmm0,0x40(%rsp)
    15c5:\tvfmadd231ps 0x340(%rsp),%zmm3,%zmm7
    1600:\tvmovups -0x80(%rbp),%ymm2
    1610:\tvbroadcastss 0x4(%rsp,%rax,4),%zmm5
    1620:\tmov    %rax,0x8(%rsp)
    1630:\tvmovups (%rdi),%zmm1
"""


@pytest.fixture(scope="module")
def cs(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("conv_spills")


def test_spills_are_vector_accesses_at_fixed_stack_offsets(cs: ModuleType) -> None:
    assert cs.count_spills(_LINES) == (2, 1)
    assert cs.count_spills("") == (0, 0)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_the_stem_tile_the_rule_replaced_spills_and_the_default_does_not(cs: ModuleType) -> None:
    wl = {"n": 1, "ic_outer": 3, "h": 224, "w": 224, "ic_block": 1, "oc_outer": 2, "kh": 3, "kw": 3,
          "oc_block": 16, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}
    task = make_task("conv2d_nchwc", wl, "llvm -mcpu=skylake-avx512")
    default = template_for(task).default().to_dict()
    assert default["ow_block"] == 8
    narrow = cs.spills_of(build_job(task.to_json(), None, default))
    wide = cs.spills_of(build_job(task.to_json(), None, dict(default, ow_block=14)))
    # The prologue's one or two stack accesses either way; the 2 x 14 tile reloads many more.
    assert narrow[0] <= 2 and wide[0] >= narrow[0] + 8, (narrow, wide)
