"""Bitstream folders as deploy bundles: the manifest's hashes guard every file on the way to a board."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vdla.runtime.pool.bundle import (
    Bundle,
    board_key,
    bundle_id,
    check_board,
    read_bundle,
    unpack_bundle,
)
from vdla_hw.config import load_config
from vdla_hw.errors import BadFileError, UsageError
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import MANIFEST_NAME as MANIFEST
from vdla_hw.fpga.manifest import read_manifest, write_manifest


def make_folder(folder: Path, board: str = "pynq-z2", config: str = "tiny") -> Path:
    """A folder shaped like the output of vdla fpga build after its tools ran: config, bit, hwh, manifest."""
    files = {"bit": ("out/vdla.bit", bytes(range(256)) * 64), "hwh": ("out/vdla.hwh", b"<hwh/>")}
    for rel, data in files.values():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / "src").mkdir()
    (folder / "src" / "big_source.sv").write_text("// a board needs no sources\n")
    write_manifest(folder, get_board(board), load_config(config), 0x1234,
                   {role: folder / rel for role, (rel, _) in files.items()})
    return folder


def test_read_unpack_round_trip(tmp_path: Path) -> None:
    bundle = read_bundle(make_folder(tmp_path / "a"))
    assert set(bundle.files) == {MANIFEST, "config.json", "out/vdla.bit", "out/vdla.hwh"}  # no sources
    manifest, cfg = unpack_bundle(bundle, tmp_path / "b")
    assert manifest.board == "pynq-z2" and cfg.digest == load_config("tiny").digest
    again = read_bundle(tmp_path / "b")
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
    with pytest.raises(BadFileError, match=r"out/vdla.bit is not the bit file bitstream.json describes"):
        read_bundle(folder)
    bit.unlink()
    with pytest.raises(BadFileError, match=r"the bit file .*out/vdla.bit .* is missing"):
        read_bundle(folder)


def test_config_that_is_not_the_manifests_is_refused(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    (folder / "config.json").write_text(load_config("default").to_json())
    with pytest.raises(BadFileError, match="names config 'tiny' with digest"):
        read_bundle(folder)


def test_tampered_bundle_is_refused_where_it_is_unpacked(tmp_path: Path) -> None:
    """What a worker checks again: bytes changed after the client's check."""
    bundle = read_bundle(make_folder(tmp_path / "a"))
    files = {**bundle.files, "out/vdla.hwh": b"<hwh tampered/>"}
    with pytest.raises(BadFileError, match="is not the hwh file"):
        unpack_bundle(Bundle(bundle.source, files), tmp_path / "b")


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.pop("board"), "lacks a valid field"),
    (lambda m: m.update(format="other/9"), "has format 'other/9'"),
    (lambda m: m.update(files={"bit": "../../etc/passwd"}), "outside its folder"),
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
    manifest = read_manifest(folder)
    check_board(manifest, "pynq_z2", str(folder))
    with pytest.raises(UsageError, match="for board 'pynq-z2', not 'zcu104'"):
        check_board(manifest, "zcu104", str(folder))
