"""VDLA: compile PyTorch and ONNX models for this CPU or the VDLA accelerator, and run them.

>>> import vdla
>>> mod = vdla.compile("model.onnx", target="llvm")                 # or a torch.nn.Module + example_inputs
>>> y, = mod.run(x)
>>> mod.export("model.vdla"); m = vdla.load("model.vdla")           # the runtime alone loads it
>>> m = torch.compile(model, backend="vdla")                        # registered when torch is imported first

Everything loads lazily: ``import vdla`` imports neither the compiler nor torch, so a board that
runs only ``vdla.load`` never imports the compiler. Names (see docs/api.md):

============================  ===============================================================
``compile``, ``from_torch``,  the compiler: a model to a :class:`Module` / to the graph IR
``from_onnx``, ``tune``
``load``, ``run``             the runtime: a module file; one VDLA program on a backend
``hw_config``, ``HwConfig``   the hardware parameters (presets by name, or a JSON file)
``assemble``,                 the assembler of VDLA programs (text <-> instructions)
``disassemble``
``fsim``, ``cycle_sim``       the functional and cycle-level simulators
``timeline``, ``pareto``      a program's cycle-model Gantt chart; a DSE sweep's Pareto panels
                              (matplotlib figures)
``backends``                  the names of the run backends (fsim, cycle, rtl, ...)
``tiled_gemm_program``        a ready-made int8 GEMM program and its expected output
============================  ===============================================================
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import Any

__version__ = "0.1.0"

#: The repository's top-level packages that live in the ``vdla`` namespace (``vdla.compiler``, ...).
NAMESPACED = ("compiler", "runtime", "simulator", "fuzz", "fpga_scripts")


class SourceTreeFinder(importlib.abc.MetaPathFinder):
    """``vdla.compiler`` -> ``<repo>/compiler`` when running from a source checkout (``PYTHONPATH=repo``).

    An installed wheel holds ``vdla/compiler/`` itself (setup.py's ``package_dir``); in the repository
    the folders stay at the top level, so this maps their names the same way."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        head, _, name = fullname.partition(".")
        if head != __name__ or name not in NAMESPACED:
            return None
        folder = self.root / name
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


_ROOT = Path(__file__).resolve().parent.parent
if not (Path(__file__).parent / "compiler").is_dir() and (_ROOT / "compiler" / "__init__.py").is_file() \
        and not any(isinstance(f, SourceTreeFinder) for f in sys.meta_path):
    # First, not last: an editable install's finder (setuptools) also maps ``vdla.compiler``, to the
    # checkout it was installed from; the tree whose ``vdla/`` was imported must win over it.
    sys.meta_path.insert(0, SourceTreeFinder(_ROOT))

# Public name -> (module, attribute) under this package, imported on first use (PEP 562).
_LAZY = {
    "compile": ("vdla.api", "compile"),
    "load": ("vdla.api", "load"),
    "run": ("vdla.api", "run"),
    "tune": ("vdla.api", "tune"),
    "from_torch": ("vdla.api", "from_torch"),
    "from_onnx": ("vdla.api", "from_onnx"),
    "Module": ("vdla.api", "Module"),
    "hw_config": ("vdla.api", "hw_config"),
    "HwConfig": ("vdla_hw.config", "HwConfig"),
    "presets": ("vdla_hw.config", "preset_names"),
    "assemble": ("vdla.api", "assemble"),
    "disassemble": ("vdla_hw.asm", "disassemble"),
    "fsim": ("vdla.api", "fsim"),
    "cycle_sim": ("vdla.api", "cycle_sim"),
    "backends": ("vdla.api", "backends"),
    "timeline": ("vdla.api", "timeline"),
    "tiled_gemm_program": ("vdla.runtime.workloads", "tiled_gemm_program"),
    "pareto": ("vdla.api", "pareto"),
    "register_torch_backend": ("vdla.api", "register_torch_backend"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'vdla' has no attribute {name!r}; the public names are {__all__}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if "torch" in sys.modules:  # torch.compile(backend="vdla") works right after `import torch, vdla`
    from vdla.api import register_torch_backend

    register_torch_backend()
