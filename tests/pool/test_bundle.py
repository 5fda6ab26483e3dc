"""Bitstream folders as deploy bundles: the manifest's hashes guard every file on the way to a board."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runtime.pool.bundle import (
    MANIFEST,
    Bundle,
    board_key,
    bundle_id,
    check_board,
    read_bundle,
    verify_bundle,
    write_bundle,
)
from vdla_hw.config import load_config
from vdla_hw.errors import BadFileError, UsageError


def make_folder(folder: Path, board: str = "pynq-z2", config: str = "tiny") -> Path:
    """A folder shaped like vdla fpga build's: config.json, two output files and their manifest."""
    cfg = load_config(config)
    files = {"out/vdla.bit": bytes(range(256)) * 64, "out/vdla.hwh": b"<hwh/>"}
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "config.json").write_text(cfg.to_json() + "\n")
    manifest = {"format": 1, "board": board, "config": cfg.name, "config_digest": cfg.digest, "build_id": 0x1234,
                "files": {"bit": "out/vdla.bit", "hwh": "out/vdla.hwh"},
                "sha256": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return folder


def test_read_verify_write_round_trip(tmp_path: Path) -> None:
    bundle = read_bundle(make_folder(tmp_path / "a"))
    manifest = verify_bundle(bundle)
    assert manifest.board == "pynq-z2" and manifest.config_digest == load_config("tiny").digest
    assert set(bundle.files) == {"out/vdla.bit", "out/vdla.hwh", "config.json"}
    out = write_bundle(bundle, tmp_path / "b")
    again = read_bundle(out)
    assert again.files == bundle.files and bundle_id(again) == bundle_id(bundle)


def test_folder_without_manifest_is_refused(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    (folder / MANIFEST).unlink()
    with pytest.raises(BadFileError, match="has no bitstream.json") as err:
        read_bundle(folder)
    assert "vdla fpga build" in err.value.hint
    with pytest.raises(BadFileError, match="does not exist"):
        read_bundle(tmp_path / "nowhere")


def test_changed_or_missing_file_is_refused(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    bit = folder / "out/vdla.bit"
    data = bytearray(bit.read_bytes())
    data[100] ^= 1
    bit.write_bytes(bytes(data))
    with pytest.raises(BadFileError, match=r"out/vdla.bit does not match its manifest"):
        read_bundle(folder)
    bit.unlink()
    with pytest.raises(BadFileError, match=r"out/vdla.bit is missing"):
        read_bundle(folder)


def test_tampered_bundle_in_memory_is_refused(tmp_path: Path) -> None:
    """What a worker checks again: bytes changed after the client's check."""
    bundle = read_bundle(make_folder(tmp_path))
    files = dict(bundle.files)
    files["out/vdla.hwh"] = b"<hwh tampered/>"
    with pytest.raises(BadFileError, match="does not match"):
        verify_bundle(Bundle(bundle.source, bundle.manifest_text, files))


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.pop("sha256"), "lacks a valid field"),
    (lambda m: m.update(sha256={}), "lists no files"),
    (lambda m: m.update(sha256={"../../etc/passwd": "00"}), "outside the folder"),
    (lambda m: m.update(build_id="x"), "lacks a valid field"),
])
def test_bad_manifest_is_refused(tmp_path: Path, edit, match: str) -> None:
    folder = make_folder(tmp_path)
    manifest = json.loads((folder / MANIFEST).read_text())
    edit(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BadFileError, match=match):
        read_bundle(folder)


def test_bitstream_for_another_board_is_refused(tmp_path: Path) -> None:
    assert board_key("PYNQ-Z2") == board_key("pynq_z2") == "pynq_z2"
    folder = make_folder(tmp_path, board="pynq-z2")
    manifest = verify_bundle(read_bundle(folder))
    check_board(manifest, "pynq_z2", str(folder))
    with pytest.raises(UsageError, match="for board 'pynq-z2', not 'zcu104'"):
        check_board(manifest, "zcu104", str(folder))
