"""The torchvision classification zoo as users export it compiles for ``llvm`` and matches onnxruntime
(max abs error <= 1e-4 x max |output|, top-5 classes equal).

Default suite: one small member per family (torchvision's own classes with fewer layers, 32x32
input), exported with the TorchScript exporter; the dynamo exporter on the transformer.
``slow``: the 15 full models with both exporters at 224x224 (opset 17), and the full matrix of
exporters x opsets {13, 17, 21} x batch {1, 4} at 64x64 for three models of different kinds.
"""

from __future__ import annotations

import pytest
from zoo import EXPORTERS, FAMILIES, MODELS, check_model

#: Models whose every exporter x opset x batch combination runs in the slow suite.
MATRIX_MODELS = ("resnet18", "mobilenet_v3_small", "vit_b_16")


def _assert_matches(name: str, exporter: str, size: int, batch: int = 1, opset: int | None = None,
                    family: bool = False) -> None:
    match = check_model(name, exporter, size, batch, opset, family)
    assert match.max_abs_ref > 0, "a zero output compares nothing"
    assert match.max_abs_err <= 1e-4 * match.max_abs_ref, match
    assert match.top5_equal, match


@pytest.mark.parametrize("family", FAMILIES)
def test_family_torchscript_export(family: str) -> None:
    _assert_matches(family, "torchscript", 32, family=True)


@pytest.mark.parametrize("family", ["vit", "mobilenet_v3"])
def test_family_dynamo_export(family: str) -> None:
    _assert_matches(family, "dynamo", 32, family=True)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model(name: str, exporter: str) -> None:
    _assert_matches(name, exporter, 224, opset=17)


def _matrix() -> list[tuple[str, str, int, int]]:
    out = []
    for name in MATRIX_MODELS:
        for exporter in EXPORTERS:
            # torch's TorchScript exporter has no opset-13 form of scaled_dot_product_attention (added in 14).
            low = 14 if name == "vit_b_16" and exporter == "torchscript" else 13
            out += [(name, exporter, opset, batch) for opset in (low, 17, 21) for batch in (1, 4)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name,exporter,opset,batch", _matrix())
def test_zoo_matrix(name: str, exporter: str, opset: int, batch: int) -> None:
    # 64x64 keeps the matrix within the slow budget (ViT-B/16 then has 16 patches + the class token).
    _assert_matches(name, exporter, 64, batch, opset)
