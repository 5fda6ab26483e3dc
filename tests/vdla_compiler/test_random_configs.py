"""Every config that validates works (issue 14 part 2): seeded random configs over every field --
data widths, GEMM shape, buffer depths, bus width, queue depths, clock, LUT multipliers and all of
the timing -- are either refused by validation naming the rule they break, or compile a small conv
that runs bit-exact against NumPy on fsim and on the cycle model (and, in the slow suite, on the
Verilator-built RTL of that config)."""

from __future__ import annotations

import re

import pytest
from random_configs import legal_configs

from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi import (
    Conv2dWorkload,
    Requantize,
    check_conv2d,
    compile_conv2d,
    requant_shift,
)
from vdla_hw.config import CONFIG_RULES, RANGES, TIMING_RANGES, HwConfig

SEED = 14
COUNT = 10
CONFIGS, REFUSED = legal_configs(SEED, COUNT)


def _small_conv(cfg: HwConfig, index: int) -> Conv2dWorkload:
    """Two input and two output blocks over a 5x6 image; 3x3 kernels, stride 1 or 2 by turns."""
    return Conv2dWorkload(cfg.batch, 2 * cfg.block_in, 5, 6, 2 * cfg.block_out, 3, 3, 1 + index % 2, 1)


def _compile(index: int):  # type: ignore[no-untyped-def]
    cfg = CONFIGS[index]
    wl = _small_conv(cfg, index)
    bias = index % 4 != 3
    return compile_conv2d(wl, VdlaTarget(cfg), epilogue=Requantize(shift=requant_shift(wl), relu=bias, bias=bias))


def _id(index: int) -> str:
    return f"{CONFIGS[index].name}-{CONFIGS[index].digest}"


def test_the_draws_cover_the_fields() -> None:
    """The seed exercises what the test claims: both data widths, several GEMM shapes, narrow and
    shallow queues, every ALU timing the rules allow, and refusals of several rules."""
    seen = lambda f: {f(c) for c in CONFIGS}
    assert len(seen(lambda c: (c.block_in, c.block_out))) >= 4
    assert len(seen(lambda c: c.bus_width)) >= 2 and len(seen(lambda c: c.timing.alu_ii)) >= 2
    assert len(seen(lambda c: (c.inp_width, c.wgt_width, c.out_width))) >= 2
    assert min(c.dep_queue_depth for c in CONFIGS) <= 2 and min(c.cmd_queue_depth for c in CONFIGS) <= 2
    assert len({str(e).split(" = ")[0].split(".", 1)[1] for _, e in REFUSED}) >= 4


def test_every_refused_draw_names_its_field_value_and_rule() -> None:
    """A refusal starts with ``<name>.<field> = <drawn value>``, and the field has a range or a
    rule in CONFIG_RULES (what the ISA doc prints)."""
    fields = set(RANGES) | set(TIMING_RANGES)
    for data, exc in REFUSED:
        m = re.match(rf"{data['name']}\.(timing\.)?(\w+) = (-?\d+)", str(exc))
        assert m, f"refusal does not name its field: {exc}"
        timing, field, value = m.groups()
        drawn = data["timing"][field] if timing else data[field]
        assert int(value) == drawn, f"{exc} (drawn {field} = {drawn})"
        assert field in fields or any(f"`{field}`" in rule or f"timing.{field}`" in rule for rule in CONFIG_RULES), exc


@pytest.mark.parametrize("index", range(COUNT), ids=_id)
def test_random_legal_config_runs_a_conv_bit_exact_on_fsim_and_cycle(index: int) -> None:
    compiled = _compile(index)
    for backend in ("fsim", "cycle"):
        equal, result, _, _ = check_conv2d(compiled, seed=index, backend=backend)
        assert equal, f"{backend} differs from NumPy on {CONFIGS[index].to_json()}"
    assert result.cycles > 0


@pytest.mark.slow
@pytest.mark.parametrize("index", range(COUNT), ids=_id)
def test_random_legal_config_runs_a_conv_bit_exact_on_rtl(index: int) -> None:
    """Verilator builds each config's RTL (cached per config digest) and runs the same program."""
    equal, _, _, _ = check_conv2d(_compile(index), seed=index, backend="rtl")
    assert equal, f"rtl differs from NumPy on {CONFIGS[index].to_json()}"
