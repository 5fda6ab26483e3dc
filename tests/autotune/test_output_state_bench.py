"""``bench/output_state.py``: a tuning log's default and best of each asked task, built and timed in the tuner's
cache state, with the output rewritten, and (``--producer``) after a producer kernel wrote the input.

Run here on a tiny real log (two small ``conv2d_nchwc`` tasks, real configs of their spaces, made-up costs), one
round of one call, a small flush: the JSON's structure, the configs it reports (the default and the log's best),
positive finite times, the host record, and the clear errors for bad arguments."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from vdla.compiler.autotune.database import Database, Record
from vdla.compiler.autotune.task import Task, make_task
from vdla.compiler.autotune.template import template_for

#: The consumer (3x3, 16 -> 32 channels on 8x8) and a producer whose output (1x1, 16 -> 16) is its input.
CONSUMER = {"n": 1, "ic_outer": 1, "h": 8, "w": 8, "ic_block": 16, "oc_outer": 2, "kh": 3, "kw": 3, "oc_block": 16,
            "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
PRODUCER = dict(CONSUMER, oc_outer=1, kh=1, kw=1, pad_h=0, pad_w=0)


@pytest.fixture(scope="module")
def os_bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("output_state")


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {"consumer": make_task("conv2d_nchwc", CONSUMER), "producer": make_task("conv2d_nchwc", PRODUCER)}


def others(task: Task, n: int) -> list[Any]:
    """``n`` legal configs of the task's space other than its default."""
    template = template_for(task)
    default = template.default()
    return [c for c in (template.space.get(i) for i in template.space.legal_indices()) if c.key != default.key][:n]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory, tasks: dict[str, Task]) -> tuple[Path, dict[str, dict]]:
    """A log per task: the default, a slower config, the best (fastest successful) and a failed record that
    claims an even lower cost (it must not be the best); returns the path and each task's best config."""
    path = tmp_path_factory.mktemp("output_state") / "log.jsonl"
    db = Database(path)
    best = {}
    for task in tasks.values():
        default = template_for(task).default()
        slow, fast, failed = others(task, 3)
        db.append(Record.make(task, default, "ok", [2e-5], "s", "", "xgb"))
        db.append(Record.make(task, slow, "ok", [3e-5], "s", "", "xgb"))
        db.append(Record.make(task, fast, "ok", [1e-5], "s", "", "xgb"))
        db.append(Record.make(task, failed, "error", [1e-6], "s", "build failed", "xgb"))
        best[task.name] = fast.to_dict()
    return path, best


def run_main(os_bench: ModuleType, monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["output_state.py", *argv])
    os_bench.main()


def test_each_task_is_timed_in_each_state_with_the_default_and_the_logs_best(
        os_bench: ModuleType, tasks: dict[str, Task], log: tuple[Path, dict[str, dict]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path, best = log
    consumer, producer = tasks["consumer"].name, tasks["producer"].name
    out = tmp_path / "out.json"
    run_main(os_bench, monkeypatch, "--tuning-log", str(path), "--tasks", f"{consumer},{producer}",
             "--producer", f"{consumer}={producer}", "--rounds", "1", "--repeats", "1", "--flush-mib", "0.25",
             "--output", str(out))
    got = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert printed.startswith("host: ") and f"wrote {out}" in printed
    assert {"isa", "cpu", "cores", "simd", "vector_bits"} <= set(got["host"]) and got["host"]["cores"] >= 1
    assert len(got["load_average_before"]) == len(got["load_average_after"]) == 3
    assert (got["tuning_log"], got["rounds"], got["repeats"], got["flush_mib"]) == (str(path), 1, 1, 0.25)
    assert [r["task"] for r in got["results"]] == [consumer, producer]
    for r in got["results"]:
        task = tasks["consumer"] if r["task"] == consumer else tasks["producer"]
        assert r["configs"] == {"default": template_for(task).default().to_dict(), "best": best[task.name]}
        want_states = {"tuner", "output rewritten"} | ({"producer"} if r["task"] == consumer else set())
        assert set(r["seconds"]) == set(r["speedup"]) == want_states
        assert r["producer"] == (producer if r["task"] == consumer else None)
        for state, t in r["seconds"].items():
            assert set(t) == {"default", "best"}
            assert all(0 < v < math.inf for v in t.values()), (r["task"], state, t)
            assert r["speedup"][state] == pytest.approx(t["default"] / t["best"])
            # one printed line per task and state, with the JSON's figures
            assert (f"{r['task']:<28} {state:<17} default {t['default'] * 1e3:.4f} ms  best {t['best'] * 1e3:.4f} ms  "
                    f"default/best {r['speedup'][state]:.3f}") in printed


@pytest.mark.parametrize(("args", "message"), [
    (("--tasks", "conv_nope"), "tasks ['conv_nope'] are not in"),
    (("--tasks", ","), "--tasks names no task"),
    (("--tasks", "{c}", "--producer", "{c}"), "expected TASK=PRODUCER"),
    (("--tasks", "{c}", "--producer", "{c}="), "expected TASK=PRODUCER"),
    (("--tasks", "{c}", "--producer", "{p}={c}"), "is not one of --tasks"),
    (("--tasks", "{c}", "--producer", "{c}=conv_nope"), "tasks ['conv_nope'] are not in"),
    (("--tasks", "{c}", "--rounds", "0"), "--rounds and --repeats must be at least 1"),
])
def test_a_bad_argument_is_named(os_bench: ModuleType, tasks: dict[str, Task], log: tuple[Path, dict[str, dict]],
                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                 args: tuple[str, ...], message: str) -> None:
    names = {"c": tasks["consumer"].name, "p": tasks["producer"].name}
    with pytest.raises(SystemExit) as exc:
        run_main(os_bench, monkeypatch, "--tuning-log", str(log[0]), "--output", str(tmp_path / "o.json"),
                 *(a.format(**names) for a in args))
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_a_task_without_a_successful_measurement_is_named(
        os_bench: ModuleType, tasks: dict[str, Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    task = tasks["consumer"]
    Database(tmp_path / "log.jsonl").append(
        Record.make(task, template_for(task).default(), "error", [], "s", "build failed", "xgb"))
    with pytest.raises(SystemExit):
        run_main(os_bench, monkeypatch, "--tuning-log", str(tmp_path / "log.jsonl"), "--tasks", task.name,
                 "--output", str(tmp_path / "o.json"))
    assert "no successful measurement" in capsys.readouterr().err


def test_a_producer_whose_output_is_not_the_input_is_named(
        os_bench: ModuleType, tasks: dict[str, Task], log: tuple[Path, dict[str, dict]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer's output (32 channels) is not the producer's input (16): refused before any timing."""
    consumer, producer = tasks["consumer"].name, tasks["producer"].name
    with pytest.raises(SystemExit, match=f"{consumer}'s output .* is not {producer}'s input"):
        run_main(os_bench, monkeypatch, "--tuning-log", str(log[0]), "--tasks", producer,
                 "--producer", f"{producer}={consumer}", "--rounds", "1", "--repeats", "1", "--flush-mib", "0.25",
                 "--output", str(tmp_path / "o.json"))
    assert not (tmp_path / "o.json").exists()
