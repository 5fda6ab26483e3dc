"""Session fixtures shared across test directories: real files written by the tools, built once."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (the scripts are not a package), registered in ``sys.modules`` as
    ``bench_<name>`` (a bench that pickles its functions by value finds itself there by that name), with
    ``bench/`` on the path for the neighbours it imports (``host``, ``peer_tree``, ...)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench_script() -> Callable[[str], ModuleType]:
    """:func:`load_bench_script`, for tests of the benchmark scripts' own logic."""
    return load_bench_script


def write_small_cnn(path: Path, seed: int = 0) -> Path:
    """An ONNX CNN (two 3x3 convs with ReLU, global average pool, dense) on 1x1x8x8 inputs."""
    rng = np.random.default_rng(seed)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        scale = 1.0 / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [init("w1", 16, 1, 3, 3), init("b1", 16), init("w2", 16, 16, 3, 3), init("b2", 16),
         init("w3", 10, 16), init("b3", 10)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def small_cnn(tmp_path: Path) -> Path:
    """``write_small_cnn`` into the test's temporary folder (a fixture, so no test imports ``conftest``: two
    conftest.py files under one module name break collection when their directories run in one call)."""
    return write_small_cnn(tmp_path / "cnn.onnx")


@pytest.fixture
def force_winograd():
    """A factory of dispatchers that answer every stride-1 3x3 conv with given Winograd knobs (as a tuning log
    would); its ``answered`` counts the convs that asked."""
    from vdla.compiler.autotune import dispatch

    def make(knobs: object) -> dispatch.ApplyFixed:
        return dispatch.ApplyFixed("conv2d_nchwc", knobs, where=lambda wl: (wl["kh"], wl["stride_h"]) == (3, 1))
    return make


@dataclass(frozen=True)
class CompiledFiles:
    """Files written by ``vdla compile``: the ONNX model, modules for two configs, an input, calibration data."""

    onnx: Path
    module: Path
    """compiled for the ``default`` config (CPU and VDLA nodes, so it holds kernels.so)"""
    module_tiny: Path
    """the same model compiled for ``tiny``"""
    x: Path
    calib: Path


@pytest.fixture(scope="session")
def compiled_files(tmp_path_factory: pytest.TempPathFactory) -> CompiledFiles:
    from vdla.compiler.cli.main import main

    d = tmp_path_factory.mktemp("compiled")
    model = write_small_cnn(d / "cnn.onnx")
    rng = np.random.default_rng(0)
    np.savez(d / "calib.npz", x=rng.random((4, 1, 8, 8), dtype=np.float32))
    np.save(d / "x.npy", rng.random((1, 1, 8, 8), dtype=np.float32))
    for config in ("default", "tiny"):
        assert main(["compile", str(model), "--target", "vdla", "--config", config, "--calibrate",
                     str(d / "calib.npz"), "-o", str(d / f"cnn_{config}.vdla")]) == 0
    return CompiledFiles(model, d / "cnn_default.vdla", d / "cnn_tiny.vdla", d / "x.npy", d / "calib.npz")


def _cpu_targets() -> dict[str, str]:
    """The ISAs the CPU tests compile for: the host's best, and AVX2 when the host has more (so an
    AVX-512 machine still checks the AVX2 code); one entry on an AVX2-only host."""
    from vdla.compiler.codegen.llvm import host_target

    targets = {"host": "llvm"}
    if "avx512f" in host_target().features:
        targets["avx2"] = AVX2_TARGET
    return targets


#: The AVX2 (+FMA) target of the ISA matrix: 16 ymm registers, no AVX-512.
AVX2_TARGET = "llvm -mcpu=haswell"


@pytest.fixture(params=list(_cpu_targets()))
def cpu_target(request: pytest.FixtureRequest):
    """The LLVM target string of one ISA of the matrix, current for the test (``build`` and the
    schedules' defaults compile for it)."""
    from vdla.compiler.codegen.llvm import parse_target, using_target

    spec = _cpu_targets()[request.param]
    with using_target(parse_target(spec)):
        yield spec
