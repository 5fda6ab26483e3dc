"""Import torchvision beside a CPU-only torch.

Why: the torchvision wheel whose version matches our torch is built against the CUDA torch and
registers its C++ operators (``torchvision::nms`` ...) from a native library that fails to load
beside the CPU torch.  Its Python code then registers fake (meta) kernels for ``nms``/``qnms``,
which raises because the operator schemas were never defined.  The model zoo needs none of those
operators, so defining their schemas ourselves (the same signatures torchvision declares) lets
``import torchvision`` succeed; calling the ops would still fail, loudly.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import torch

_LIBRARY: torch.library.Library | None = None


def import_torchvision() -> ModuleType:
    """``torchvision``, imported once with the schemas its import needs defined first."""
    global _LIBRARY
    if _LIBRARY is None:
        try:
            torch.ops.torchvision.nms.default  # noqa: B018 - the real native library is loaded
        except (AttributeError, RuntimeError):
            _LIBRARY = torch.library.Library("torchvision", "DEF")
            _LIBRARY.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _LIBRARY.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
    return importlib.import_module("torchvision")
