"""A small MobileNet-like network exported by torch: inverted residual blocks with depthwise convs
and the odd channel counts (24, 40) of the MobileNets, for the VDLA partition tests."""

from __future__ import annotations

import io
import warnings

import numpy as np
import torch
from torch import nn


def _block(cin: int, hidden: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU(),
        nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU(),
        nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))


class MobileNetLike(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.b1 = _block(16, 48, 24, 2)
        self.b2 = _block(24, 72, 24, 1)
        self.b3 = _block(24, 72, 40, 2)
        self.head = nn.Sequential(nn.Conv2d(40, 64, 1), nn.ReLU())
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b1(self.stem(x))
        x = x + self.b2(x)
        x = self.head(self.b3(x))
        return self.fc(x.mean((2, 3)))


def mobilenet_like_onnx(resolution: int = 32, seed: int = 0) -> bytes:
    """The network with seeded random weights and BatchNorm statistics, exported to ONNX bytes."""
    torch.manual_seed(seed)
    model = MobileNetLike().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    buf = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation notice
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, torch.zeros(1, 3, resolution, resolution), buf, input_names=["x"], dynamo=False)
    return buf.getvalue()


def rand_image(resolution: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, resolution, resolution)).astype(np.float32)
