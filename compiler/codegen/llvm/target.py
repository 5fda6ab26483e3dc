"""The CPU a module is compiled for: triple, CPU name and the features it may use.

A ``Target`` is what an exported library records, and what the runtime checks against
the CPU that loads it, so feature names are LLVM's (``avx512f``, ``fma``, ...).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import llvmlite.binding as llvm


from vdla_hw.errors import UsageError

class TargetError(UsageError):
    """A target string or feature set cannot be used on this LLVM or this CPU."""


@functools.cache
def init_llvm() -> None:
    """Initialize LLVM's native target once (``llvm.initialize()`` is gone in llvmlite 0.45+)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.cache
def host_features() -> frozenset[str]:
    """LLVM names of the features the host CPU has (``avx512f``, ``fma``, ...)."""
    init_llvm()
    return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)


@dataclass(frozen=True)
class Target:
    """A CPU to generate code for.

    ``features`` are the enabled LLVM feature names; ``vector_bits`` is the widest
    register the schedules should fill (512 with AVX-512, 256 with AVX2, else 128).
    """

    triple: str
    cpu: str
    features: frozenset[str] = field(default_factory=frozenset)

    @property
    def feature_string(self) -> str:
        return ",".join(f"+{f}" for f in sorted(self.features))

    @property
    def vector_bits(self) -> int:
        if "avx512f" in self.features:
            return 512
        if "avx2" in self.features or "avx" in self.features:
            return 256
        return 128

    def vector_lanes(self, dtype_bits: int = 32) -> int:
        """Lanes of ``dtype_bits``-wide elements in one vector register."""
        return self.vector_bits // dtype_bits

    @property
    def has_fma(self) -> bool:
        return "fma" in self.features or "avx512f" in self.features

    def missing_on_host(self) -> list[str]:
        """The features this target uses that the host CPU lacks."""
        return sorted(self.features - host_features())

    def with_features(self, *extra: str) -> Target:
        """This target with ``extra`` features enabled (names without the ``+``)."""
        return Target(self.triple, self.cpu, self.features | {f.lstrip("+") for f in extra})

    def target_machine(self, opt: int = 3) -> llvm.TargetMachine:
        """An LLVM target machine for this CPU (position-independent, for shared libraries)."""
        init_llvm()
        try:
            tgt = llvm.Target.from_triple(self.triple)
        except RuntimeError as err:
            raise TargetError(f"LLVM cannot generate code for triple {self.triple!r}: {err}") \
                from None
        return tgt.create_target_machine(cpu=self.cpu, features=self.feature_string, opt=opt,
                                         reloc="pic", codemodel="default")

    def to_json(self) -> dict[str, object]:
        return {"triple": self.triple, "cpu": self.cpu, "features": sorted(self.features)}

    def __str__(self) -> str:
        simd = [f for f in ("avx512f", "avx2", "fma") if f in self.features]
        return f"llvm -mtriple={self.triple} -mcpu={self.cpu} ({', '.join(simd) or 'no SIMD'})"


@functools.cache
def host_target() -> Target:
    """The CPU this process runs on, with every feature it reports."""
    init_llvm()
    return Target(llvm.get_process_triple(), llvm.get_host_cpu_name(), host_features())


def parse_target(spec: str | Target | None) -> Target:
    """``"llvm"`` (the host), ``"llvm -mcpu=NAME -mattr=+a,+b"`` or a Target.

    An explicit ``-mcpu`` without ``-mattr`` takes that CPU's default feature set (decided
    by LLVM); ``-mattr`` features are recorded as given.
    """
    if isinstance(spec, Target):
        return spec
    if spec is None:
        return host_target()
    words = spec.split()
    if not words or words[0] != "llvm":
        raise TargetError(f"unknown target {spec!r}: this code generator handles 'llvm' "
                          f"targets, e.g. 'llvm' or 'llvm -mcpu=znver4'")
    host = host_target()
    cpu, triple, feats = host.cpu, host.triple, None
    for w in words[1:]:
        key, _, value = w.partition("=")
        if key == "-mcpu":
            cpu = value
        elif key == "-mtriple":
            triple = value
        elif key == "-mattr":
            feats = frozenset(f.lstrip("+") for f in value.split(",") if not f.startswith("-"))
        else:
            raise TargetError(f"unknown option {w!r} in target {spec!r}; "
                              f"known: -mcpu=, -mtriple=, -mattr=")
    if feats is None:
        feats = host.features if cpu == host.cpu else frozenset()
    return Target(triple, cpu, feats)
