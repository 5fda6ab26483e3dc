"""``bitstream.json``: what a bitstream folder holds, for the driver that loads it.

``vdla fpga build`` writes the manifest into every board's folder: first when the project is
written (no ``files`` yet: the tools have not run), again after a successful run with the
bitstream (and the ``.hwh`` pynq needs) and their SHA-256. The fpga backend
(:mod:`vdla.runtime.fpga`) reads it to find the bitstream, the config the hardware was generated
for and the build id the design's BUILD_ID register must read.

The build id is a content hash, not a timestamp: the low 32 bits of a SHA-256 over the board,
the config and every source of the project (the RTL, the board's scripts and top). The same
inputs give the same id, so a rebuild is reproducible and cached builds stay valid, while a
changed source or config gives another id -- the driver then sees that the loaded bitstream is
not the one the folder describes. 0 is reserved for simulation (the parameter's default).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import BadFileError
from vdla_hw.fpga.boards import FPGA_SCRIPTS_DIR, Board
from vdla_hw.rtl_build import rtl_sources

MANIFEST_NAME = "bitstream.json"
FORMAT = "vdla-bitstream/1"
CONFIG_FILE = "config.json"
"""The hardware config, written next to the manifest (custom configs have no preset to load)."""


@dataclass(frozen=True)
class Manifest:
    """The contents of ``bitstream.json`` (paths in ``files`` are relative to its folder)."""

    board: str
    config: str
    config_digest: str
    build_id: int
    files: Mapping[str, str] = field(default_factory=dict)
    """``bit`` and (Zynq boards) ``hwh``: present once the tools have produced them."""
    sha256: Mapping[str, str] = field(default_factory=dict)
    format: str = FORMAT

    def to_json(self) -> dict[str, object]:
        return {"format": self.format, "board": self.board, "config": self.config,
                "config_digest": self.config_digest, "build_id": self.build_id,
                "files": dict(self.files), "sha256": dict(self.sha256)}


def project_inputs(board: Board, cfg: HwConfig) -> list[Path]:
    """Every source a board's project is made of: the config's RTL and the board's scripts."""
    scripts = sorted(p for p in board.scripts_dir.glob("*") if p.is_file())
    common = sorted((FPGA_SCRIPTS_DIR / "vivado").glob("*.tcl")) if board.ps is not None else []
    return list(rtl_sources(cfg)) + scripts + common + board.source_paths()


def choose_build_id(board: Board, cfg: HwConfig) -> int:
    """The build id of ``cfg`` on ``board`` (see the module docstring); never 0."""
    h = hashlib.sha256(f"{FORMAT}\0{board.name}\0{cfg.to_json()}\0".encode())
    for path in project_inputs(board, cfg):
        h.update(path.name.encode() + b"\0")
        h.update(path.read_bytes())
    return int.from_bytes(h.digest()[:4], "little") or 1


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(folder: Path, board: Board, cfg: HwConfig, build_id: int,
                   files: Mapping[str, Path] | None = None) -> Manifest:
    """Write ``bitstream.json`` (and ``config.json``) into ``folder``; ``files`` are produced
    files by role (``bit``, ``hwh``), inside ``folder``."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    rel = {role: Path(path).resolve().relative_to(folder).as_posix() for role, path in (files or {}).items()}
    manifest = Manifest(board=board.name, config=cfg.name, config_digest=cfg.digest, build_id=build_id,
                        files=rel, sha256={role: _sha256(folder / p) for role, p in rel.items()})
    (folder / CONFIG_FILE).write_text(cfg.to_json() + "\n")
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest.to_json(), indent=2) + "\n")
    return manifest


def read_manifest(folder: Path) -> Manifest:
    """The manifest of bitstream folder ``folder``; a :class:`BadFileError` names what is wrong."""
    path = Path(folder) / MANIFEST_NAME
    fix = f"build the folder with `vdla fpga build --board B --config C -o {folder}`"
    if not path.is_file():
        raise BadFileError(f"{folder} is not a bitstream folder: it has no {MANIFEST_NAME}", hint=fix)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadFileError(f"{path} is not valid JSON ({exc})", hint=fix) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise BadFileError(f"{path} has format {found!r}; this vdla reads {FORMAT!r}", hint=fix)
    try:
        manifest = Manifest(board=str(data["board"]), config=str(data["config"]),
                            config_digest=str(data["config_digest"]), build_id=int(data["build_id"]),
                            files=dict(data.get("files", {})), sha256=dict(data.get("sha256", {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadFileError(f"{path} lacks a valid field ({exc!r})", hint=fix) from None
    return manifest


def manifest_config(folder: Path, manifest: Manifest) -> HwConfig:
    """The config the folder's hardware was generated for, checked against the manifest's digest."""
    path = Path(folder) / CONFIG_FILE
    cfg = load_config(path) if path.is_file() else load_config(manifest.config)
    if cfg.digest != manifest.config_digest:
        raise BadFileError(
            f"{Path(folder) / MANIFEST_NAME} names config {manifest.config!r} with digest {manifest.config_digest}, "
            f"but {'its ' + CONFIG_FILE if path.is_file() else 'that preset'} has digest {cfg.digest}",
            hint=f"rebuild the folder with `vdla fpga build --config {manifest.config}`")
    return cfg


def check_files(folder: Path, manifest: Manifest) -> dict[str, Path]:
    """The manifest's files as paths, after checking that each exists and has its recorded SHA-256."""
    out = {}
    for role, rel in manifest.files.items():
        path = Path(folder) / rel
        if not path.is_file():
            raise BadFileError(f"the {role} file {path} named by {Path(folder) / MANIFEST_NAME} is missing",
                               hint="copy the whole bitstream folder, or rebuild it with `vdla fpga build`")
        if manifest.sha256.get(role) != _sha256(path):
            raise BadFileError(f"{path} is not the {role} file {MANIFEST_NAME} describes (its SHA-256 differs)",
                               hint="the folder was modified after the build; rebuild it with `vdla fpga build`")
        out[role] = path
    return out
