"""A bitstream folder as bytes: what ``vdla fpga deploy`` ships to a board worker.

A folder written by ``vdla fpga build`` holds a ``bitstream.json`` manifest
(:mod:`vdla_hw.fpga.manifest`: board, config name and digest, build id, the produced files by role --
``bit``, ``hwh`` -- and their SHA-256) and the ``config.json`` the hardware was generated for. :func:`read_bundle` checks the folder and packs
exactly those files into a :class:`Bundle` (a Vivado project folder also holds sources, reports and
the project, which a board does not need). :func:`unpack_bundle` writes a bundle into a new folder
and checks it there again, so a file changed in transit never reaches a board.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vdla_hw.config import HwConfig
from vdla_hw.errors import BadFileError, UsageError
from vdla_hw.fpga.manifest import (
    CONFIG_FILE,
    MANIFEST_NAME,
    Manifest,
    check_files,
    manifest_config,
    read_manifest,
)


@dataclass(frozen=True)
class Bundle:
    """A bitstream folder in memory: relative path -> bytes (the manifest and config included)."""

    source: str
    """Where it was read (for messages)."""
    files: dict[str, bytes]


def board_key(board: str) -> str:
    """The spelling of a board name inside device kinds (``pynq-z2`` -> ``pynq_z2``)."""
    return board.strip().lower().replace("-", "_")


def _safe(name: str, where: Path) -> str:
    # Paths come from a manifest that may travel between machines: keep them inside the folder.
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadFileError(f"{where} names the file {name!r}, which is outside its folder",
                           hint="rebuild the folder with vdla fpga build")
    return path.as_posix()


def check_folder(folder: Path) -> tuple[Manifest, HwConfig]:
    """Check ``folder``: its manifest, every file against its SHA-256, its config against the digest."""
    manifest = read_manifest(folder)
    for rel in manifest.files.values():
        _safe(rel, folder / MANIFEST_NAME)
    check_files(folder, manifest)
    return manifest, manifest_config(folder, manifest)


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
    names = {MANIFEST_NAME, *manifest.files.values()}
    if (folder / CONFIG_FILE).is_file():
        names.add(CONFIG_FILE)
    return Bundle(str(folder), {name: (folder / name).read_bytes() for name in sorted(names)})


def unpack_bundle(bundle: Bundle, dest: Path) -> tuple[Manifest, HwConfig]:
    """Write ``bundle`` into the new folder ``dest`` and check it there (see :func:`check_folder`)."""
    if MANIFEST_NAME not in bundle.files:
        raise BadFileError(f"the bundle from {bundle.source} has no {MANIFEST_NAME}",
                           hint="send a folder written by vdla fpga build")
    for name, data in bundle.files.items():
        target = dest / _safe(name, dest / MANIFEST_NAME)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return check_folder(dest)


def bundle_id(bundle: Bundle) -> str:
    """A content hash of the bundle (its store folder name)."""
    h = hashlib.sha256()
    for name, data in sorted(bundle.files.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]
