"""Checks shared by every loader of a file the tools read (bundles, modules, arrays, libraries, ONNX).

Each loader reads the whole file first (they are small next to the work done with them), then
checks it before interpreting a byte: present and non-empty, the right kind (by its magic bytes,
so a ``.npy`` passed where a program is expected is named as a NumPy array), complete (a ZIP
archive whose directory was cut off, an ELF library whose segments run past its end), and, where
the format records one, its SHA-256. Every failure is a :class:`~vdla_hw.errors.BadFileError`
naming the file, what it is, and what was expected.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from vdla_hw.errors import BadFileError

ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"
ELF_MAGIC = b"\x7fELF"


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: str | Path, what: str) -> bytes:
    """The content of ``path``; a missing, unreadable-as-file or empty path is a :class:`BadFileError`."""
    path = Path(path)
    if not path.exists():
        raise BadFileError(f"{path} does not exist (expected {what})")
    if not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise BadFileError(f"{path} is {kind}, not {what}")
    data = path.read_bytes()
    if not data:
        raise BadFileError(f"{path} is empty (0 bytes), not {what}", hint="the file was cut off; write it again")
    return data


def _zip_names(data: bytes) -> list[str] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, EOFError):
        return None


def describe(data: bytes) -> str:
    """What ``data`` looks like, for a message: 'a NumPy array (.npy)', 'a VDLA module (.vdla)', ..."""
    if not data:
        return "empty (0 bytes)"
    if data.startswith(NPY_MAGIC):
        return "a NumPy array (.npy)"
    if data.startswith(ELF_MAGIC):
        return "an ELF binary (a shared library or program)"
    if data.startswith(ZIP_MAGIC):
        names = _zip_names(data)
        if names is None:
            return "a truncated or corrupt ZIP archive"
        if "graph.json" in names:
            return "a VDLA module (.vdla)"
        if {"dram.npy", "meta.npy"} <= set(names):
            return "a VDLA program bundle (.vdlaprog)"
        if names and all(n.endswith(".npy") for n in names):
            return f"a NumPy archive (.npz) of arrays {sorted(n[:-4] for n in names)}"
        return "a ZIP archive"
    head = data[:64].lstrip()
    if head.startswith((b"{", b"[")):
        return "a JSON text"
    sample = data[:4096]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of an unknown kind"
    # Binary words (an instruction image) are often valid UTF-8 too, but text has no control characters.
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return "binary data of an unknown kind"
    return "a text file"


def wrong_kind(path: str | Path, data: bytes, expected: str, hint: str | None = None) -> BadFileError:
    """The error for a file that is not ``expected``, naming what it is instead."""
    return BadFileError(f"{path} is {describe(data)}, not {expected}", hint=hint)


def open_zip(path: str | Path, data: bytes, expected: str, hint: str | None = None) -> zipfile.ZipFile:
    """``data`` (the content of ``path``) as an open ZIP archive, or a :class:`BadFileError` naming
    a foreign file as foreign and a cut-off archive as truncated."""
    if not data.startswith(ZIP_MAGIC):
        raise wrong_kind(path, data, expected, hint)
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, EOFError) as exc:
        raise BadFileError(f"{path} is truncated or corrupt: a ZIP archive of {len(data)} bytes whose directory "
                           f"cannot be read ({exc}); expected {expected}",
                           hint="the file was cut off while written or copied; write it again") from None


def read_member(zf: zipfile.ZipFile, name: str, path: str | Path) -> bytes:
    """Member ``name`` of an archive; a missing or damaged member is a :class:`BadFileError`."""
    try:
        return zf.read(name)
    except KeyError:
        raise BadFileError(f"{path} has no member {name!r} (members: {sorted(zf.namelist())})") from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise BadFileError(f"{path}: member {name!r} is corrupt ({exc})",
                           hint="the file was damaged after it was written; write it again") from None


def parse_json(data: bytes, origin: str) -> Any:
    """JSON text ``data``; anything else is a :class:`BadFileError` naming ``origin``."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadFileError(f"{origin} is not valid JSON ({exc}): truncated or not written by vdla") from None


def _parse_array(data: bytes, origin: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as exc:
        # NumPy says 'cannot reshape array of size ...' for a cut-off array, 'Object arrays cannot be
        # loaded ...' for a pickled one: both are a file we cannot use.
        raise BadFileError(f"{origin} is a damaged or unsupported .npy array ({exc})",
                           hint="a truncated file, or an object array; save a numeric array with np.save") from None
    except EOFError as exc:
        raise BadFileError(f"{origin} is a truncated .npy array ({exc})") from None


def load_npy(path: str | Path, what: str = "a NumPy array (.npy)") -> np.ndarray:
    """One array from a ``.npy`` file, checked: an ``.npz`` archive or any other file is refused by name."""
    data = read_bytes(path, what)
    if not data.startswith(NPY_MAGIC):
        raise wrong_kind(path, data, what, hint="save the array with np.save(path, x)")
    return _parse_array(data, str(path))


def load_arrays(path: str | Path, what: str = "a NumPy .npy or .npz file") -> np.ndarray | dict[str, np.ndarray]:
    """The array of a ``.npy`` file, or the arrays of an ``.npz`` archive by name, checked."""
    data = read_bytes(path, what)
    if data.startswith(NPY_MAGIC):
        return _parse_array(data, str(path))
    with open_zip(path, data, what, hint="save arrays with np.save or np.savez") as zf:
        names = zf.namelist()
        if not names or not all(n.endswith(".npy") for n in names):
            raise wrong_kind(path, data, what)
        return {n[:-4]: _parse_array(read_member(zf, n, path), f"{path}[{n[:-4]}]") for n in names}


#: ELF ``e_machine`` values of the architectures modules are built for.
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 40: "arm"}


def elf_machine(data: bytes) -> str:
    """The architecture an ELF file's header names (``x86_64``, ``aarch64``, ``arm``, or ``machine <n>``)."""
    if len(data) < 20 or not data.startswith(ELF_MAGIC):
        return "unknown"
    machine = struct.unpack_from("<H", data, 18)[0]
    return ELF_MACHINES.get(machine, f"machine {machine}")


def check_elf(path: str | Path, data: bytes) -> None:
    """Refuse a shared library that is not ELF or whose headers point past its end.

    The dynamic loader maps the segments the program headers name; a segment beyond the end of
    a truncated file would be mapped anyway and kill the process with SIGBUS when touched. So
    every header table and ``PT_LOAD`` segment must lie inside the file before it is loaded.
    Both ELF classes are read: 64-bit (x86-64, AArch64) and 32-bit (an ARMv7 board's library).
    """
    if not data.startswith(ELF_MAGIC):
        raise wrong_kind(path, data, "a shared library (ELF)")
    truncated = BadFileError(f"{path} is a truncated shared library ({len(data)} bytes; its headers describe "
                             f"more)", hint="the file was cut off; rebuild or copy it again")
    if len(data) < 52:
        raise truncated
    if data[5] != 1 or data[4] not in (1, 2):
        raise BadFileError(f"{path} is not a little-endian ELF library; build it for this machine")
    if data[4] == 2:
        if len(data) < 64:
            raise truncated
        phoff, shoff = struct.unpack_from("<QQ", data, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
        phdr = "<IIQQQQ"
    else:
        phoff, shoff = struct.unpack_from("<II", data, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 42)
        phdr = "<IIIII"
    if phoff + phnum * phentsize > len(data) or shoff + shnum * shentsize > len(data):
        raise truncated
    for k in range(phnum):
        fields = struct.unpack_from(phdr, data, phoff + k * phentsize)
        p_type, p_offset, p_filesz = (fields[0], fields[2], fields[5]) if data[4] == 2 else \
            (fields[0], fields[1], fields[4])
        if p_type == 1 and p_offset + p_filesz > len(data):  # PT_LOAD
            raise truncated


__all__ = ["check_elf", "describe", "elf_machine", "load_arrays", "load_npy", "open_zip", "parse_json", "read_bytes",
           "read_member", "sha256_hex", "wrong_kind"]
