"""The files the README's tour uses, shipped with the package and written out by ``vdla example``.

* ``model.onnx``: a small CNN (two 3x3 convs and a dense layer) trained on scikit-learn's 8x8
  digits and exported by ``torch.onnx.export`` (``tests/graph/make_models.py`` regenerates it);
* ``samples.npz``: 16 training images, the calibration set of its int8 quantization
  (``vdla compile --calibrate``), under the model's input name ``x``;
* ``x.npy``: one held-out image (a "2") to run the compiled model on;
* ``prog.s``: a hand-written VDLA assembly program for the tiny preset, whose DRAM regions
  (micro-ops, inputs, weights, outputs) do not overlap;
* ``prog_inp.npy``, ``prog_wgt.npy``: its 4x4 int8 operands, for ``vdla sim prog.bin --dram``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from vdla_hw.errors import UsageError

EXAMPLES_DIR = Path(__file__).resolve().parent
MODEL_PATH = EXAMPLES_DIR / "digits_cnn.onnx"
"""The digits CNN, also the model the graph and end-to-end tests use."""
DIGITS_PATH = EXAMPLES_DIR / "digits.npz"
PROGRAM_PATH = EXAMPLES_DIR / "prog.s"

EXAMPLE_FILES: tuple[str, ...] = ("model.onnx", "samples.npz", "x.npy", "prog.s", "prog_inp.npy", "prog_wgt.npy")
"""The names :func:`write_example` writes, in order."""


def write_example(directory: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the tour's files (:data:`EXAMPLE_FILES`) into ``directory`` (created if needed).

    An existing file is never replaced unless ``overwrite``: the user may have edited it.
    """
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory", hint="name a new or existing folder")
    targets = [out / name for name in EXAMPLE_FILES]
    existing = [str(p) for p in targets if p.exists()]
    if existing and not overwrite:
        raise UsageError(f"{', '.join(existing)} already exist(s)", hint="pass --force to overwrite them")
    out.mkdir(parents=True, exist_ok=True)
    with np.load(DIGITS_PATH, allow_pickle=False) as digits:
        samples, x = digits["samples"], digits["x"]
    shutil.copyfile(MODEL_PATH, targets[0])
    np.savez(targets[1], x=samples)
    np.save(targets[2], x)
    shutil.copyfile(PROGRAM_PATH, targets[3])
    # Fixed operands with negative values, so relu(inp @ wgt.T) clips some outputs.
    operands = np.random.default_rng(2026).integers(-8, 8, size=(2, 4, 4), dtype=np.int8)
    np.save(targets[4], operands[0])
    np.save(targets[5], operands[1])
    return targets
