"""The cycle model stays calibrated against the RTL: on ``tiny``, every system-test program's
cycle-model count, and a tiled GEMM's with two virtual threads (latency hiding), is within
5% of the Verilated design's (vdla.runtime.calibration; the full table over every preset is
bench/rtl_vs_cycle.py)."""

from __future__ import annotations

import pytest
from rtl_configs import configs_under_test

from vdla.runtime.calibration import TARGET, calibrate
from vdla.runtime.program import Program
from vdla.runtime.system_programs import build_case, case_names
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw.config import load_config

RANDOMS = 4
TILED = "tiled_gemm_8x64x48_vt2"


def _program(cfg, case: str) -> Program:
    if case == TILED:
        return tiled_gemm_program(cfg, 8, 64, 48, virtual_threads=2, seed=1)[0]
    return build_case(cfg, case)


@pytest.fixture(scope="module", params=configs_under_test(["tiny"]))
def tiny(request):
    return load_config(request.param)


@pytest.mark.parametrize("case", case_names(RANDOMS) + [TILED])
def test_cycle_model_within_target_of_rtl(tiny, case: str) -> None:
    row = calibrate(case, _program(tiny, case))
    assert row.within_target, (
        f"{tiny.name}/{case}: cycle model {row.cycle_model_cycles:,} vs RTL {row.rtl_cycles:,} cycles, "
        f"error {row.error:+.1%} exceeds {TARGET:.0%}; recalibrate the cycle model's timing (docs/rtl.md, "
        f"\"Instruction timing\") or fix the RTL, then check bench/rtl_vs_cycle.py")


# Fuzz programs whose padded loads of elements at least as wide as the bus made the model 7-8%
# fast: the engine holds an element's last beat until the tile writer takes it (see
# simulator/cycle/load.py). Their error now, on tiny: seed 226 -2.5% (was -7.8%).
FUZZ_SEEDS = (226,)
FUZZ_LIMIT = 0.04


# Fuzz programs (tiny) whose padded loads of elements NARROWER than the bus (4-byte input tiles on
# the 8-byte bus) held the read channel in the RTL but not in the model: the engine's beat register
# stays full until the tile writer, busy with padding, takes its elements, so the row's next beat --
# and every other engine's data queued behind it -- waits (simulator/cycle/dma.py, ``Writer``).
# Errors before -> after that fix: seed 997 +4.8% -> +1.1%, seed 975 -4.8% -> -1.5%, seed 632
# +5.1% -> +2.2% (the stall also shrinks when another engine's burst pushes the row later).
NARROW_SEEDS = (997, 975, 632)


# Fuzz programs whose error came from the shared read channel's arbitration (simulator/cycle/dram.py):
# two engines requesting in the same cycle are served in vdla_axi_rd_arb's round-robin order, one
# grant a cycle, and its route FIFO bounds the bursts in flight over every engine together.
# Errors before -> after, on tiny: seed 77 +7.0% -> 0.0% (199 cycles), seed 484 +6.4% -> +0.7%,
# seed 231 -4.6% -> +0.8%, seed 110 (the route FIFO's waiting requests in round-robin) +0.2%.
ARBITER_SEEDS = (77, 484, 231, 110)


@pytest.mark.parametrize("seed", FUZZ_SEEDS + NARROW_SEEDS + ARBITER_SEEDS)
def test_cycle_model_holds_on_the_fuzz_programs_it_once_missed(tiny, seed: int) -> None:
    """Each seed above, one family of RTL behaviour the model once missed, stays within FUZZ_LIMIT."""
    from vdla.fuzz.generator import build_program, draw_plan

    program, _ = build_program(tiny, draw_plan(tiny, seed, max_rounds=6))
    row = calibrate(f"fuzz seed {seed}", program)
    assert abs(row.error) <= FUZZ_LIMIT, (
        f"{tiny.name}/fuzz seed {seed}: cycle model {row.cycle_model_cycles:,} vs RTL {row.rtl_cycles:,} cycles, "
        f"error {row.error:+.1%} exceeds {FUZZ_LIMIT:.0%}")


@pytest.mark.slow
def test_cycle_model_holds_on_a_deep_load_bound_plan() -> None:
    """default's deep seed 23 (5,141 instructions, three input loads back to back per round): the
    route FIFO, not each engine, bounds the bursts in flight. Was -8.9% (138,137 vs 151,671 cycles)."""
    from vdla.fuzz.generator import build_program, draw_plan

    cfg = load_config("default")
    program, _ = build_program(cfg, draw_plan(cfg, 23, max_rounds=6))
    row = calibrate("fuzz seed 23 (deep)", program)
    assert abs(row.error) <= FUZZ_LIMIT, (
        f"default/fuzz seed 23: cycle model {row.cycle_model_cycles:,} vs RTL {row.rtl_cycles:,} cycles, "
        f"error {row.error:+.1%} exceeds {FUZZ_LIMIT:.0%}")


# Programs the read channel's finer points decide (simulator/cycle/dram.py): a narrow burst's last
# beat leaves the channel (and frees its route-FIFO slot) before its last elements are out of the
# engine; a burst re-placed behind another engine's earlier request keeps only its engine's own
# pacing, and never overtakes its engine's previous burst. Before -> after, on tiny: tokens_full
# +0.84% -> 0.0% (476 cycles), the compiled 1x1 conv +0.34% -> 0.0% (4,440 cycles); on default,
# tokens_full -1.40% -> 0.0% (25,330). Held to the compiled layers' 0.3%.
READ_CHANNEL_LIMIT = 0.003


@pytest.mark.parametrize("case", ["tokens_full", "compiled conv 1x1"])
def test_cycle_model_holds_on_narrow_bursts_and_replaced_requests(tiny, case: str) -> None:
    if case == "tokens_full":
        program = build_case(tiny, case)
    else:
        from vdla.compiler.vdla.target import VdlaTarget
        from vdla.compiler.vdla.topi import Conv2dWorkload, Requantize, compile_conv2d, random_conv_data, requant_shift

        wl = Conv2dWorkload(tiny.batch, 4 * tiny.block_in, 14, 14, 4 * tiny.block_out, 1, 1, 1, 0)
        compiled = compile_conv2d(wl, VdlaTarget.from_config(tiny.name), epilogue=Requantize(shift=requant_shift(wl)))
        program = compiled.module.bind(*compiled.pack_inputs(*random_conv_data(wl)))
    row = calibrate(case, program)
    assert abs(row.error) <= READ_CHANNEL_LIMIT, (
        f"{tiny.name}/{case}: cycle model {row.cycle_model_cycles:,} vs RTL {row.rtl_cycles:,} cycles, "
        f"error {row.error:+.2%} exceeds {READ_CHANNEL_LIMIT:.1%}")
