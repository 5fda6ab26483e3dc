"""vdla_lut_mul equals the signed product for every pair of operands (exhaustive)."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import Timer

from cocotb_utils import env_int


def _signed(values: np.ndarray, width: int) -> np.ndarray:
    return np.where(values >= 1 << (width - 1), values - (1 << width), values)


@cocotb.test()
async def every_pair_matches_the_signed_product(dut):
    xw, yw = env_int("XW", 8), env_int("YW", 8)
    pw = xw + yw
    ys = _signed(np.arange(1 << yw, dtype=np.int64), yw)
    mask = (1 << pw) - 1
    for xu in range(1 << xw):
        dut.x.value = xu
        await Timer(1, unit="ns")
        bits = dut.p_all.value.to_unsigned()
        got = np.array([(bits >> (k * pw)) & mask for k in range(1 << yw)], dtype=np.int64)
        want = (_signed(np.int64(xu), xw) * ys) & mask
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (f"x = {_signed(np.int64(xu), xw)}, y = {ys[bad[0]]}: got {got[bad[0]]:#x}, "
                               f"want {want[bad[0]]:#x} ({bad.size} of {1 << yw} wrong for this x)")
