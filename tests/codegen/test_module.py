"""``vdla.compiler.build`` modules: argument checks, export to a shared library, loading it
with the runtime alone, and refusing CPUs that lack the recorded features."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from vdla.compiler import te
from vdla.compiler.build import BuildError, build
from vdla.compiler.codegen.llvm import TargetError, codegen, export_library, host_target, jit
from vdla.compiler.codegen.llvm import parse_target
from vdla.compiler.schedule import create_schedule
from vdla.runtime.cpu_module import CpuModuleError, MissingCpuFeatures, load_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def axpy():
    x = te.placeholder((4, 40), name="x")
    y = te.placeholder((4, 40), name="y")
    z = te.compute((4, 40), lambda i, j: x[i, j] * 2.0 + y[i, j], name="z")
    s = create_schedule(z)
    i, j = s.get_loops(z)
    jo, ji = s.split(j, factor=8)
    s.vectorize(ji)
    s.parallel(i)
    return build(s, [x, y, z], name="axpy")


def test_module_runs_and_checks_arguments(axpy) -> None:  # noqa: ANN001
    x = np.random.default_rng(1).standard_normal((4, 40)).astype(np.float32)
    y = np.ones((4, 40), np.float32)
    z = np.zeros((4, 40), np.float32)
    axpy(x, y, z)
    np.testing.assert_allclose(z, x * 2 + 1, rtol=1e-6)
    with pytest.raises(CpuModuleError, match=r"argument 0 \(x\) of axpy has shape \(4, 39\)"):
        axpy(x[:, :39].copy(), y, z)
    with pytest.raises(CpuModuleError, match="dtype float64, expected float32"):
        axpy(x.astype(np.float64), y, z)
    with pytest.raises(CpuModuleError, match="takes 3 arrays"):
        axpy(x, y)
    with pytest.raises(CpuModuleError, match="not C-contiguous"):
        axpy(np.asfortranarray(x), y, z)
    with pytest.raises(CpuModuleError, match="must be a NumPy array"):
        axpy(x.tolist(), y, z)


def test_sources_and_timing(axpy) -> None:  # noqa: ANN001
    assert "parallel" in axpy.get_source("tir")
    assert "define i32 @\"axpy\"" in axpy.get_source("ll")
    assert "axpy" in axpy.get_source("asm")
    with pytest.raises(BuildError, match="unknown source format"):
        axpy.get_source("ptx")
    a = np.zeros((4, 40), np.float32)
    times = axpy.time(a, a.copy(), a.copy(), number=2, repeat=3)
    assert len(times) == 3 and all(t > 0 for t in times)


def test_build_argument_errors() -> None:
    x = te.placeholder((8,), name="x")
    y = te.compute((8,), lambda i: x[i] + 1.0, name="y")
    other = te.placeholder((8,), name="other")
    s = create_schedule(y)
    with pytest.raises(BuildError, match="not parameters"):
        build(s, [x, other, y])
    with pytest.raises(BuildError, match="leave out"):
        build(s, [x])
    with pytest.raises(BuildError, match="Schedule or a PrimFunc"):
        build(y)
    with pytest.raises(TargetError, match="unknown target"):
        build(s, target="cuda")


def test_parameter_order_follows_args() -> None:
    a = te.placeholder((8,), name="a")
    b = te.placeholder((8,), name="b")
    c = te.compute((8,), lambda i: a[i] - b[i], name="c")
    mod = build(create_schedule(c), [c, b, a])
    out = np.zeros(8, np.float32)
    mod(out, np.ones(8, np.float32), np.full(8, 5.0, np.float32))
    np.testing.assert_array_equal(out, 4.0)


_LOADER = textwrap.dedent("""
    import json, sys
    import numpy as np
    from vdla.runtime.cpu_module import load_module
    mod = load_module(sys.argv[1])
    mod.set_num_threads(2)
    x = np.arange(160, dtype=np.float32).reshape(4, 40)
    z = np.zeros((4, 40), np.float32)
    mod["axpy"](x, np.ones_like(x), z)
    assert np.array_equal(z, x * 2 + 1), z
    assert not any(m == "vdla.compiler" or m.startswith("vdla.compiler.") for m in sys.modules)
    print(json.dumps(mod.target))
""")


def test_export_and_load_without_the_compiler(axpy, tmp_path: Path) -> None:  # noqa: ANN001
    lib = axpy.export(tmp_path / "axpy.so")
    proc = subprocess.run([sys.executable, "-c", _LOADER, lib], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    target = json.loads(proc.stdout)
    assert target["cpu"] == host_target().cpu
    assert set(target["features"]) == set(host_target().features)


def _missing_feature() -> str:
    off = [name for name, on in llvm.get_host_cpu_features().items() if not on]
    if not off:
        pytest.skip("the host CPU reports every feature LLVM knows")
    return sorted(off)[0]


def test_library_requiring_a_missing_feature_is_refused(tmp_path: Path) -> None:
    feature = _missing_feature()
    x = te.placeholder((8,), name="x")
    y = te.compute((8,), lambda i: x[i] * 2.0, name="y")
    from vdla.compiler.tir.pipeline import lower
    func = lower(create_schedule(y))
    mod = codegen([func], host_target().with_features(feature))
    lib = export_library(mod, tmp_path / "needs.so")
    with pytest.raises(MissingCpuFeatures, match=rf"lacks: .*{feature}"):
        load_module(lib)
    with pytest.raises(MissingCpuFeatures, match=feature):
        jit(mod)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CpuModuleError, match="no such module file"):
        load_module(tmp_path / "missing.so")
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not an ELF file")
    with pytest.raises(CpuModuleError, match="not a shared library"):
        load_module(bogus)


def test_target_parsing() -> None:
    host = host_target()
    assert parse_target("llvm") == host
    assert parse_target(None) == host
    named = parse_target("llvm -mcpu=x86-64 -mattr=+sse2,+avx2")
    assert named.cpu == "x86-64" and named.features == {"sse2", "avx2"}
    assert named.vector_bits == 256
    assert host.vector_bits == (512 if "avx512f" in host.features else
                                256 if "avx2" in host.features else host.vector_bits)
    with pytest.raises(TargetError, match="unknown option"):
        parse_target("llvm -O3")
