"""Pooling, fused element-wise and batched-matmul tasks: extracted from a torch-exported model, measured,
and applied from a log by the lowerings (or left at the default, saying so)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from vdla.compiler.autotune.database import ApplyBest, Database, Record, read_log
from vdla.compiler.autotune.dispatch import dispatching
from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import Measurer, Status
from vdla.compiler.autotune.space import Config
from vdla.compiler.autotune.task import Task, extract_tasks
from vdla.compiler.autotune.template import template_for
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.lower_llvm import build_kernel
from vdla.compiler.graph.passes import optimize_for_cpu
from vdla.compiler.tir.printer import to_text

NEW_KINDS = ("pool2d", "elementwise", "batch_matmul")


class _Net(torch.nn.Module):
    """Convs with max and average pooling, a token transpose (a pure element-wise kernel) and an
    attention score ``q @ k^T`` (a batched matmul of two activations)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.q = torch.nn.Linear(16, 16)
        self.k = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.c1(x)), 3, 2, 1)
        x = torch.nn.functional.avg_pool2d(torch.relu(self.c2(x)) + x, 2)
        t = x.flatten(2).transpose(1, 2)
        return torch.softmax(self.q(t) @ self.k(t).transpose(1, 2), -1)


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, np.ndarray, np.ndarray]:
    path = tmp_path_factory.mktemp("op_tasks") / "net.onnx"
    torch.manual_seed(0)
    model = _Net().eval()
    x = torch.randn(1, 3, 16, 16)
    torch.onnx.export(model, x, str(path), input_names=["x"], output_names=["y"], opset_version=18, dynamo=False)
    with torch.no_grad():
        want = model(x).numpy()
    return from_onnx(path), x.numpy(), want


@pytest.fixture(scope="module")
def tasks(net: tuple) -> list[Task]:
    return extract_tasks(net[0])


def _other_config(task: Task) -> Config:
    """The first legal config whose scheduled program differs from the default's."""
    template = template_for(task)
    default = to_text(template.program(template.default()))
    space = template.space
    return next(space.get(i) for i in space.legal_indices() if to_text(template.program(space.get(i))) != default)


def test_extraction_lists_pool_elementwise_and_batch_matmul_tasks(tasks: list[Task]) -> None:
    by_kind = {t.kind: t for t in tasks}
    assert set(NEW_KINDS) <= set(by_kind)
    pools = sorted((t.wl["avg"], t.wl["kh"]) for t in tasks if t.kind == "pool2d")
    assert pools == [(0, 3), (1, 2)]  # the 3x3 max pool and the 2x2 average pool
    bmm = by_kind["batch_matmul"]
    assert (bmm.wl["k"], bmm.wl["n"]) == (16, 16) and bmm.wl["m"] >= 16  # 16 tokens, rows padded to the tile
    eltwise = by_kind["elementwise"]
    assert eltwise.wl["outer"] * eltwise.wl["inner"] == 16 * 16 and eltwise.wl["streams"] >= 1
    for t in tasks:
        if t.kind in NEW_KINDS:
            template = template_for(t)
            space = template.space
            assert space.size > 1 and space.why_illegal(template.default()) is None
            other = _other_config(t)
            # A config read back from its JSON form replays the same program.
            assert to_text(template.program(space.from_dict(other.to_dict()))) == to_text(template.program(other))


@pytest.fixture(scope="module")
def log(tasks: list[Task], executor: LocalExecutor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log holding, per new task, one measured non-default config (its best, then)."""
    path = tmp_path_factory.mktemp("op_log") / "tune.jsonl"
    db = Database(path)
    for task in tasks:
        if task.kind not in NEW_KINDS:
            continue
        measurer = Measurer(task, executor)
        template = measurer.template
        other = _other_config(task)
        default, tuned = measurer.measure([template.default(), other])
        assert default.status == tuned.status == Status.OK, (default.detail, tuned.detail)
        db.append(Record.make(task, other, tuned.status.value, tuned.costs, template.unit, tuned.detail, "test"))
    return path


def test_a_logged_config_changes_the_compiled_kernel_and_keeps_the_result(net: tuple, tasks: list[Task],
                                                                         log: Path) -> None:
    graph, x, want = net
    apply = ApplyBest(read_log(log))

    class Asked:
        def __init__(self) -> None:
            self.kinds: set[str] = set()

        def query(self, kind: str, workload: dict) -> object:
            self.kinds.add(kind)
            return apply.query(kind, workload)

    g = optimize_for_cpu(graph)
    changed = set()
    for n in g.nodes:
        if n.op != "fused":
            continue
        asked = Asked()
        with dispatching(asked):
            tuned = to_text(build_kernel(n, g, n.name).func)
        default = to_text(build_kernel(n, g, n.name).func)
        if asked.kinds & set(NEW_KINDS):
            assert tuned != default, f"kernel {n.name} ({asked.kinds}) ignored its logged config"
            changed |= asked.kinds & set(NEW_KINDS)
    assert changed == set(NEW_KINDS)
    assert {name.split("_")[0] for name in apply.applied} >= {"bmm", "eltwise", "maxpool", "avgpool"}
    with dispatching(ApplyBest(read_log(log))):
        got = build_model(graph).run({"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_task_missing_from_the_log_falls_back_to_the_default(net: tuple, log: Path) -> None:
    graph, x, want = net
    kept = [r for r in read_log(log) if r.task.kind != "pool2d"]
    apply = ApplyBest(kept)
    with dispatching(apply):
        got = build_model(graph).run({"x": x})[0]
    pools = {name: why for name, why in apply.fallbacks.items() if "pool" in name}
    assert len(pools) == 2 and all("not in the log" in why for why in pools.values())
    assert any(name.startswith("bmm") for name in apply.applied)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("workload", [
    {"n": 1, "c": 1, "c_block": 16, "h": 9, "w": 9, "kh": 3, "kw": 3, "stride_h": 2, "stride_w": 2, "pad_h": 1,
     "pad_w": 1, "avg": 0, "count_include_pad": 0},
    {"n": 1, "c": 3, "c_block": 0, "h": 7, "w": 20, "kh": 3, "kw": 3, "stride_h": 1, "stride_w": 1, "pad_h": 1,
     "pad_w": 1, "avg": 1, "count_include_pad": 0},
], ids=["max_nchwc", "avg_nchw"])
def test_every_pool_config_computes_the_pooling(workload: dict, tmp_path: Path) -> None:
    """The pool knobs (column tile, unrolled window columns, vector width) never change the result."""
    from vdla.compiler.autotune.task import make_task

    template = template_for(make_task("pool2d", workload))
    space = template.space
    programs = set()
    for i in space.legal_indices():
        config = space.get(i)
        (tmp_path / str(i)).mkdir()
        outcome = template.run(template.build(config, tmp_path / str(i)), True, 1, 0, 0)
        assert outcome.correct, f"{config.key}: {outcome.detail}"
        programs.add(to_text(template.program(config)))
    assert len(programs) == len(space.legal_indices())  # every knob reaches the schedule
