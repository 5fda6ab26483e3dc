"""A bitstream folder as bytes: what ``vdla fpga deploy`` ships to a board worker.

A folder written by ``vdla fpga build`` holds a ``bitstream.json`` manifest naming the board, the
config (name and digest), the build id and the SHA-256 of every file that makes the bitstream.
:func:`read_bundle` packs the manifest and those files (plus the folder's ``config.json``) into a
:class:`Bundle`; :func:`verify_bundle` checks every file against its hash -- on the client before
sending, and again on the worker before anything is written -- so a tampered or half-copied folder
never reaches a board.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from vdla_hw.errors import BadFileError, UsageError

MANIFEST = "bitstream.json"
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Manifest:
    """The fields of ``bitstream.json`` a deploy relies on."""

    board: str
    config_name: str
    config_digest: str
    build_id: int
    sha256: dict[str, str]
    """Relative file path -> its hex SHA-256; every file of the bitstream."""


@dataclass(frozen=True)
class Bundle:
    """A bitstream folder in memory: the manifest's text and the bytes of the files it covers."""

    source: str
    """Where it was read (for messages)."""
    manifest_text: str
    files: dict[str, bytes]

    @property
    def size(self) -> int:
        return len(self.manifest_text) + sum(len(b) for b in self.files.values())


def board_key(board: str) -> str:
    """The spelling of a board name inside device kinds (``pynq-z2`` -> ``pynq_z2``)."""
    return board.strip().lower().replace("-", "_")


def _safe(name: str, source: str) -> str:
    # Names come from a manifest that may travel between machines: keep them inside the folder.
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadFileError(f"{source}/{MANIFEST} names the file {name!r}, which is outside the folder",
                           hint="rebuild the folder with vdla fpga build")
    return path.as_posix()


def parse_manifest(text: str, source: str) -> Manifest:
    """Parse and validate a manifest's JSON (``source`` names the folder in messages)."""
    where = f"{source}/{MANIFEST}"
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadFileError(f"{where} is not valid JSON ({exc})",
                           hint="rebuild the folder with vdla fpga build") from None
    try:
        hashes = raw["sha256"]
        manifest = Manifest(board=str(raw["board"]), config_name=str(raw["config"]),
                            config_digest=str(raw["config_digest"]), build_id=int(raw["build_id"]),
                            sha256={_safe(k, source): str(v).lower() for k, v in hashes.items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadFileError(f"{where} lacks a valid field ({exc!r}); it needs board, config, config_digest, build_id "
                           "and sha256", hint="rebuild the folder with vdla fpga build") from None
    if not manifest.sha256:
        raise BadFileError(f"{where} lists no files: the folder holds no bitstream",
                           hint="run the board's tools (vdla fpga build without --no-run) before deploying")
    return manifest


def read_bundle(folder: str | Path) -> Bundle:
    """Read a bitstream folder: its manifest, every file the manifest hashes, and ``config.json``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadFileError(f"bitstream folder {folder} does not exist",
                           hint="pass the folder vdla fpga build wrote (-o DIR)")
    path = folder / MANIFEST
    if not path.is_file():
        raise BadFileError(f"{folder} has no {MANIFEST}: it is not a bitstream folder written by vdla fpga build",
                           hint="build one with `vdla fpga build --board B --config C -o DIR` and deploy DIR")
    text = path.read_text()
    manifest = parse_manifest(text, str(folder))
    names = set(manifest.sha256)
    if (folder / CONFIG_FILE).is_file():
        names.add(CONFIG_FILE)
    files: dict[str, bytes] = {}
    for name in sorted(names):
        try:
            files[name] = (folder / name).read_bytes()
        except FileNotFoundError:
            raise BadFileError(f"{folder}/{name} is missing, but {MANIFEST} lists it",
                               hint="copy the whole folder vdla fpga build wrote") from None
    bundle = Bundle(str(folder), text, files)
    verify_bundle(bundle)
    return bundle


def verify_bundle(bundle: Bundle) -> Manifest:
    """Check every file of ``bundle`` against the manifest's SHA-256; returns the manifest."""
    manifest = parse_manifest(bundle.manifest_text, bundle.source)
    for name, want in sorted(manifest.sha256.items()):
        data = bundle.files.get(name)
        if data is None:
            raise BadFileError(f"{bundle.source}/{name} is missing, but {MANIFEST} lists it",
                               hint="copy the whole folder vdla fpga build wrote")
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise BadFileError(f"{bundle.source}/{name} does not match its manifest: SHA-256 {got[:16]}..., "
                               f"{MANIFEST} says {want[:16]}...",
                               hint="the file was changed or copied incompletely; copy it again or rebuild the "
                                    "folder with vdla fpga build")
    return manifest


def check_board(manifest: Manifest, board: str, source: str) -> None:
    """Raise a :class:`UsageError` when the bitstream was built for another board than ``board``."""
    if board_key(manifest.board) != board_key(board):
        raise UsageError(f"{source} holds a bitstream for board {manifest.board!r}, not {board!r}",
                         hint=f"deploy it with --board {manifest.board}, or build one for {board}")


def write_bundle(bundle: Bundle, dest: Path) -> Path:
    """Write ``bundle`` (verified) into the new folder ``dest``; returns it."""
    verify_bundle(bundle)
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in bundle.files.items():
        target = dest / _safe(name, bundle.source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (dest / MANIFEST).write_text(bundle.manifest_text)
    return dest


def bundle_id(bundle: Bundle) -> str:
    """A content hash of the bundle's manifest (which hashes every file): its store folder name."""
    return hashlib.sha256(bundle.manifest_text.encode()).hexdigest()[:16]
