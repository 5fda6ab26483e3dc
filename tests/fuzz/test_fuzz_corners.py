"""The fuzzer reaches every functional-coverage bin, and runs at scale as jobs on the device pool."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vdla.fuzz.campaign import Settings, run_campaign
from vdla.fuzz.generator import draw_plan
from vdla.fuzz.plan import PlanError, check_plan, max_threads
from vdla.fuzz.pool_campaign import main as pool_campaign_main
from vdla.fuzz.pool_campaign import run_pool_campaign, split_count
from vdla.runtime.pool.kinds import parse_device
from vdla.runtime.pool.node import local_cluster
from vdla_hw.config import load_config

CORNER_PROGRAMS = 240
"""Programs of the tiny campaign that must reach every bin (seeds 0..239; the last new bin, queue-full:compute,
came at seed 176 when measured)."""


@pytest.fixture(scope="module")
def tiny():
    return load_config("tiny")


def test_campaign_on_tiny_reaches_every_bin(tiny) -> None:
    # The bins are measured on the instructions and on the cycle model's statistics (queue-full,
    # token-wait), so fsim and the cycle model suffice; fsim's DRAM is still compared with the cycle model's.
    result = run_campaign(Settings("tiny", count=CORNER_PROGRAMS, backends=("fsim", "cycle"), jobs=2), quiet=True)
    assert not result.failures, [(r.seed, r.failure) for r in result.failures[:3]]
    assert result.coverage.unreached == [], result.coverage.format()
    assert len(result.coverage.bins) == 148  # 128 + the overwrite GEMM and bias STORE bins + 3 gather bins (issue 24)


DEEP_CORNER_SEEDS = ((0, 64), (139, 1))
"""(first seed, count) runs that reach all 147 bins on ``default`` and ``wide`` (512-deep queues): the last
ordinary bin came at seed 63 when measured, queue-full:compute and :store at the load-bound deep plan of
seed 23, queue-full:load at the compute-bound deep plan of seed 139 (seeds 0..139 all pass)."""


@pytest.mark.parametrize("preset", ["default", pytest.param("wide", marks=pytest.mark.slow)])
def test_campaign_on_deep_queues_reaches_every_bin(preset: str) -> None:
    coverage = None
    for seed, count in DEEP_CORNER_SEEDS:
        result = run_campaign(Settings(preset, seed=seed, count=count, backends=("fsim", "cycle"), jobs=2), quiet=True)
        assert not result.failures, [(r.seed, r.failure) for r in result.failures[:3]]
        if coverage is None:
            coverage = result.coverage
        else:
            coverage.add(set(result.coverage.reached))
    assert coverage is not None and coverage.unreached == [], coverage.format()
    assert len(coverage.bins) == 147


def test_deep_plans_fill_512_deep_queues_with_one_consumer_instruction_per_round() -> None:
    cfg = load_config("default")
    for seed, compute_bound in ((139, True), (23, False)):
        plan = draw_plan(cfg, seed)
        check_plan(cfg, plan)
        assert plan.threads == cfg.dep_queue_depth + 2 and len(plan.rounds) == 2 * plan.threads
        # the slow module's consumer has one instruction a round, so its command queue holds a whole
        # token queue's worth of rounds (round 0 also loads every thread's micro-op)
        assert all(len(r.computes) == 1 and len(r.stores) == 1 for r in plan.rounds[1:])
        assert all(len(r.loads) == (1 if compute_bound else 3) for r in plan.rounds)


def test_more_threads_than_a_token_queue_holds_is_legal_only_when_fetch_keeps_up(tiny) -> None:
    plan = next(p for p in (draw_plan(tiny, s) for s in range(200)) if p.threads > tiny.dep_queue_depth)
    check_plan(tiny, plan)
    with pytest.raises(PlanError, match=r"threads=33 must be in \[1, 32\]"):
        check_plan(tiny, replace(plan, threads=max_threads(tiny) + 1))
    # Rounds whose compute instructions overflow the command queue: fetch, compute and load would wait
    # on each other once a token queue is full.
    long_round = replace(plan.rounds[0], computes=plan.rounds[0].computes * (tiny.cmd_queue_depth + 1))
    with pytest.raises(PlanError, match="more than cmd_queue_depth=32"):
        check_plan(tiny, replace(plan, rounds=(long_round, *plan.rounds[1:])))


def test_split_count_shares_the_programs() -> None:
    assert split_count(10_000, ["tiny", "default", "wide"]) == {"tiny": 3334, "default": 3333, "wide": 3333}


def test_pool_campaign_runs_chunks_on_a_loopback_pool() -> None:
    with local_cluster(1, [parse_device("vdla-cycle", 1)], port=0) as cluster:
        rep = run_pool_campaign(cluster.scheduler_address, ["tiny", "default"], 12, backends=("fsim", "cycle"),
                                chunk=3, quiet=True)
    assert rep["programs"] == 12 and rep["lost_jobs"] == [] and rep["mismatches_or_crashes"] == 0
    assert {c: p["programs"] for c, p in rep["presets"].items()} == {"tiny": 6, "default": 6}
    # The same seeds in-process reach the same coverage (the pool changes where, not what, runs).
    local = run_campaign(Settings("tiny", count=6, backends=("fsim", "cycle")), quiet=True)
    assert rep["presets"]["tiny"]["coverage"] == f"{len(local.coverage.reached)}/{len(local.coverage.bins)}"


def test_pool_campaign_journal_resumes_a_stopped_run(tmp_path) -> None:
    """Each finished chunk is journalled at once; a re-run counts those and runs only the rest."""
    import json

    journal = tmp_path / "campaign.jsonl"
    with local_cluster(1, [parse_device("vdla-cycle", 1)], port=0) as cluster:
        full = run_pool_campaign(cluster.scheduler_address, ["tiny"], 8, backends=("fsim", "cycle"), chunk=2,
                                 quiet=True, journal=journal)
        lines = journal.read_text().splitlines()
        assert len(lines) == 4 and sorted(json.loads(ln)["seeds"][0] for ln in lines) == [0, 2, 4, 6]
        # A run killed after two chunks, in the middle of writing the third line.
        journal.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
        resumed = run_pool_campaign(cluster.scheduler_address, ["tiny"], 8, backends=("fsim", "cycle"), chunk=2,
                                    quiet=True, journal=journal)
    assert resumed["resumed_programs"] == 4 and resumed["programs"] == 8 and resumed["lost_jobs"] == []
    assert resumed["presets"] == full["presets"]  # same verdicts, instructions and coverage as the full run
    from vdla.fuzz.pool_campaign import read_journal, report_from_journal
    assert sorted(read_journal(journal)) == [("tiny", 0), ("tiny", 2), ("tiny", 4), ("tiny", 6)]
    # --report-only: the same report from the journal alone
    assert report_from_journal(journal, ["tiny"], 8, backends=("fsim", "cycle"))["presets"] == full["presets"]


@pytest.mark.slow
def test_ten_thousand_programs_over_the_presets_on_the_pool(tmp_path) -> None:
    code = pool_campaign_main(["--configs", "tiny,default,wide", "--count", "10000", "--workers", "2",
                               "--out", str(tmp_path / "pool.json"), "--journal", str(tmp_path / "pool.jsonl")])
    assert code == 0
