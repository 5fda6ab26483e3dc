"""Train the MobileNetV2-style digits network and write the held-out split (regenerates the example files).

    python -m vdla.compiler.examples.train_digits_mobilenet        # ~5-10 min on one CPU thread

Writes ``digits_mobilenet.onnx`` (exported by ``torch.onnx.export``, input ``x`` of shape
(1, 1, 32, 32)) and ``digits_split.npz`` next to this file.  The data are scikit-learn's 8x8
digits (installed with the package, no download), split 75/25 with a fixed seed; the network sees
them upscaled to 32x32 by pixel repetition (:func:`upscale`).  ``digits_split.npz`` holds the
held-out images as uint8 0..16 (``x_test``, ``y_test``) and 64 training images (``x_calib``) for
int8 calibration -- a few kB instead of megabytes of float32.  Training is deterministic
(seeded, one thread); the script prints the held-out float top-1.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL_PATH = HERE / "digits_mobilenet.onnx"
SPLIT_PATH = HERE / "digits_split.npz"
SEED = 0


def upscale(x8: np.ndarray, size: int = 32) -> np.ndarray:
    """uint8 0..16 images (N, 8, 8) -> float32 (N, 1, size, size) in [0, 1], each pixel repeated."""
    k = size // x8.shape[-1]
    return np.kron(x8.astype(np.float32) / 16.0, np.ones((k, k), np.float32))[:, None]


def split() -> dict[str, np.ndarray]:
    """The fixed 75/25 split of scikit-learn's digits (uint8 images) plus 64 calibration images."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = d.images.astype(np.uint8)
    x_tr, x_te, y_tr, y_te = train_test_split(x, d.target, test_size=0.25, random_state=0, stratify=d.target)
    calib = np.random.default_rng(SEED).choice(len(x_tr), 64, replace=False)
    return {"x_train": x_tr, "y_train": y_tr.astype(np.int64), "x_test": x_te, "y_test": y_te.astype(np.int64),
            "x_calib": x_tr[np.sort(calib)]}


def build_model():  # type: ignore[no-untyped-def]
    """MobileNetV2 in miniature: a stem, inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1
    linear projection, a skip when shapes agree), a 1x1 head, global average pooling, a classifier."""
    import torch
    from torch import nn

    class Inverted(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            self.skip = stride == 1 and cin == cout
            self.body = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.body(x)
            return x + y if self.skip else y

    class MobileNetV2Digits(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
            cfg = [(16, 16, 1, 1), (16, 32, 2, 4), (32, 32, 1, 4), (32, 48, 2, 4), (48, 48, 1, 4),
                   (48, 64, 2, 4), (64, 64, 1, 4)]
            self.blocks = nn.Sequential(*[Inverted(*c) for c in cfg])
            self.head = nn.Sequential(nn.Conv2d(64, 256, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU6())
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(torch.flatten(self.pool(self.head(self.blocks(self.stem(x)))), 1))

    return MobileNetV2Digits()


def train(data: dict[str, np.ndarray], epochs: int = 30):  # type: ignore[no-untyped-def]
    """Adam with a cosine schedule and random +-2 pixel shifts (of the 32x32 image); returns (model, top-1)."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    model = build_model()
    x_tr, y_tr = torch.from_numpy(upscale(data["x_train"])), torch.from_numpy(data["y_train"])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = epochs * -(-len(x_tr) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    for epoch in range(epochs):
        model.train()
        perm = torch.from_numpy(rng.permutation(len(x_tr)))
        for k in range(0, len(x_tr), 64):
            idx = perm[k:k + 64]
            dy, dx = (int(v) for v in rng.integers(-2, 3, 2))
            xb = torch.roll(x_tr[idx], shifts=(dy, dx), dims=(2, 3))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), y_tr[idx]).backward()
            opt.step()
            sched.step()
        print(f"epoch {epoch + 1}/{epochs}: held-out top-1 {evaluate(model, data):.4f}", flush=True)
    model.eval()
    return model, evaluate(model, data)


def evaluate(model, data: dict[str, np.ndarray]) -> float:  # type: ignore[no-untyped-def]
    import torch

    was_training = model.training
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(upscale(data["x_test"]))).argmax(1).numpy()
    model.train(was_training)
    return float((pred == data["y_test"]).mean())


def main() -> int:
    import torch

    data = split()
    t0 = time.time()
    model, acc = train(data)
    params = sum(p.numel() for p in model.parameters())
    print(f"trained in {time.time() - t0:.0f} s: {params} parameters, held-out top-1 {acc:.4f}")
    torch.onnx.export(model, (torch.zeros(1, 1, 32, 32),), str(MODEL_PATH), input_names=["x"],
                      output_names=["logits"], opset_version=17, dynamo=False)
    np.savez_compressed(SPLIT_PATH, **{k: data[k] for k in ("x_test", "y_test", "x_calib")})
    print(f"wrote {MODEL_PATH} and {SPLIT_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
