"""The torchvision classification zoo as a user exports it, and the check against onnxruntime.

Weights are random (no download is possible here); BatchNorm running statistics are randomized
too, so folding them is exercised with non-trivial values.  Models are exported with
``torch.onnx.export``'s defaults apart from the exporter and opset under test.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision as tv

from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model

#: The classification models the compiler must take as exported.
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "squeezenet1_1",
          "densenet121", "shufflenet_v2_x1_0", "efficientnet_b0", "regnet_x_400mf", "regnet_y_400mf", "googlenet",
          "mnasnet1_0", "convnext_tiny", "vit_b_16")
EXPORTERS = ("torchscript", "dynamo")


#: One small member per family, built from torchvision's own classes and blocks: the same operator
#: patterns as the full models (what the default suite checks) with a fraction of their layers.
FAMILIES = ("resnet", "mobilenet_v2", "mobilenet_v3", "squeezenet", "densenet", "shufflenet", "efficientnet",
            "regnet", "googlenet", "mnasnet", "convnext", "vit")


def _family_model(family: str, image_size: int) -> torch.nn.Module:
    m = tv.models
    if family == "resnet":
        return m.resnet.ResNet(m.resnet.Bottleneck, [1, 1, 1, 1], num_classes=100)
    if family == "mobilenet_v2":
        return m.MobileNetV2(num_classes=100, width_mult=0.5,
                             inverted_residual_setting=[[1, 16, 1, 1], [6, 24, 2, 2], [6, 40, 1, 2]])
    if family == "mobilenet_v3":
        cfg = m.mobilenetv3.InvertedResidualConfig
        blocks = [cfg(16, 3, 16, 16, True, "RE", 2, 1, 1.0), cfg(16, 3, 72, 24, False, "RE", 2, 1, 1.0),
                  cfg(24, 5, 96, 40, True, "HS", 2, 1, 1.0), cfg(40, 5, 240, 40, True, "HS", 1, 1, 1.0)]
        return m.MobileNetV3(blocks, last_channel=128, num_classes=100)
    if family == "squeezenet":
        return m.squeezenet1_1(num_classes=100)
    if family == "densenet":
        return m.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, num_classes=100)
    if family == "shufflenet":
        return m.ShuffleNetV2([2, 1, 1], [24, 48, 96, 192, 256], num_classes=100)
    if family == "efficientnet":
        cfg = m.efficientnet.MBConvConfig
        blocks = [cfg(1, 3, 1, 32, 16, 1), cfg(6, 3, 2, 16, 24, 2), cfg(6, 5, 2, 24, 40, 1)]
        return m.EfficientNet(blocks, dropout=0.2, num_classes=100)
    if family == "regnet":
        params = m.regnet.BlockParams.from_init_params(depth=4, w_0=24, w_a=24.48, w_m=2.54, group_width=8,
                                                       se_ratio=0.25)
        return m.RegNet(params, num_classes=100)
    if family == "googlenet":
        return m.GoogLeNet(num_classes=100, aux_logits=False, init_weights=True)
    if family == "mnasnet":
        return m.MNASNet(0.5, num_classes=100)
    if family == "convnext":
        cfg = m.convnext.CNBlockConfig
        return m.ConvNeXt([cfg(24, 48, 1), cfg(48, None, 2)], num_classes=100)
    if family == "vit":
        return m.VisionTransformer(image_size=image_size, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                   mlp_dim=64, num_classes=100)
    raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")


def make_model(name: str, seed: int = 0, image_size: int | None = None, family: bool = False) -> torch.nn.Module:
    """``name`` (a zoo model, or with ``family`` a family's small member: ``mobilenet_v2`` is both) with
    seeded random weights and randomized BatchNorm statistics, in eval mode."""
    torch.manual_seed(seed)
    if family:
        model = _family_model(name, image_size or 32).eval()
    else:
        kwargs: dict = {"weights": None}
        if name == "googlenet":
            kwargs.update(aux_logits=False, init_weights=True)
        if name == "vit_b_16" and image_size is not None:
            kwargs["image_size"] = image_size
        model = tv.models.get_model(name, **kwargs).eval()
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and not m.weight.any():
                # ViT zero-initializes its classifier; a zero output would compare nothing.
                m.weight.normal_(0.0, 0.02, generator=gen)
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 0.4 - 0.2)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 1.5 + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                    m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
    return model


def fit_batch_norm(model: torch.nn.Module, batch: torch.Tensor) -> None:
    """Re-estimate every BatchNorm's running statistics on ``batch`` (in place; the model ends in eval mode).

    The statistics become the batch's exact per-channel mean and (unbiased) variance over
    samples and pixels -- what a trained network's BatchNorms hold for its own data -- instead of
    the random values :func:`make_model` draws, with which most ReLU6s of a MobileNet saturate.
    The affine weight and bias stay as drawn."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average: after one batch, exactly its statistics
    model.train()
    with torch.no_grad():
        model(batch)
    model.eval()


def export(model: torch.nn.Module, x: torch.Tensor, exporter: str, opset: int | None = None) -> onnx.ModelProto:
    """The model exported as a user would: ``torch.onnx.export`` with its defaults but the exporter/opset."""
    opts = {} if opset is None else {"opset_version": opset}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            return torch.onnx.export(model, (x,), dynamo=True, verbose=False, **opts).model_proto
        buf = io.BytesIO()
        # The TorchScript exporter cannot export the fused attention kernel eval-mode
        # nn.MultiheadAttention dispatches to (aten::_native_multi_head_attention); torch's own
        # switch routes it through the composite ops the exporter knows.
        fastpath = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            torch.onnx.export(model, (x,), buf, dynamo=False, **opts)
        finally:
            torch.backends.mha.set_fastpath_enabled(fastpath)
        return onnx.load_from_string(buf.getvalue())


@dataclass(frozen=True)
class Match:
    """How the compiled model's output compares with onnxruntime's."""

    max_abs_err: float
    max_abs_ref: float
    top5_equal: bool

    @property
    def ok(self) -> bool:
        return self.max_abs_err <= 1e-4 * self.max_abs_ref and self.top5_equal


def compare(model: onnx.ModelProto, x: np.ndarray) -> Match:
    """Compile ``model`` for llvm, run it and onnxruntime on ``x``, and compare."""
    name = model.graph.input[0].name
    got = build_model(from_onnx(model), target="llvm").run({name: x})[0]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {name: x})[0]
    assert got.shape == want.shape, (got.shape, want.shape)
    top = np.argsort(-got, axis=-1)[..., :5]
    ref_top = np.argsort(-want, axis=-1)[..., :5]
    return Match(float(np.abs(got - want).max()), float(np.abs(want).max()), bool((top == ref_top).all()))


def check_model(name: str, exporter: str, size: int, batch: int = 1, opset: int | None = None,
                family: bool = False) -> Match:
    """Build, export, compile and compare one zoo model (or with ``family``, a family's small member)."""
    model = make_model(name, image_size=size, family=family)
    x = torch.from_numpy(np.random.default_rng(7).standard_normal((batch, 3, size, size)).astype(np.float32))
    return compare(export(model, x, exporter, opset), x.numpy())
