"""The deployable model file (``.vdla``): one zip archive a runtime-only machine can run.

Members:

- ``manifest.json``: ``{"format": "vdla-module", "version": 4, "config": {"name", "digest"} | null,
  "kernels": {"arch", "triple", "cpu", "features"} | null,
  "members": {member: {"bytes": int, "sha256": hex}}}``, the hardware config the module was
  compiled for, the CPU its kernel library was compiled for (``aarch64`` / ``cortex-a53`` for an
  Ultra96-V2's kernels: a workstation can tell where a module runs without loading it) and a
  checksum of every other member; :func:`read_module` refuses a module
  whose members do not match it (a truncated, damaged or swapped-in member);
- ``graph.json``: the graph description (below);
- ``params.npz``: the kernels' constant arguments (weights, biases, re-laid-out constants);
- ``kernels.so``: the CPU kernels, a shared library written by the LLVM backend (it records
  the CPU and features it was compiled for; absent when no kernel runs on the CPU);
- ``vdla/<n>.vdlaprog``: one VDLA program bundle per VDLA node (``Program.save``), with its
  weights already in DRAM; the runtime re-binds the node's input for every run.

``graph.json``::

    {"format": "vdla-model", "version": 1, "name": str, "target": "llvm" | "vdla",
     "config": HwConfig dict or null,
     "inputs": [{"name", "shape", "dtype"}],
     "outputs": [{"value": name} | {"name": name, "param": key}],   # a constant output is a param
     "values": {name: {"shape", "dtype"}},                 # every value a node produces
     "arena": {"bytes": int, "offsets": {name: byte offset}},   # static memory plan
     "nodes": [                                            # in execution order
       {"name", "device": "cpu", "function": str, "ops": [str],
        "args": [{"value": name} | {"param": key}]},       # then the output, last
       {"name", "device": "vdla", "program": member, "ops": [str], "macs": int,
        "input": {"value": name, "buffer": str, "perm": [int] | null},
        "more_inputs": [{"value": name, "buffer": str, "perm": null}],   # optional: a residual add's 2nd operand
        "output": {"buffer": str, "shape": [int], "perm": [int] | null}},
       {"name", "device": "placed", "ops": ["concatenate"], "inputs": [name], "axis": int}],  # no work: the
                                                           # arena plan puts its operands in its buffer
     "partition": [{"name", "device", "ops": [str], "anchor": str | null,   # target vdla only
                    "reason": str | null}],                 # see vdla.runtime.partition_report
     "quantization": {"calibration": str, "per_channel": bool,    # target vdla only: per-layer SQNR,
                      "sqnr": [{"name", "op", "sqnr_db", "scale", "multiplier_bits"}]}}   # worst first

``perm`` re-orders a value's axes before it is reshaped into the program buffer (input),
or after the buffer is read back in ``shape`` (output: the inverse permutation).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vdla.runtime.file_checks import (check_elf, open_zip, parse_json, read_bytes, read_member, sha256_hex,
                                 wrong_kind)
from vdla.runtime.cpu_module import embedded_meta, triple_arch
from vdla.runtime.program import Program, check_config
from vdla_hw.config import HwConfig, from_dict
from vdla_hw.errors import BadConfigError, BadFileError

FORMAT = "vdla-model"
VERSION = 1
MANIFEST_FORMAT = "vdla-module"
MANIFEST_VERSION = 4
"""4: the VDLA programs inside are program bundles v4 (the LOAD element stride); 3: the GEMM overwrite bit and
the STORE bias."""
MANIFEST_MEMBER = "manifest.json"
GRAPH_MEMBER = "graph.json"
PARAMS_MEMBER = "params.npz"
KERNELS_MEMBER = "kernels.so"
_WHAT = "a VDLA model file (.vdla)"
_HINT = "write one with `vdla compile` or CompiledModule.export"


class ModuleFormatError(BadFileError):
    """A model file is missing, malformed, or written by an incompatible version."""


@dataclass(frozen=True)
class ModuleParts:
    """The members of a model file, checked: the description and parameters parsed, the kernel
    library and the program bundles as the bytes the manifest vouches for."""

    graph: dict[str, Any]
    params: Mapping[str, np.ndarray]
    library: bytes | None
    programs: Mapping[str, bytes]
    config: HwConfig | None
    kernels: Mapping[str, Any] | None = None
    """The kernel library's target as the manifest records it (arch, triple, cpu, features), or None."""


def write_module(path: str | Path, graph: Mapping[str, Any], params: Mapping[str, np.ndarray],
                 library: bytes | None, programs: Mapping[str, bytes]) -> Path:
    """Write one model file; ``programs`` maps member names (``vdla/<n>.vdlaprog``) to bundle bytes."""
    path = Path(path)
    uses_library = any(n["device"] == "cpu" for n in graph["nodes"])
    if uses_library and library is None:
        raise ModuleFormatError("the graph has CPU nodes but no kernel library was given")
    buf = io.BytesIO()
    np.savez(buf, **{k: np.array(v, order="C") for k, v in params.items()})
    members = {GRAPH_MEMBER: json.dumps(graph, indent=1).encode(), PARAMS_MEMBER: buf.getvalue()}
    if uses_library:
        members[KERNELS_MEMBER] = library  # type: ignore[assignment]
    members.update(programs)
    config = from_dict(graph["config"]) if graph.get("config") else None
    manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION,
                "config": None if config is None else {"name": config.name, "digest": config.digest},
                "kernels": kernels_target(library) if uses_library else None,
                "members": {m: {"bytes": len(b), "sha256": sha256_hex(b)} for m, b in members.items()}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST_MEMBER, json.dumps(manifest, indent=1))
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def kernels_target(library: bytes | None) -> dict[str, Any] | None:
    """``{"arch", "triple", "cpu", "features"}`` of a kernel library, read from its bytes (not loaded)."""
    if library is None:
        return None
    meta = embedded_meta(library)
    if meta is None:
        raise ModuleFormatError("the kernel library has no vdla_module_meta: it was not written by the LLVM backend")
    target = meta["target"]
    return {"arch": triple_arch(target["triple"]), "triple": target["triple"], "cpu": target["cpu"],
            "features": list(target["features"])}


def _member_config(member: str, data: bytes, path: Path) -> HwConfig | None:
    """The hardware config a graph description or program bundle says it was compiled for."""
    if member == GRAPH_MEMBER:
        graph = parse_json(data, f"{path}:{member}")
        return from_dict(graph["config"]) if isinstance(graph, dict) and graph.get("config") else None
    return Program.from_bytes(data, f"{path}:{member}").config


def _verified_member(zf: zipfile.ZipFile, member: str, manifest: Mapping[str, Any], path: Path,
                     config: HwConfig | None) -> bytes:
    """A member whose size and SHA-256 match the manifest; a member made for another config (swapped
    in from another module) is named as such rather than only as a checksum failure."""
    entry = manifest["members"].get(member)
    if entry is None:
        raise ModuleFormatError(f"{path}: member {member!r} is not listed in its manifest", hint=_HINT)
    data = read_member(zf, member, path)
    if len(data) == entry["bytes"] and sha256_hex(data) == entry["sha256"]:
        return data
    if config is not None and (member == GRAPH_MEMBER or member.endswith(".vdlaprog")):
        try:
            found = _member_config(member, data, path)
        except (BadFileError, BadConfigError):
            found = None  # damaged, not foreign: the checksum error below says so
        if found is not None and found.digest != config.digest:
            raise ModuleFormatError(f"{path}: member {member} was compiled for hardware config {found.label()}, "
                                    f"but the module is for {config.label()}: it was swapped in from another "
                                    f"module", hint="recompile the model; do not mix members of modules")
    raise ModuleFormatError(f"{path}: member {member} fails its checksum ({len(data)} bytes, the manifest says "
                            f"{entry['bytes']}): it was damaged or replaced after the module was written",
                            hint="compile or copy the module again")


def read_module(path: str | Path, config: HwConfig | None = None) -> ModuleParts:
    """Read and check a model file; with ``config``, refuse a module compiled for another config.

    Every member is checked against the manifest before it is used, so a truncated or damaged
    kernel library is refused here and never reaches the dynamic loader.
    """
    path = Path(path)
    try:
        data = read_bytes(path, _WHAT)
        archive = open_zip(path, data, _WHAT, _HINT)
    except BadFileError as exc:
        raise ModuleFormatError(str(exc), hint=exc.hint) from None
    with archive as zf:
        names = set(zf.namelist())
        if MANIFEST_MEMBER not in names:
            if GRAPH_MEMBER in names:
                raise ModuleFormatError(f"{path} is a model file of an older format (no {MANIFEST_MEMBER})",
                                        hint="recompile the model with this version of vdla")
            raise wrong_kind(path, data, _WHAT, _HINT)
        manifest = parse_json(read_member(zf, MANIFEST_MEMBER, path), f"{path}:{MANIFEST_MEMBER}")
        if (not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT
                or manifest.get("version") != MANIFEST_VERSION or not isinstance(manifest.get("members"), dict)
                or "config" not in manifest):
            version = manifest.get("version") if isinstance(manifest, dict) else None
            raise ModuleFormatError(f"{path}: manifest of format {MANIFEST_FORMAT} v{version} is not v"
                                    f"{MANIFEST_VERSION}", hint="recompile the model with this version of vdla")
        missing = sorted(set(manifest["members"]) - names)
        if missing:
            raise ModuleFormatError(f"{path} lacks the members {missing} its manifest lists: the file is truncated",
                                    hint="compile or copy the module again")
        module_config = None
        if manifest["config"] is not None:
            try:
                graph_config = _member_config(GRAPH_MEMBER, read_member(zf, GRAPH_MEMBER, path), path)
            except (BadFileError, BadConfigError):
                _verified_member(zf, GRAPH_MEMBER, manifest, path, None)  # a damaged member: say so
                raise
            # The manifest names the config by digest; the graph carries it in full.
            if graph_config is None or graph_config.digest != manifest["config"]["digest"]:
                found = "no config" if graph_config is None else f"config {graph_config.label()}"
                raise ModuleFormatError(
                    f"{path}: member {GRAPH_MEMBER} was compiled for {found}, but the module is for "
                    f"{manifest['config']['name']!r} ({manifest['config']['digest']}): it was swapped in from "
                    f"another module", hint="recompile the model; do not mix members of modules")
            module_config = graph_config
        if config is not None:
            if module_config is None:
                raise ModuleFormatError(f"{path} runs only on the CPU; it was compiled for no VDLA config, but "
                                        f"{config.label()} was asked for")
            check_config(module_config, config, str(path))
        graph = parse_json(_verified_member(zf, GRAPH_MEMBER, manifest, path, module_config), f"{path}:graph.json")
        if graph.get("format") != FORMAT or graph.get("version") != VERSION:
            raise ModuleFormatError(f"{path}: format {graph.get('format')!r} v{graph.get('version')} is not "
                                    f"{FORMAT} v{VERSION}; recompile the model with this version")
        params_data = _verified_member(zf, PARAMS_MEMBER, manifest, path, module_config)
        with np.load(io.BytesIO(params_data), allow_pickle=False) as npz:
            params = {k: np.array(npz[k]) for k in npz.files}
        library = None
        if any(n["device"] == "cpu" for n in graph["nodes"]):
            library = _verified_member(zf, KERNELS_MEMBER, manifest, path, module_config)
            check_elf(f"{path}:{KERNELS_MEMBER}", library)
        programs = {n["program"]: _verified_member(zf, n["program"], manifest, path, module_config)
                    for n in graph["nodes"] if n["device"] == "vdla"}
    kernels = manifest.get("kernels") or kernels_target(library)
    return ModuleParts(graph, params, library, programs, module_config, kernels)
