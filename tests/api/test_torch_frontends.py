"""PyTorch front ends: ``vdla.from_torch`` (torch.export -> core ATen -> graph IR) and
``torch.compile(backend="vdla")`` against eager PyTorch, with the zoo's tolerance (max abs error
<= 1e-4 x max |output|, top-5 equal).

Default suite: small models built from torch layers (the zoo's operator patterns in a few layers),
an op we do not support (torch.fft, a custom autograd.Function) running in eager, a changing shape,
int8 on the VDLA, and the errors. ``slow``: torchvision's resnet18, mobilenet_v2 (and their
families' small members) through both front ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import vdla
from vdla.compiler.frontend.torch_dynamo import VdlaFallbackWarning
from vdla.compiler.graph.errors import UnsupportedModelError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "models"))


@pytest.fixture(autouse=True)
def fresh_dynamo() -> None:
    """Each test starts with dynamo's caches empty (its per-frame state would carry shapes over)."""
    torch._dynamo.reset()


class SmallNet(torch.nn.Module):
    """Conv + BatchNorm + ReLU, a residual add, max pool, a ReLU6 depthwise conv, mean, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.fc = torch.nn.Linear(16, 10)
        gen = torch.Generator().manual_seed(3)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.rand(16, generator=gen) * 0.4 - 0.2)
            self.bn.running_var.copy_(torch.rand(16, generator=gen) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.relu(y + self.conv2(y))
        y = torch.nn.functional.relu6(self.dw(self.pool(y)))
        return self.fc(y.mean(dim=(2, 3)))


def small_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return SmallNet().eval()


def assert_zoo_match(y: torch.Tensor | np.ndarray, ref: torch.Tensor) -> None:
    y = torch.as_tensor(np.asarray(y.detach() if isinstance(y, torch.Tensor) else y))
    ref = ref.detach()
    scale = ref.abs().max().item()
    assert scale > 0, "a zero output compares nothing"
    err = (y - ref).abs().max().item()
    assert err <= 1e-4 * scale, (err, scale)
    assert torch.equal(y.topk(5).indices, ref.topk(5).indices)


def test_from_torch_matches_eager() -> None:
    m, x = small_net(), torch.randn(2, 3, 16, 16)
    graph = vdla.from_torch(m, (x,))
    ops = {n.op for n in graph.nodes}
    assert {"conv2d", "batch_norm", "max_pool2d", "dense"} <= ops, ops
    mod = vdla.compile(m, (x,), target="llvm")
    assert_zoo_match(mod(x), m(x))


def test_torch_compile_matches_eager_and_caches_per_shape() -> None:
    m = small_net()
    compiled = torch.compile(m, backend="vdla", dynamic=False)
    shapes = [(1, 3, 16, 16), (2, 3, 12, 12), (1, 3, 16, 16), (2, 3, 12, 12)]
    from vdla.compiler.frontend import torch_dynamo

    calls = []
    original = torch_dynamo.compile_graph

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(tuple(args[1][-1].shape) if args[1] else ())
        return original(*args, **kwargs)

    torch_dynamo.compile_graph = counting
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", VdlaFallbackWarning)  # everything here compiles: no fallback note
            for shape in shapes:
                x = torch.randn(*shape)
                with torch.no_grad():
                    assert_zoo_match(compiled(x), m(x))
    finally:
        torch_dynamo.compile_graph = original
    assert len(calls) == 2, calls  # one compile per input shape, then the cache


class Fft(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 5, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        y = torch.fft.rfft(y, dim=-1).abs()
        return self.fc(y.flatten(1))


def test_unsupported_op_runs_in_eager_with_a_note() -> None:
    torch.manual_seed(0)
    m, x = Fft().eval(), torch.randn(1, 3, 8, 8)
    with pytest.raises(UnsupportedModelError, match=r"_fft_r2c.*torch.compile\(model, backend='vdla'\)"):
        vdla.from_torch(m, (x,))
    with pytest.warns(VdlaFallbackWarning, match=r"in eager PyTorch: .*_fft_r2c"):
        with torch.no_grad():
            y = torch.compile(m, backend="vdla")(x)
    assert_zoo_match(y, m(x))


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def, override]
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def, override]
        x, = ctx.saved_tensors
        return 3 * x * x * g


class WithCustomFunction(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = Cube.apply(torch.relu(self.conv(x)))
        y = torch.special.bessel_j0(y)  # no converter: this part stays eager
        return self.fc(y.mean(dim=(2, 3)))


def test_custom_autograd_function_model_compiles() -> None:
    torch.manual_seed(0)
    m, x = WithCustomFunction().eval(), torch.randn(1, 3, 8, 8)
    with pytest.warns(VdlaFallbackWarning, match="bessel_j0"):
        with torch.no_grad():
            y = torch.compile(m, backend="vdla")(x)
    assert_zoo_match(y, m(x))


def test_int8_on_the_vdla_through_torch_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    from vdla.compiler.frontend import torch_dynamo

    graphs: list[torch_dynamo.CompiledGraph] = []
    original = torch_dynamo.vdla_backend

    def keep(*args, **kwargs):  # type: ignore[no-untyped-def]
        graphs.append(original(*args, **kwargs))
        return graphs[-1]

    monkeypatch.setattr(torch_dynamo, "vdla_backend", keep)
    m = small_net()
    gen = torch.Generator().manual_seed(5)
    samples = [torch.randn(1, 3, 16, 16, generator=gen) for _ in range(4)]
    compiled = torch.compile(m, backend="vdla", options={"target": "vdla", "config": "default",
                                                         "calibrate": samples, "backend": "fsim"})
    x = samples[0]
    with torch.no_grad():
        y, ref = compiled(x), m(x)
    # int8: within the quantization error of the float model, not float tolerance
    assert y.shape == ref.shape
    assert (y - ref).abs().max().item() <= 0.1 * ref.abs().max().item() + 0.05
    subgraphs = [sub for g in graphs for entry in g.cache.values() for sub in entry.graph.modules()
                 if isinstance(sub, torch_dynamo.VdlaSubgraph)]
    assert subgraphs
    assert any(e.device == "vdla" for sub in subgraphs for e in sub.compiled.partition()), "no conv on the VDLA"


def test_clear_errors() -> None:
    m = small_net()
    with pytest.raises(UnsupportedModelError, match=r"dtype torch.float64.*float32"):
        vdla.from_torch(m.double(), (torch.randn(1, 3, 16, 16, dtype=torch.float64),))

    class DataDependent(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.sum() > 0:  # control flow on a value: torch.export cannot trace it
                return x * 2
            return x

    with pytest.raises(UnsupportedModelError, match=r"torch.export cannot capture DataDependent.*backend='vdla'"):
        vdla.from_torch(DataDependent(), (torch.randn(2, 2),))
    # dynamo wraps a backend's error (BackendCompilerFailed) with the message kept
    with pytest.raises((UnsupportedModelError, BackendCompilerFailed), match="needs calibration data"):
        torch.compile(small_net(), backend="vdla", options={"target": "vdla"})(torch.randn(1, 3, 16, 16))
    with pytest.raises((UnsupportedModelError, BackendCompilerFailed), match="unknown option"):
        torch.compile(small_net(), backend="vdla", options={"bogus": 1})(torch.randn(1, 3, 16, 16))


# --- the torchvision zoo (slow: minutes each on a loaded 2-core host) --------------------------------

ZOO = ("resnet18", "mobilenet_v2")


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO)
def test_zoo_through_torch_export(name: str) -> None:
    from zoo import make_model

    m, x = make_model(name), torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        assert_zoo_match(vdla.compile(m, (x,))(x), m(x))


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO)
def test_zoo_through_torch_compile(name: str) -> None:
    from zoo import make_model

    m, x = make_model(name), torch.randn(1, 3, 224, 224)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("error", VdlaFallbackWarning)
        assert_zoo_match(torch.compile(m, backend="vdla")(x), m(x))


@pytest.mark.slow
@pytest.mark.parametrize("family", ["resnet", "mobilenet_v2", "mobilenet_v3", "squeezenet", "densenet",
                                    "shufflenet", "efficientnet", "regnet", "googlenet", "mnasnet"])
def test_zoo_families_through_torch_export(family: str) -> None:
    from zoo import make_model

    m, x = make_model(family, image_size=32, family=True), torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert_zoo_match(vdla.compile(m, (x,))(x), m(x))


@pytest.mark.slow
@pytest.mark.parametrize("family", ["convnext", "vit"])
def test_zoo_families_through_torch_compile(family: str) -> None:
    from zoo import make_model

    m, x = make_model(family, image_size=32, family=True), torch.randn(1, 3, 32, 32)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", VdlaFallbackWarning)  # ops without a converter run eager here
        assert_zoo_match(torch.compile(m, backend="vdla")(x), m(x))


# --- the README's torchvision one-liner ------------------------------------------------------------


def readme_one_liner() -> str:
    """The README's ``python -c "import torch, torchvision, vdla; ..."`` line, as written."""
    lines = [line for line in (ROOT / "README.md").read_text().splitlines()
             if line.startswith('python -c "import torch, torchvision, vdla;')]
    assert len(lines) == 1, "README.md must show the torchvision one-liner exactly once"
    return lines[0]


def test_torchvision_resnet18_in_train_mode_through_torch_compile() -> None:
    """What the one-liner does (a torchvision model as constructed, i.e. in train mode, whose batch norms
    use batch statistics and so run eager), at 64 px so that the default suite can afford it."""
    import torchvision

    torch.manual_seed(0)
    model, x = torchvision.models.resnet18(), torch.randn(2, 3, 64, 64)
    eager = torchvision.models.resnet18()
    eager.load_state_dict(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the inference-only and eager-fallback notes
        got = torch.compile(model, backend="vdla")(x)
    assert_zoo_match(got, eager(x))


@pytest.mark.slow
def test_readme_torchvision_one_liner_runs_as_written(tmp_path: Path) -> None:
    proc = subprocess.run(readme_one_liner(), shell=True, cwd=tmp_path, capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
