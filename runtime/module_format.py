"""The deployable model file (``.vdla``): one zip archive a runtime-only machine can run.

Members:

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
        "output": {"buffer": str, "shape": [int], "perm": [int] | null}}]}

``perm`` re-orders a value's axes before it is reshaped into the program buffer (input),
or after the buffer is read back in ``shape`` (output: the inverse permutation).
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from vdla_hw.errors import BadFileError

FORMAT = "vdla-model"
VERSION = 1
GRAPH_MEMBER = "graph.json"
PARAMS_MEMBER = "params.npz"
KERNELS_MEMBER = "kernels.so"


class ModuleFormatError(BadFileError):
    """A model file is missing, malformed, or written by an incompatible version."""


@dataclass(frozen=True)
class ModuleParts:
    """The members of a model file: the description and parameters in memory, the rest as files."""

    graph: dict[str, Any]
    params: Mapping[str, np.ndarray]
    library: Path | None
    programs: Mapping[str, Path]


def write_module(path: str | Path, graph: Mapping[str, Any], params: Mapping[str, np.ndarray],
                 library: str | Path | None, programs: Mapping[str, str | Path]) -> Path:
    """Write one model file; ``programs`` maps member names (``vdla/<n>.vdlaprog``) to bundle files."""
    path = Path(path)
    uses_library = any(n["device"] == "cpu" for n in graph["nodes"])
    if uses_library and library is None:
        raise ModuleFormatError("the graph has CPU nodes but no kernel library was given")
    buf = io.BytesIO()
    np.savez(buf, **{k: np.array(v, order="C") for k, v in params.items()})
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(GRAPH_MEMBER, json.dumps(graph, indent=1))
        zf.writestr(PARAMS_MEMBER, buf.getvalue())
        if uses_library:
            zf.write(library, KERNELS_MEMBER)  # type: ignore[arg-type]
        for member, file in programs.items():
            zf.write(file, member)
    return path


def read_module(path: str | Path, workdir: str | Path) -> ModuleParts:
    """Read a model file; the kernel library and the program bundles are extracted into ``workdir``."""
    path = Path(path)
    if not path.is_file():
        raise ModuleFormatError(f"no such model file: {path}")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ModuleFormatError(f"{path} is not a VDLA model file (not a zip archive); "
                                f"write one with `vdla compile` or CompiledModule.export") from None
    with zf:
        names = set(zf.namelist())
        for member in (GRAPH_MEMBER, PARAMS_MEMBER):
            if member not in names:
                raise ModuleFormatError(f"{path} has no {member}: not a VDLA model file")
        graph = json.loads(zf.read(GRAPH_MEMBER))
        if graph.get("format") != FORMAT or graph.get("version") != VERSION:
            raise ModuleFormatError(f"{path}: format {graph.get('format')!r} v{graph.get('version')} is not "
                                    f"{FORMAT} v{VERSION}; recompile the model with this version")
        with np.load(io.BytesIO(zf.read(PARAMS_MEMBER)), allow_pickle=False) as npz:
            params = {k: np.array(npz[k]) for k in npz.files}
        library = None
        if KERNELS_MEMBER in names:
            library = Path(zf.extract(KERNELS_MEMBER, workdir))
        missing = [n["program"] for n in graph["nodes"] if n["device"] == "vdla" and n["program"] not in names]
        if missing:
            raise ModuleFormatError(f"{path} lacks the VDLA programs {missing}; the file is truncated")
        programs = {n["program"]: Path(zf.extract(n["program"], workdir))
                    for n in graph["nodes"] if n["device"] == "vdla"}
    return ModuleParts(graph, params, library, programs)


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    """A private directory for the extracted kernel library (removed with the module)."""
    return tempfile.TemporaryDirectory(prefix="vdla_model_")
