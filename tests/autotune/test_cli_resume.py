"""End to end: `vdla tune` killed with SIGKILL, resumed, then `vdla compile --tuning-log`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from vdla.runtime.graph_executor import load


class _Net(torch.nn.Module):
    """Two 32-channel 3x3 convs (one task of weight 2), a 1x1 conv, a global average pool (its own schedule on
    the VDLA, with no knobs: not a task) and a dense head (the first conv stays float on the CPU for the VDLA
    target)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.c2 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.c3 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.c4 = torch.nn.Conv2d(32, 16, 1)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c3(torch.relu(self.c2(x))))
        return self.fc(torch.relu(self.c4(x)).mean((2, 3)))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tune_model") / "net.onnx"
    torch.manual_seed(0)
    torch.onnx.export(_Net().eval(), torch.randn(1, 16, 8, 8), str(path), input_names=["x"], output_names=["y"],
                      opset_version=18, dynamo=False)
    return path


def _vdla(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", *args], capture_output=True, text=True,
                          timeout=600, **kw)  # type: ignore[call-overload]


def _lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().split("\n") if line.endswith("}")]


def _run(module: Path, x: np.ndarray) -> np.ndarray:
    m = load(module)
    return m.run({"x": x}, backend="fsim")[0]


def test_vdla_tune_survives_sigkill_and_its_best_configs_compile(model: Path, tmp_path: Path) -> None:
    log = tmp_path / "tune.jsonl"
    cmd = [sys.executable, "-m", "vdla.compiler.cli.main", "tune", str(model), "--target", "vdla", "--trials", "4",
           "--batch", "1", "--tuner", "random", "--log", str(log), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while len(_lines(log)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"tune ended before it could be killed: {proc.communicate()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _lines(log)
    assert 3 <= len(before) < 8
    again = _vdla(*cmd[3:-1], "--resume")
    assert again.returncode == 0, again.stderr
    after = _lines(log)
    assert after[: len(before)] == before  # nothing finished was lost or rewritten
    records = [json.loads(line) for line in after]
    per_task: dict[str, list[str]] = {}
    for r in records:
        per_task.setdefault(r["task_key"], []).append(r["config_key"])
    assert len(per_task) == 3  # the 3x3 convs (one task), the 1x1 conv and the dense layer (the global pool has no knobs)
    for keys in per_task.values():
        assert len(keys) == len(set(keys)) == 4  # nothing measured twice, every task to its budget
    best = {k: min((r for r in records if r["task_key"] == k and r["status"] == "ok"),
                                                 key=lambda r: min(r["costs"]))["config_key"]
            for k in per_task}

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "cal.npz", x=rng.standard_normal((2, 1, 16, 8, 8)).astype(np.float32))
    common = [str(model), "--target", "vdla", "--calibrate", str(tmp_path / "cal.npz")]
    tuned = _vdla("compile", *common, "--tuning-log", str(log), "-o", str(tmp_path / "tuned.vdla"))
    assert tuned.returncode == 0, tuned.stderr
    assert "best config applied to 3 tasks, default kept for 0" in tuned.stdout
    for key in best.values():
        assert key in tuned.stdout
    plain = _vdla("compile", *common, "-o", str(tmp_path / "plain.vdla"))
    assert plain.returncode == 0, plain.stderr
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(_run(tmp_path / "tuned.vdla", x), _run(tmp_path / "plain.vdla", x))


@pytest.mark.slow  # ~30 s; the CPU path is covered in-process by test_task_space / test_measure
def test_llvm_tune_then_compile_and_fallback_for_tasks_missing_from_the_log(model: Path, tmp_path: Path) -> None:
    log = tmp_path / "cpu.jsonl"
    done = _vdla("tune", str(model), "--target", "llvm", "--trials", "2", "--batch", "2", "--log", str(log), "--quiet",
                 "--tuner", "ga")
    assert done.returncode == 0, done.stderr
    refused = _vdla("tune", str(model), "--target", "llvm", "--trials", "2", "--log", str(log))
    assert refused.returncode == 2 and "--resume" in refused.stderr
    lines = _lines(log)
    keys = sorted({json.loads(line)["task_key"] for line in lines})
    # Three conv tasks and the dense head, plus the element-wise kernels the graph keeps apart (the input's
    # blocking copy).
    kinds = sorted(json.loads(key)["kind"] for key in keys)
    assert kinds.count("conv2d_nchwc") == 3 and kinds.count("dense_pack") == 1
    assert set(kinds) <= {"conv2d_nchwc", "dense_pack", "elementwise"} and len(lines) == 2 * len(keys)
    assert len(list((tmp_path / "cpu_curves").glob("*.png"))) == len(keys)
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(line for line in lines if json.loads(line)["task_key"] != keys[0]) + "\n")
    tuned = _vdla("compile", str(model), "--tuning-log", str(partial), "-o", str(tmp_path / "tuned.vdla"))
    assert tuned.returncode == 0, tuned.stderr
    assert f"best config applied to {len(keys) - 1} tasks, default kept for 1" in tuned.stdout
    assert "not in the log (for this target and host)" in tuned.stdout
    plain = _vdla("compile", str(model), "-o", str(tmp_path / "plain.vdla"))
    assert plain.returncode == 0, plain.stderr
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(tmp_path / "tuned.vdla", x), _run(tmp_path / "plain.vdla", x), rtol=1e-4,
                               atol=1e-5)


def test_llvm_tune_build_timeout_reaches_the_measurement(model: Path, tmp_path: Path) -> None:
    # A build limit no kernel can meet: every measured config is logged as a timeout naming the limit.
    log = tmp_path / "timeout.jsonl"
    done = _vdla("tune", str(model), "--target", "llvm", "--trials", "1", "--batch", "1", "--retime", "0",
                 "--build-timeout", "0.01", "--log", str(log), "--quiet", "--tuner", "random")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in _lines(log)]
    assert records and all(r["status"] == "timeout" and "0.01 s timeout" in r["detail"] for r in records)
    # The flush before each timed call is this model's weight bytes (far below the full 32 MiB).
    from vdla.compiler.autotune.footprint import model_weight_bytes
    from vdla.compiler.autotune.measure import model_flush_bytes
    from vdla.compiler.frontend.onnx import from_onnx

    flush = model_flush_bytes(model_weight_bytes(from_onnx(str(model))))
    assert 32 * 32 * 9 * 4 * 2 < flush < 1 << 20
    assert f"timing each call after a {flush / 2**20:.1f} MiB cache flush" in done.stdout
    bad = _vdla("tune", str(model), "--target", "llvm", "--build-timeout", "-1", "--log", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 2 and "--build-timeout must be a number of seconds > 0" in bad.stderr


def test_llvm_tune_max_spill_reloads_is_checked_and_reaches_the_log(model: Path, tmp_path: Path) -> None:
    """A bad ``--max-spill-reloads`` is a usage error naming the flag; ``keep`` tunes and times every config."""
    bad = _vdla("tune", str(model), "--target", "llvm", "--trials", "2", "--log", str(tmp_path / "a.jsonl"),
                "--max-spill-reloads", "some", "--quiet")
    assert bad.returncode != 0 and "--max-spill-reloads" in bad.stderr and "keep" in bad.stderr
    log = tmp_path / "b.jsonl"
    ok = _vdla("tune", str(model), "--target", "llvm", "--trials", "2", "--batch", "2", "--tuner", "random",
               "--retime", "0", "--log", str(log), "--max-spill-reloads", "keep", "--quiet")
    assert ok.returncode == 0, ok.stderr
    records = [json.loads(line) for line in _lines(log)]
    assert records and all(r["status"] != "spills" for r in records)
