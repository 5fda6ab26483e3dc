"""Every file the tools read is checked on load: truncated, empty, foreign and wrong-kind files of each
type, damaged or swapped module members and modules of another config are refused with a
BadFileError naming the cause — through the API and through the CLI (exit 2, no traceback).

The files are real: bundles and modules written by the tools, then cut or altered as a bad copy,
a bad download or a mixed-up directory would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.cli.main import run as cli
from vdla.compiler.frontend.onnx import from_onnx
from vdla.runtime.cpu_module import CpuModuleError, load_module
from vdla.runtime.file_checks import sha256_hex
from vdla.runtime.graph_executor import load
from vdla.runtime.program import Program
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw.config import ConfigError, load_config
from vdla_hw.errors import BadConfigError, BadFileError

ROOT = Path(__file__).parents[2]


def cut(src: Path, dst: Path, keep: float = 0.5) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * keep)])
    return dst


def rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None], manifest: bool = False) -> Path:
    """A copy of module ``src`` with members changed (None drops one); ``manifest`` re-vouches for them,
    as a forger (or a broken tool) would."""
    with zipfile.ZipFile(src) as zin:
        members = {n: change(n, zin.read(n)) for n in zin.namelist()}
    members = {n: b for n, b in members.items() if b is not None}
    if manifest:
        meta = json.loads(members["manifest.json"])
        for n, b in members.items():
            if n in meta["members"]:
                meta["members"][n] = {"bytes": len(b), "sha256": sha256_hex(b)}
        members["manifest.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(dst, "w") as zout:
        for n, b in members.items():
            zout.writestr(n, b)
    return dst


def member(module: Path, name: str) -> bytes:
    with zipfile.ZipFile(module) as zf:
        return zf.read(name)


def cli_fails(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """Run ``vdla ARGS`` as the console script does; assert a user error (exit 2, no traceback)."""
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program, _ = tiled_gemm_program(load_config("tiny"), 8, 16, 8)
    return program.save(tmp_path_factory.mktemp("bundle") / "gemm.vdlaprog")


# ---- program bundles ---------------------------------------------------------------------------------
def test_truncated_bundle(bundle: Path, tmp_path: Path, capsys) -> None:
    bad = cut(bundle, tmp_path / "cut.vdlaprog")
    with pytest.raises(BadFileError, match="truncated or corrupt.*expected a VDLA program bundle"):
        Program.load(bad)
    cli_fails(["sim", str(bad)], capsys, "cut.vdlaprog is truncated")


def test_empty_bundle(tmp_path: Path, capsys) -> None:
    (tmp_path / "e.vdlaprog").write_bytes(b"")
    with pytest.raises(BadFileError, match=r"empty \(0 bytes\)"):
        Program.load(tmp_path / "e.vdlaprog")
    cli_fails(["sim", str(tmp_path / "e.vdlaprog")], capsys, "empty")


def test_npy_and_module_where_a_bundle_is_expected(compiled_files, tmp_path: Path, capsys) -> None:
    with pytest.raises(BadFileError, match=r"is a NumPy array \(\.npy\), not a VDLA program bundle"):
        Program.load(compiled_files.x)
    cli_fails(["sim", str(compiled_files.x)], capsys, "NumPy array (.npy)", "not a VDLA program bundle")
    cli_fails(["sim", str(compiled_files.module)], capsys, "is a VDLA module (.vdla)", "vdla run")


def test_altered_bundle_fails_its_checksum(bundle: Path, tmp_path: Path) -> None:
    # A valid archive whose image was changed after saving (one byte of the DRAM image).
    with np.load(bundle) as z:
        dram, meta = z["dram"].copy(), z["meta"]
    dram[-1] ^= 1
    with (tmp_path / "x.vdlaprog").open("wb") as f:
        np.savez(f, dram=dram, meta=meta)
    with pytest.raises(BadFileError, match="fails its SHA-256 check"):
        Program.load(tmp_path / "x.vdlaprog")


def test_bundle_of_an_older_version(bundle: Path, tmp_path: Path) -> None:
    with np.load(bundle) as z:
        dram, meta = z["dram"], json.loads(str(z["meta"]))
    meta["version"] = 3
    with (tmp_path / "old.vdlaprog").open("wb") as f:
        np.savez(f, dram=dram, meta=np.array(json.dumps(meta)))
    with pytest.raises(BadFileError, match="version 3; this vdla reads version 4.*older instruction layout.*LOAD element stride"):
        Program.load(tmp_path / "old.vdlaprog")


def test_bundle_for_another_config(bundle: Path, capsys) -> None:
    with pytest.raises(BadFileError, match=r"compiled for hardware config 'tiny' \(\w+\), but the hardware is "
                                           r"'default' \(\w+\)"):
        Program.load(bundle, load_config("default"))
    cli_fails(["sim", str(bundle), "--config", "default"], capsys, "'tiny'", "'default'")


# ---- modules -----------------------------------------------------------------------------------------
def test_truncated_and_empty_module(compiled_files, tmp_path: Path, capsys) -> None:
    bad = cut(compiled_files.module, tmp_path / "cut.vdla", 0.7)
    with pytest.raises(BadFileError, match=r"truncated or corrupt.*expected a VDLA model file"):
        load(bad)
    (tmp_path / "e.vdla").write_bytes(b"")
    with pytest.raises(BadFileError, match=r"empty \(0 bytes\)"):
        load(tmp_path / "e.vdla")
    cli_fails(["run", str(bad), "--input", str(compiled_files.x)], capsys, "cut.vdla is truncated")


def test_bundle_where_a_module_is_expected(bundle: Path, capsys, compiled_files) -> None:
    with pytest.raises(BadFileError, match=r"is a VDLA program bundle \(\.vdlaprog\), not a VDLA model file"):
        load(bundle)
    cli_fails(["run", str(bundle), "--input", str(compiled_files.x)], capsys, "not a VDLA model file")


@pytest.mark.parametrize("name", ["kernels.so", "params.npz", "vdla/1.vdlaprog", "graph.json"])
def test_damaged_member_fails_its_checksum(compiled_files, tmp_path: Path, name: str) -> None:
    bad = rewrite(compiled_files.module, tmp_path / "m.vdla", lambda n, b: b[: len(b) // 2] if n == name else b)
    with pytest.raises(BadFileError, match=rf"member {name} fails its checksum"):
        load(bad)


def test_missing_member(compiled_files, tmp_path: Path) -> None:
    bad = rewrite(compiled_files.module, tmp_path / "m.vdla", lambda n, b: None if n == "vdla/1.vdlaprog" else b)
    with pytest.raises(BadFileError, match=r"lacks the members \['vdla/1.vdlaprog'\].*truncated"):
        load(bad)


def test_module_without_a_manifest_is_an_older_format(compiled_files, tmp_path: Path) -> None:
    bad = rewrite(compiled_files.module, tmp_path / "m.vdla", lambda n, b: None if n == "manifest.json" else b)
    with pytest.raises(BadFileError, match="older format"):
        load(bad)


def test_truncated_kernels_never_reach_the_loader(compiled_files, tmp_path: Path) -> None:
    """Even with a manifest vouching for it, a cut kernels.so is refused before dlopen (which would map
    segments past its end and die of SIGBUS): in a fresh process, the CLI exits 2."""
    bad = rewrite(compiled_files.module, tmp_path / "m.vdla",
                  lambda n, b: b[: len(b) * 3 // 5] if n == "kernels.so" else b, manifest=True)
    with pytest.raises(BadFileError, match="kernels.so is a truncated shared library"):
        load(bad)
    proc = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "run", str(bad), "--input",
                           str(compiled_files.x)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert "truncated shared library" in proc.stderr and "Traceback" not in proc.stderr


def test_standalone_truncated_library(compiled_files, tmp_path: Path) -> None:
    lib = tmp_path / "k.so"
    lib.write_bytes(member(compiled_files.module, "kernels.so")[:-100])  # the section headers are at the end
    with pytest.raises(CpuModuleError, match="truncated shared library"):
        load_module(lib)


def test_no_temporary_files_are_left(compiled_files, tmp_path: Path, monkeypatch) -> None:
    """The kernel library is written to a private directory only while dlopen maps it: nothing is left
    after a load, a failed load, or a Ctrl-C in the middle of one."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    module = load(compiled_files.module)
    assert module.run(np.load(compiled_files.x))[0].shape == (1, 10)
    assert not list(scratch.iterdir())

    def interrupted(*args, **kwargs):
        assert list(scratch.iterdir()), "the library is loaded from the private directory"
        raise KeyboardInterrupt

    monkeypatch.setattr("vdla.runtime.cpu_module.ctypes.CDLL", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load(compiled_files.module)
    assert not list(scratch.iterdir())


def test_module_for_another_config(compiled_files, capsys) -> None:
    with pytest.raises(BadFileError, match=r"cnn_tiny.vdla was compiled for hardware config 'tiny' \(\w+\), but "
                                           r"the hardware is 'default'"):
        load(compiled_files.module_tiny, load_config("default"))
    cli_fails(["run", str(compiled_files.module_tiny), "--input", str(compiled_files.x), "--config", "default"],
              capsys, "'tiny'", "'default'", "recompile")


@pytest.mark.parametrize("name", ["graph.json", "vdla/1.vdlaprog"])
def test_member_swapped_in_from_another_config(compiled_files, tmp_path: Path, name: str, capsys) -> None:
    swapped = member(compiled_files.module_tiny, name)
    bad = rewrite(compiled_files.module, tmp_path / "m.vdla", lambda n, b: swapped if n == name else b)
    with pytest.raises(BadFileError, match=rf"member {name} was compiled for (hardware )?config 'tiny' \(\w+\), "
                                           rf"but the module is for 'default' \(\w+\)"):
        load(bad)
    cli_fails(["run", str(bad), "--input", str(compiled_files.x)], capsys, "swapped in from another module")


# ---- arrays ------------------------------------------------------------------------------------------
def test_bad_input_arrays(compiled_files, tmp_path: Path, capsys) -> None:
    x = compiled_files.x
    run = ["run", str(compiled_files.module), "--input"]
    cli_fails(run + [str(cut(x, tmp_path / "cut.npy", 0.8))], capsys, "cut.npy is a damaged or unsupported .npy")
    cli_fails(run + [str(compiled_files.calib)], capsys, "is a NumPy archive (.npz) of arrays ['x'], not an input")
    cli_fails(run + [str(compiled_files.module)], capsys, "is a VDLA module (.vdla), not an input array")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    cli_fails(run + [str(tmp_path / "obj.npy")], capsys, "obj.npy is a damaged or unsupported .npy array")
    (tmp_path / "e.npy").write_bytes(b"")
    cli_fails(run + [str(tmp_path / "e.npy")], capsys, "e.npy is empty")


def test_bad_calibration_data(compiled_files, tmp_path: Path, capsys) -> None:
    compile_ = ["compile", str(compiled_files.onnx), "--target", "vdla", "-o", str(tmp_path / "o.vdla"), "--calibrate"]
    cli_fails(compile_ + [str(cut(compiled_files.calib, tmp_path / "cut.npz"))], capsys, "cut.npz is truncated")
    cli_fails(compile_ + [str(compiled_files.onnx)], capsys, "not calibration data")


# ---- configs -----------------------------------------------------------------------------------------
def test_bad_config_files(compiled_files, tmp_path: Path, capsys) -> None:
    good = load_config("tiny").to_json()
    (tmp_path / "cut.json").write_text(good[: len(good) // 2])
    with pytest.raises(BadFileError, match=r"cut\.json: not valid JSON") as info:
        load_config(tmp_path / "cut.json")
    assert isinstance(info.value, BadConfigError)  # both a bad file and a bad config
    (tmp_path / "e.json").write_text("")
    with pytest.raises(BadFileError, match="is empty"):
        load_config(tmp_path / "e.json")
    binary = tmp_path / "x.json"
    binary.write_bytes(compiled_files.x.read_bytes())
    with pytest.raises(BadFileError, match="is binary data, not a hardware config"):
        load_config(binary)
    (tmp_path / "graph.json").write_bytes(member(compiled_files.module, "graph.json"))
    with pytest.raises(ConfigError, match=r"unknown config key\(s\)"):
        load_config(tmp_path / "graph.json")
    cli_fails(["run", str(compiled_files.module), "--input", str(compiled_files.x), "--config", str(binary)],
              capsys, "binary data")


# ---- tuning logs --------------------------------------------------------------------------------------
def test_bad_tuning_logs(compiled_files, tmp_path: Path, capsys) -> None:
    from vdla.compiler.autotune.database import read_log

    with pytest.raises(BadFileError, match=r"is a NumPy array \(\.npy\), not a tuning log"):
        read_log(compiled_files.x)
    with pytest.raises(BadFileError, match=r"is a VDLA module \(\.vdla\), not a tuning log"):
        read_log(compiled_files.module)
    cli_fails(["compile", str(compiled_files.onnx), "-o", str(tmp_path / "o.vdla"), "--tuning-log",
               str(compiled_files.x)], capsys, "not a tuning log")


# ---- ONNX --------------------------------------------------------------------------------------------
def test_bad_onnx_files(compiled_files, tmp_path: Path, capsys) -> None:
    bad = cut(compiled_files.onnx, tmp_path / "cut.onnx", 0.6)
    with pytest.raises(BadFileError, match="cut.onnx is truncated or not an ONNX model"):
        from_onnx(bad)
    (tmp_path / "e.onnx").write_bytes(b"")
    with pytest.raises(BadFileError, match="is empty"):
        from_onnx(tmp_path / "e.onnx")
    with pytest.raises(BadFileError, match=r"is a NumPy array \(\.npy\), not an ONNX model"):
        from_onnx(compiled_files.x)
    cli_fails(["compile", str(bad), "-o", str(tmp_path / "o.vdla")], capsys, "truncated or not an ONNX model")
    cli_fails(["compile", str(compiled_files.module), "-o", str(tmp_path / "o.vdla")], capsys,
              "is a VDLA module (.vdla), not an ONNX model")


def test_module_of_the_previous_instruction_layout_is_refused(compiled_files, tmp_path: Path, capsys) -> None:
    # A module written before the GEMM overwrite bit and the STORE bias (manifest v2): its programs use
    # the old instruction layouts, so it must be recompiled, not run.
    old = tmp_path / "old.vdla"
    with zipfile.ZipFile(compiled_files.module) as src, zipfile.ZipFile(old, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["version"] = 3
                data = json.dumps(manifest).encode()
            dst.writestr(item, data)
    with pytest.raises(BadFileError, match="manifest of format vdla-module v3 is not v4") as info:
        load(old)
    assert "recompile" in str(info.value.hint)
    cli_fails(["run", str(old), "--input", str(compiled_files.x)], capsys, "v3 is not v4", "recompile")
