"""fpga_scripts/ is package data: a wheel (non-editable) install can write board projects too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.resources import files
from pathlib import Path

import pytest

from vdla_hw.fpga.boards import BOARDS, FPGA_SCRIPTS_DIR
from vdla_hw.fpga.vivado import COMMON_TCL

ROOT = Path(__file__).resolve().parents[2]


def _script_files() -> set[str]:
    """Every file of the scripts folder the flows may read (the package marker and caches aside)."""
    return {p.relative_to(FPGA_SCRIPTS_DIR).as_posix() for p in FPGA_SCRIPTS_DIR.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc")}


def test_scripts_are_found_through_importlib_resources() -> None:
    here = files("vdla.fpga_scripts")
    assert Path(str(here)) == FPGA_SCRIPTS_DIR
    assert here.joinpath("vivado", "build.tcl").read_text() == COMMON_TCL.read_text()
    for board in BOARDS.values():
        # every board has its folder (Zynq: the generated board.tcl; ULX3S: the self-test top)
        assert here.joinpath(board.scripts_dir.name).is_dir(), board.name


def test_package_data_globs_cover_every_script_file() -> None:
    """A file the globs miss would be absent from a wheel, and only a wheel install would notice."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "fpga_scripts" in (ROOT / "setup.py").read_text()  # setup.py maps it to vdla.fpga_scripts
    globs = project["package-data"]["vdla.fpga_scripts"]
    shipped = {p.relative_to(FPGA_SCRIPTS_DIR).as_posix() for g in globs for p in FPGA_SCRIPTS_DIR.glob(g)}
    assert _script_files() - shipped == set()


@pytest.mark.slow  # builds a wheel (~30 s)
def test_wheel_install_writes_a_vivado_project(tmp_path: Path) -> None:
    src = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in tracked.split():
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    wheel, = (tmp_path / "dist").glob("vdla-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"vdla/fpga_scripts/{n}" for n in _script_files()} <= names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # what pip install puts in site-packages
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "fpga", "build", "--board", "pynq-z2",
                          "--config", "tiny", "-o", str(tmp_path / "proj"), "--no-run"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "proj" / "build.tcl").read_text() == COMMON_TCL.read_text()
    probe = subprocess.run([sys.executable, "-c", "import vdla_hw.fpga.boards as b; print(b.FPGA_SCRIPTS_DIR)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert Path(probe.stdout.strip()) == site / "vdla" / "fpga_scripts"
