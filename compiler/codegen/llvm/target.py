"""The CPU a module is compiled for: triple, CPU name and the features it may use.

A ``Target`` is what an exported library records, and what the runtime checks against
the CPU that loads it, so feature names are LLVM's (``avx512f``, ``fma``, ...).  The
schedules size their vectors and register tiles from the target being compiled for
(:func:`current_target`, set by :func:`using_target` around a build), never from the host.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import llvmlite.binding as llvm


from vdla_hw.errors import UsageError

class TargetError(UsageError):
    """A target string or feature set cannot be used on this LLVM or this CPU."""


#: The SIMD features the schedules care about, widest first.
SIMD_FEATURES = ("avx512f", "avx2", "fma", "avx")
#: What each of them implies in LLVM's x86 feature graph.
_IMPLIES = {"avx512f": {"avx2", "fma", "avx"}, "avx2": {"avx"}, "fma": {"avx"}, "avx": set()}

#: One function whose machine code shows which SIMD features LLVM gives a CPU by default:
#: a 512-bit float multiply-add (zmm only with AVX-512, an FMA only with FMA, ymm with AVX)
#: and a 256-bit integer multiply (one ymm ``vpmulld`` only with AVX2).
_PROBE_IR = """
define void @probe(<16 x float>* %a, <16 x float>* %b, <8 x i32>* %c) {
  %x = load <16 x float>, <16 x float>* %a
  %y = load <16 x float>, <16 x float>* %b
  %m = fmul contract <16 x float> %x, %y
  %s = fadd contract <16 x float> %m, %y
  store <16 x float> %s, <16 x float>* %a
  %i = load <8 x i32>, <8 x i32>* %c
  %j = mul <8 x i32> %i, %i
  store <8 x i32> %j, <8 x i32>* %c
  ret void
}
"""


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


@functools.cache
def cpu_simd_features(triple: str, cpu: str) -> frozenset[str]:
    """The :data:`SIMD_FEATURES` LLVM enables for ``cpu`` without any ``-mattr``.

    LLVM knows each CPU's feature set but llvmlite does not expose it, so this compiles a
    probe function for ``cpu`` and reads the registers and instructions it was given.
    """
    init_llvm()
    try:
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=2)
    except RuntimeError as err:
        raise TargetError(f"LLVM cannot generate code for triple {triple!r}: {err}") from None
    mod = llvm.parse_assembly(_PROBE_IR)
    asm = tm.emit_assembly(mod)
    found = set()
    if "%zmm" in asm:
        found.add("avx512f")
    if "%ymm" in asm:
        found.add("avx")
    if "vfmadd" in asm:
        found.add("fma")
    if any(line.strip().startswith("vpmulld") and "%ymm" in line for line in asm.splitlines()):
        found.add("avx2")
    return frozenset(found)


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
        """LLVM's ``-mattr``: the features, and the SIMD ones the CPU name implies but the target
        leaves out switched off (``-mcpu=<an AVX-512 CPU> -mattr=+avx2,+fma`` must not emit zmm)."""
        on = set(self.features).union(*(_IMPLIES[f] for f in self.features if f in _IMPLIES))
        off = sorted(cpu_simd_features(self.triple, self.cpu) - on) if self.is_x86 else []
        return ",".join([f"+{f}" for f in sorted(self.features)] + [f"-{f}" for f in off])

    @property
    def is_x86(self) -> bool:
        return self.triple.split("-", 1)[0] in ("x86_64", "i386", "i686")

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers: 32 zmm with AVX-512, else 16 (ymm / xmm on x86-64)."""
        return 32 if "avx512f" in self.features else 16

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


_CURRENT: ContextVar[Target | None] = ContextVar("vdla_llvm_target", default=None)


def current_target() -> Target:
    """The target being compiled for (:func:`using_target`), else the host."""
    return _CURRENT.get() or host_target()


@contextmanager
def using_target(target: Target) -> Iterator[Target]:
    """Compile for ``target`` inside the ``with`` block: the schedules' vector width and register
    budget come from :func:`current_target`."""
    token = _CURRENT.set(target)
    try:
        yield target
    finally:
        _CURRENT.reset(token)


@functools.cache
def host_target() -> Target:
    """The CPU this process runs on, with every feature it reports."""
    init_llvm()
    return Target(llvm.get_process_triple(), llvm.get_host_cpu_name(), host_features())


def parse_target(spec: str | Target | None) -> Target:
    """``"llvm"`` (the host), ``"llvm -mcpu=NAME -mattr=+a,+b"`` or a Target; None is the target
    being compiled for (:func:`current_target`: the host unless :func:`using_target` says otherwise).

    An explicit ``-mcpu`` without ``-mattr`` takes that CPU's SIMD features as LLVM defines
    them (:func:`cpu_simd_features`: ``-mcpu=haswell`` is ``+avx,+avx2,+fma``); ``-mattr``
    features are recorded as given, and the CPU's other SIMD features are switched off.
    """
    if isinstance(spec, Target):
        return spec
    if spec is None:
        return current_target()
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
        feats = host.features if cpu == host.cpu else cpu_simd_features(triple, cpu)
    return Target(triple, cpu, feats)
