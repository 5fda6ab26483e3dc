"""The VDLA conv2d space: column tiles are a real schedule choice, exact in the capacity model."""

from __future__ import annotations

import pytest

from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.target import SCOPE_INP, SCOPE_UOP
from vdla.compiler.vdla.topi import (
    Conv2dKnobs,
    Conv2dWorkload,
    Requantize,
    check_conv2d,
    compile_conv2d,
    fits,
    footprint,
    requant_shift,
)

# (workload, knobs with column tiles): both loop orders, both thread axes, a hoisted copy, a stride.
COLUMN_TILED = [
    (Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1), Conv2dKnobs(1, 2, 2, 2, "oh", "oh_oc", ow_tile=2)),
    (Conv2dWorkload(1, 32, 8, 8, 32, 3, 3, 1, 1), Conv2dKnobs(1, 4, 2, 2, "oc", "oc_oh", ow_tile=4)),
    (Conv2dWorkload(1, 32, 9, 10, 32, 3, 3, 2, 1), Conv2dKnobs(1, 1, 1, 1, "oc", "oh_oc", ow_tile=1)),
    (Conv2dWorkload(1, 32, 8, 8, 64, 1, 1, 2, 0), Conv2dKnobs(2, 1, 2, 4, "oh", "oc_oh", ow_tile=2)),
]


@pytest.mark.parametrize("wl,knobs", COLUMN_TILED)
def test_column_tiles_run_bit_exact_with_the_modelled_footprint(wl: Conv2dWorkload, knobs: Conv2dKnobs) -> None:
    target = VdlaTarget.from_config("default")
    assert fits(target, wl, knobs) is None
    compiled = compile_conv2d(wl, target, knobs=knobs, epilogue=Requantize(shift=requant_shift(wl)))
    assert check_conv2d(compiled)[0]
    loaded = compiled.module.program.buffers["uops"].nbytes // 4
    assert footprint(wl, knobs, target.config)[SCOPE_UOP] == loaded
    whole = Conv2dKnobs(knobs.oc_tile, knobs.oh_tile, knobs.ic_tile, knobs.virtual_threads, knobs.vt_axis,
                        knobs.loop_order)
    assert footprint(wl, knobs, target.config)[SCOPE_INP] < footprint(wl, whole, target.config)[SCOPE_INP]
