"""Regenerate the committed ONNX files the graph tests use (needs torch: ``pip install -e .[bench]``).

    python tests/graph/make_models.py

* ``compiler/examples/digits_cnn.onnx`` (:data:`DIGITS_MODEL`, shipped for ``vdla example``): :class:`DigitsCNN` trained on scikit-learn's digits (train split of
  :func:`digits_split`) in a few seconds on one CPU thread, exported with ``torch.onnx.export``.
* ``data/resnet18.onnx``: ResNet-18 exported with ``torch.onnx.export`` with its weights
  stripped (45 MB is too much to commit); :func:`fill_weights` gives it seeded random
  weights again, so the tests keep the exporter's graph exactly while staying torch-free.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from vdla.compiler.examples import MODEL_PATH as DIGITS_MODEL

DATA = Path(__file__).parent / "data"


def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): digits as float32 (N, 1, 8, 8) in [0, 1], a fixed 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    x_tr, x_te, y_tr, y_te = train_test_split(x, d.target, test_size=0.25, random_state=0, stratify=d.target)
    return x_tr, y_tr, x_te, y_te


def strip_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the data of its float initializers removed (names, types and shapes kept)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            continue  # shapes and other integer tensors are part of the graph's structure
        dims, dtype, name = list(t.dims), t.data_type, t.name
        t.Clear()
        t.name, t.data_type = name, dtype
        t.dims.extend(dims)
    return out


def fill_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """Seeded random initializers: He-normal for conv/dense weights (rank >= 2), small uniform biases."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        shape = tuple(t.dims)
        if t.data_type != onnx.TensorProto.FLOAT or t.raw_data or t.float_data:
            continue
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            value = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        else:
            value = rng.uniform(-0.1, 0.1, shape)
        t.raw_data = value.astype(np.float32).tobytes()
    return out


def resnet18_at(resolution: int) -> onnx.ModelProto:
    """The committed ResNet-18 with seeded weights, its input fixed to ``(1, 3, resolution, resolution)``
    and the stale 224-pixel shape annotations dropped (so onnxruntime infers them again)."""
    model = fill_weights(onnx.load(str(DATA / "resnet18.onnx")))
    for d, v in zip(model.graph.input[0].type.tensor_type.shape.dim, (1, 3, resolution, resolution)):
        d.dim_value = v
    del model.graph.value_info[:]
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    return model


def train_digits(epochs: int = 40, seed: int = 0):
    import torch
    from models import DigitsCNN

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    x_tr, y_tr, x_te, y_te = digits_split()
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    for _ in range(epochs):
        perm = torch.randperm(len(xt))
        for k in range(0, len(xt), 64):
            idx = perm[k:k + 64]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean()
    return model, float(acc)


def main() -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from models import export_onnx, resnet18

    DATA.mkdir(exist_ok=True)
    t0 = time.time()
    model, acc = train_digits()
    print(f"digits CNN trained in {time.time() - t0:.1f} s, held-out top-1 {acc:.4f}")
    export_onnx(model, torch.zeros(1, 1, 8, 8), DIGITS_MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        path = export_onnx(resnet18(), torch.zeros(1, 3, 224, 224), Path(tmp) / "resnet18.onnx")
        onnx.save(strip_weights(onnx.load(str(path))), str(DATA / "resnet18.onnx"))
    print(f"wrote {DIGITS_MODEL} and {DATA / 'resnet18.onnx'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
