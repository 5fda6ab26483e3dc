"""The tuner times the fused node (issue 28 part 3): a conv task carries the epilogue its nodes run (bias,
residual add, ReLU/clip), its template builds and checks the kernel with that epilogue, and logs written
before tasks had epilogues still resume and apply."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.autotune.database import ApplyBest, Database, Record, read_log
from vdla.compiler.autotune.dispatch import dispatching
from vdla.compiler.autotune.epilogue import parse_epilogue
from vdla.compiler.autotune.task import Task, extract_tasks, make_task, task_epilogue
from vdla.compiler.autotune.template import template_for
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla_hw.errors import UsageError

DEPTHWISE = {"n": 1, "c_outer": 2, "h": 9, "w": 12, "c_block": 16, "kh": 3, "kw": 3, "stride_h": 1, "stride_w": 1,
             "pad_h": 1, "pad_w": 1}


def _residual_blocks(rng: np.random.Generator):
    """Two 3x3 32 -> 32 convs at 8 x 8 of one workload: ``a`` (bias, ReLU) feeds ``b`` (bias, the block's input
    added, ReLU); a third, ``c``, of the same workload adds its block's input too; then a 1 x 1 conv with bias only
    and a depthwise conv with bias and ReLU6 (clip), and a 1 x 1 conv without bias or epilogue."""
    b = GraphBuilder()
    x = b.input("x", (1, 32, 8, 8), "float32")
    w = lambda *s: b.const((rng.standard_normal(s) * 0.1).astype(np.float32))
    conv = lambda y, name, **kw: b.op("conv2d", [y, w(32, 32, 3, 3), w(32)], name, padding=(1, 1, 1, 1), **kw)
    y = b.op("relu", [b.op("conv2d", [x, w(32, 16 * 2, 1, 1), w(32)], "stem")])
    a = b.op("relu", [conv(y, "a")])
    y = b.op("relu", [b.op("add", [conv(a, "b"), y], "b_add")])
    y = b.op("relu", [b.op("add", [conv(y, "c"), y], "c_add")])
    y = b.op("conv2d", [y, w(16, 32, 1, 1), w(16)], "project")
    y = b.op("clip", [b.op("conv2d", [y, w(16, 1, 3, 3), w(16)], "dw", groups=16, padding=(1, 1, 1, 1))],
             a_min=0.0, a_max=6.0)
    # The graph's output leaves the blocked layout: its node's chain does not fuse (a bare "head" conv takes it).
    return b.build([b.op("conv2d", [y, w(16, 16, 1, 1)], "head")])


def test_extracted_conv_tasks_carry_the_epilogue_most_of_their_nodes_run() -> None:
    tasks = {t.name: t for t in extract_tasks(_residual_blocks(np.random.default_rng(0)))}
    # a, b and c are one task (x3): two of its nodes add a residual, so the task times bias+add+relu.
    assert tasks["conv_32x8x8_32_k3s1"].weight == 3 and tasks["conv_32x8x8_32_k3s1"].epilogue == "bias+add+relu"
    assert tasks["conv_32x8x8_16_k1s1"].epilogue == "bias"
    dw = [t for t in tasks.values() if t.kind == "depthwise_conv2d_nchwc"]
    assert [t.epilogue for t in dw] == ["bias+clip"]
    assert tasks["conv_16x8x8_16_k1s1"].epilogue == ""
    # Kinds whose lowering runs the chain as a separate pass keep the bare kernel.
    assert all(t.epilogue == "" for t in tasks.values() if t.kind not in ("conv2d_nchwc", "depthwise_conv2d_nchwc"))


def test_a_task_epilogue_is_the_majority_and_on_a_tie_the_heavier() -> None:
    assert task_epilogue(["bias+relu", "bias+add+relu", "bias+add+relu", "bias"]) == "bias+add+relu"
    assert task_epilogue(["bias+relu", "bias+relu", "bias+add+relu"]) == "bias+relu"
    assert task_epilogue(["bias+relu", "bias+add+relu"]) == "bias+add+relu"
    assert task_epilogue([]) == ""


def test_the_epilogue_round_trips_and_stays_out_of_the_key(small_conv: dict) -> None:
    fused = make_task("conv2d_nchwc", small_conv, epilogue="bias+add+relu")
    bare = make_task("conv2d_nchwc", small_conv)
    assert fused == bare and fused.key == bare.key  # one task: the log matches it whatever it holds
    again = Task.from_json(fused.to_json())
    assert again.epilogue == "bias+add+relu" and again.with_weight(3).epilogue == "bias+add+relu"
    assert "epilogue" not in bare.to_json()  # a bare task's records are written as before


@pytest.mark.parametrize("epilogue, kind, why", [
    ("bias+gelu", "conv2d_nchwc", "unknown operation"),
    ("add+add", "conv2d_nchwc", "at most one"),
    ("relu", "dense_pack", "bare kernel"),
])
def test_a_bad_epilogue_is_refused_with_the_cause(epilogue: str, kind: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_epilogue(epilogue, kind)


def _run_once(template, config, inputs: list[np.ndarray]) -> np.ndarray:
    """Build ``config`` and call the artifact once on ``inputs`` (in its parameter order)."""
    from vdla.runtime.cpu_module import aligned_copy, aligned_zeros, load_module

    with tempfile.TemporaryDirectory() as tmp:
        module = load_module(template.build(config, Path(tmp)))
        module.set_num_threads(1)
        fn = module[module.entry_name]
        _, out_t = template.tensors()
        out = aligned_zeros(tuple(int(s.value) for s in out_t.shape), np.float32)
        fn(*[aligned_copy(a) for a in inputs], out)
        return out


@pytest.mark.parametrize("algorithm", ["direct", "winograd_2"])
def test_the_measured_conv_computes_the_fused_result(algorithm: str, small_conv: dict) -> None:
    template = template_for(make_task("conv2d_nchwc", small_conv, epilogue="bias+add+relu"))
    config = next(c for c in template.space if c["algorithm"] == algorithm and template.space.why_illegal(c) is None)
    data, residual, kernel, bias = template.inputs()
    ins = [data, residual, kernel, bias]
    if algorithm != "direct":
        from vdla.compiler import topi

        ins[2] = topi.transform_weights(template.oihw(kernel), 2, data.shape[-1], kernel.shape[-1])
    got = _run_once(template, config, ins)
    # NumPy: the bare conv (float64), then + bias per output channel, + residual, ReLU.
    conv = template.reference([data, kernel])
    want = np.maximum(conv + bias.reshape(conv.shape[1], conv.shape[4])[None, :, None, None, :] + residual, 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    assert (got == 0).mean() > 0.2 and np.abs(got - np.maximum(conv, 0)).max() > 0.1  # the epilogue is there
    # The template's run checks the fused result and times it: it says correct.
    with tempfile.TemporaryDirectory() as tmp:
        outcome = template.run(template.build(config, Path(tmp)), True, 1, 1, 1 << 16)
    assert outcome.correct, outcome.detail


def test_the_first_run_check_covers_the_epilogue(small_conv: dict) -> None:
    """An artifact of the bare kernel checked as the task with a ReLU (same parameters) is a wrong result."""
    bare = template_for(make_task("conv2d_nchwc", small_conv))
    relu = template_for(make_task("conv2d_nchwc", small_conv, epilogue="relu"))
    config = bare.default()
    with tempfile.TemporaryDirectory() as tmp:
        artifact = bare.build(config, Path(tmp))
        assert bare.run(artifact, True, 1, 1, 1 << 16).correct
        outcome = relu.run(artifact, True, 1, 1, 1 << 16)
    assert not outcome.correct and "relative error" in outcome.detail


def test_the_measured_depthwise_conv_computes_the_fused_result() -> None:
    template = template_for(make_task("depthwise_conv2d_nchwc", DEPTHWISE, epilogue="bias+clip"))
    data, kernel, bias = template.inputs()
    got = _run_once(template, template.default(), [data, kernel, bias])
    conv = template.reference([data, kernel])
    want = np.clip(conv + bias.reshape(conv.shape[1], conv.shape[4])[None, :, None, None, :], 0.0, 6.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert template.produced_inputs == 1  # no residual: only the data is rewritten before a timed call


def test_a_residual_is_rewritten_before_each_timed_call_like_the_input(small_conv: dict) -> None:
    template = template_for(make_task("conv2d_nchwc", small_conv, epilogue="bias+add+relu"))
    assert template.activation_inputs == 1 and template.produced_inputs == 2
    params, _ = template.with_epilogue(*template.tensors())
    assert [p.name for p in params] == ["data", "residual", "kernel", "bias"]


def test_an_old_log_without_epilogues_resumes_and_applies(tmp_path: Path) -> None:
    """A record written before tasks had epilogues (its task JSON has none) is the fused task's record: the
    database finds it for the extracted task, and ApplyBest gives its config to the model's lowering."""
    graph = _residual_blocks(np.random.default_rng(1))
    task = next(t for t in extract_tasks(graph) if t.name == "conv_32x8x8_32_k3s1")
    assert task.epilogue == "bias+add+relu"
    template = template_for(task)
    config = next(c for c in template.space if c.key != template.default().key and template.space.why_illegal(c) is None)
    old = Record.make(task, config, "ok", [1e-5], "s", tuner="xgb").to_json()
    old["task"].pop("epilogue")  # as written before issue 28 part 3
    assert "epilogue" not in old["task"] and old["task_key"] == task.key
    log = tmp_path / "old.jsonl"
    log.write_text(json.dumps(old) + "\n")
    db = Database(log)
    assert [r.config_key for r in db.of_task(task)] == [config.key]  # resume: the config counts as measured
    assert read_log(log)[0].task.epilogue == ""
    apply = ApplyBest(read_log(log))
    with dispatching(apply):
        build_model(graph, target="llvm")
    assert apply.applied == {task.name: config.key}
