"""A bitstream folder as bytes: what ``vdla fpga deploy`` ships to a board worker.

A folder written by ``vdla fpga build`` holds a ``bitstream.json`` manifest (board, config name
and digest, build id, the produced files by role -- ``bit``, ``hwh`` -- and their SHA-256) and the
``config.json`` the hardware was generated for. :func:`read_bundle` checks the folder and packs
exactly those files into a :class:`Bundle` (a Vivado project folder also holds sources, reports and
the project, which a board does not need). :func:`unpack_bundle` writes a bundle into a new folder
and checks it there again, so a file changed in transit never reaches a board.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import BadFileError, UsageError

MANIFEST = "bitstream.json"
CONFIG_FILE = "config.json"
FORMAT = "vdla-bitstream/1"


@dataclass(frozen=True)
class Manifest:
    """The fields of ``bitstream.json`` a deploy relies on (paths relative to its folder)."""

    board: str
    config: str
    config_digest: str
    build_id: int
    files: dict[str, str]
    """Role (``bit``, ``hwh``) -> path; empty when the board's tools have not run."""
    sha256: dict[str, str]
    """Role -> the file's hex SHA-256."""


@dataclass(frozen=True)
class Bundle:
    """A bitstream folder in memory: relative path -> bytes (the manifest and config included)."""

    source: str
    """Where it was read (for messages)."""
    files: dict[str, bytes]

    @property
    def manifest_text(self) -> str:
        return self.files[MANIFEST].decode()


def board_key(board: str) -> str:
    """The spelling of a board name inside device kinds (``pynq-z2`` -> ``pynq_z2``)."""
    return board.strip().lower().replace("-", "_")


def _fix(folder: Path) -> str:
    return f"build the folder with `vdla fpga build --board B --config C -o {folder}`"


def read_manifest(folder: Path) -> Manifest:
    """The manifest of ``folder``; a :class:`BadFileError` names what is wrong."""
    path = folder / MANIFEST
    if not path.is_file():
        raise BadFileError(f"{folder} has no {MANIFEST}: it is not a bitstream folder written by vdla fpga build",
                           hint=_fix(folder))
    try:
        raw = json.loads(path.read_text())
        if raw.get("format") != FORMAT:
            raise BadFileError(f"{path} has format {raw.get('format')!r}; this vdla reads {FORMAT!r}",
                               hint=_fix(folder))
        files = {str(k): _safe(str(v), path) for k, v in dict(raw.get("files", {})).items()}
        return Manifest(board=str(raw["board"]), config=str(raw["config"]), config_digest=str(raw["config_digest"]),
                        build_id=int(raw["build_id"]), files=files, sha256=dict(raw.get("sha256", {})))
    except json.JSONDecodeError as exc:
        raise BadFileError(f"{path} is not valid JSON ({exc})", hint=_fix(folder)) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadFileError(f"{path} lacks a valid field ({exc!r})", hint=_fix(folder)) from None


def _safe(name: str, manifest: Path) -> str:
    # Paths come from a manifest that may travel between machines: keep them inside the folder.
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadFileError(f"{manifest} names the file {name!r}, which is outside its folder",
                           hint="rebuild the folder with vdla fpga build")
    return path.as_posix()


def check_folder(folder: Path) -> tuple[Manifest, HwConfig]:
    """Check ``folder``: its manifest, every file against its SHA-256, its config against the digest."""
    manifest = read_manifest(folder)
    for role, rel in sorted(manifest.files.items()):
        path = folder / rel
        if not path.is_file():
            raise BadFileError(f"the {role} file {path} named by {folder / MANIFEST} is missing",
                               hint="copy the whole bitstream folder, or rebuild it with vdla fpga build")
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != manifest.sha256.get(role):
            raise BadFileError(f"{path} does not match its manifest: the {role} file's SHA-256 is {got[:16]}..., "
                               f"{MANIFEST} says {str(manifest.sha256.get(role))[:16]}...",
                               hint="the file was changed or copied incompletely; copy it again or rebuild the "
                                    "folder with vdla fpga build")
    path = folder / CONFIG_FILE
    cfg = load_config(path) if path.is_file() else load_config(manifest.config)
    if cfg.digest != manifest.config_digest:
        raise BadFileError(f"{folder / MANIFEST} names config {manifest.config!r} with digest "
                           f"{manifest.config_digest}, but {path.name} has digest {cfg.digest}",
                           hint=f"rebuild the folder with vdla fpga build --config {manifest.config}")
    return manifest, cfg


def check_board(manifest: Manifest, board: str, source: str) -> None:
    """Raise a :class:`UsageError` when the bitstream was built for another board than ``board``."""
    if board_key(manifest.board) != board_key(board):
        raise UsageError(f"{source} holds a bitstream for board {manifest.board!r}, not {board!r}",
                         hint=f"deploy it with --board {manifest.board}, or build one for {board}")


def read_bundle(folder: str | Path) -> Bundle:
    """Check the bitstream folder ``folder`` and pack its manifest, config and produced files."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadFileError(f"bitstream folder {folder} does not exist",
                           hint="pass the folder vdla fpga build wrote (-o DIR)")
    manifest, _ = check_folder(folder)
    names = {MANIFEST, *manifest.files.values()}
    if (folder / CONFIG_FILE).is_file():
        names.add(CONFIG_FILE)
    return Bundle(str(folder), {name: (folder / name).read_bytes() for name in sorted(names)})


def unpack_bundle(bundle: Bundle, dest: Path) -> tuple[Manifest, HwConfig]:
    """Write ``bundle`` into the new folder ``dest`` and check it there (see :func:`check_folder`)."""
    if MANIFEST not in bundle.files:
        raise BadFileError(f"the bundle from {bundle.source} has no {MANIFEST}", hint=_fix(Path(bundle.source)))
    for name, data in bundle.files.items():
        target = dest / _safe(name, dest / MANIFEST)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return check_folder(dest)


def bundle_id(bundle: Bundle) -> str:
    """A content hash of the bundle (its store folder name)."""
    h = hashlib.sha256()
    for name, data in sorted(bundle.files.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]
