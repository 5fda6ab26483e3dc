"""The CPU a module is compiled for: triple, CPU name and the features it may use.

A ``Target`` is what an exported library records, and what the runtime checks against
the CPU that loads it, so feature names are LLVM's (``avx512f``, ``fma``, ``neon``, ...).  The
schedules size their vectors and register tiles from the target being compiled for
(:func:`current_target`, set by :func:`using_target` around a build), never from the host:
:attr:`Target.vector_bits`, :meth:`Target.vector_lanes` and :attr:`Target.vector_registers` are
the public API a schedule reads (x86: 128/256/512-bit xmm/ymm/zmm, 16 or 32 registers; ARM: NEON's
128-bit q registers, 32 on AArch64 and 16 on ARMv7).

Besides x86, the ARM hosts of the FPGA boards are targets (``llvm -mtriple=aarch64-linux-gnu
-mcpu=cortex-a53``, ``llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a9 -mattr=+neon,+vfp3``), and
``board:<name>`` names a board's host CPU from :data:`vdla_hw.fpga.boards.BOARDS`.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import llvmlite.binding as llvm


from vdla_hw.errors import UsageError

class TargetError(UsageError):
    """A target string or feature set cannot be used on this LLVM or this CPU."""


#: The SIMD features the schedules care about, widest first (x86).
SIMD_FEATURES = ("avx512f", "avx2", "fma", "avx")
#: Architectures (the triple's first word) of the 64-bit and 32-bit ARM back ends.
AARCH64_ARCHS = ("aarch64", "arm64")
ARM32_ARCHS = ("arm", "armv7", "armv7a", "armv7l", "armv7-a", "armhf", "thumbv7", "thumbv7a")
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


#: A NEON probe: a 128-bit float multiply-add shows whether the CPU gets q registers (NEON) and a fused
#: multiply-add (``fmla`` on AArch64, ``vfma`` with ARMv7's VFPv4; a Cortex-A9 has only ``vmla``).
_ARM_PROBE_IR = """
define void @probe(<4 x float>* %a, <4 x float>* %b) {
  %x = load <4 x float>, <4 x float>* %a
  %y = load <4 x float>, <4 x float>* %b
  %m = call <4 x float> @llvm.fma.v4f32(<4 x float> %x, <4 x float> %y, <4 x float> %y)
  store <4 x float> %m, <4 x float>* %a
  ret void
}
declare <4 x float> @llvm.fma.v4f32(<4 x float>, <4 x float>, <4 x float>)
"""


@functools.cache
def init_llvm() -> None:
    """Initialize LLVM's targets once (``llvm.initialize()`` is gone in llvmlite 0.45+): every back end,
    so a module can be cross-compiled for an ARM board."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def triple_arch(triple: str) -> str:
    """``x86_64``, ``aarch64`` or ``arm`` (32-bit): the architecture family of an LLVM triple."""
    arch = triple.split("-", 1)[0].lower()
    if arch in AARCH64_ARCHS:
        return "aarch64"
    if arch in ARM32_ARCHS or arch.startswith(("armv", "thumbv")):
        return "arm"
    if arch in ("x86_64", "amd64"):
        return "x86_64"
    return arch


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
    if triple_arch(triple) in ("aarch64", "arm"):
        asm = tm.emit_assembly(llvm.parse_assembly(_ARM_PROBE_IR))
        arm = set()
        if ".4s" in asm or re.search(r"\bq\d+\b", asm) or re.search(r"\{d\d+, d\d+\}", asm):
            arm.add("neon")
        if "fmla" in asm or "vfma.f32" in asm:
            arm.add("vfp4" if triple_arch(triple) == "arm" else "fp-armv8")
        return frozenset(arm)
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
    def arch(self) -> str:
        """The architecture family: ``x86_64``, ``aarch64`` or ``arm`` (:func:`triple_arch`)."""
        return triple_arch(self.triple)

    @property
    def is_x86(self) -> bool:
        return self.triple.split("-", 1)[0] in ("x86_64", "i386", "i686")

    @property
    def is_arm(self) -> bool:
        """An ARM target (AArch64 or 32-bit ARM): NEON vectors, cross-compiled from this host."""
        return self.arch in ("aarch64", "arm")

    @property
    def isa(self) -> str:
        """Short name of the vector ISA the schedules use: ``avx512``, ``avx2``, ``avx``, ``sse``, ``asimd``
        (AArch64 NEON, 32 q registers) or ``neon`` (ARMv7 NEON, 16 q registers)."""
        if self.arch == "aarch64":
            return "asimd"
        if self.arch == "arm":
            return "neon"
        f = self.features
        return "avx512" if "avx512f" in f else "avx2" if "avx2" in f else "avx" if "avx" in f else "sse"

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers: 32 zmm with AVX-512, else 16 (ymm / xmm on x86-64); NEON has
        32 q registers on AArch64 and 16 on ARMv7 (q0-q15, aliasing d0-d31)."""
        if self.arch == "aarch64":
            return 32
        return 32 if "avx512f" in self.features else 16

    @property
    def vector_bits(self) -> int:
        """The widest vector register the schedules fill: 512 (AVX-512), 256 (AVX/AVX2), 128 (SSE, NEON)."""
        if self.is_arm:
            return 128
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
        """A fused multiply-add instruction: FMA3 on x86, always on AArch64, VFPv4 on ARMv7."""
        if self.arch == "aarch64":
            return True
        return bool({"fma", "avx512f", "vfp4"} & self.features)

    @property
    def runs_on_host(self) -> bool:
        """This process can load and run code for the target (same architecture, no missing feature)."""
        return self.arch == host_target().arch and not self.missing_on_host()

    def missing_on_host(self) -> list[str]:
        """The features this target uses that the host CPU lacks."""
        return sorted(self.features - host_features())

    def with_features(self, *extra: str) -> Target:
        """This target with ``extra`` features enabled (names without the ``+``)."""
        return Target(self.triple, self.cpu, self.features | {f.lstrip("+") for f in extra})

    def target_machine(self, opt: int = 3, jit: bool = False) -> llvm.TargetMachine:
        """An LLVM target machine for this CPU: position-independent for shared libraries, or with ``jit``
        for MCJIT in this process."""
        init_llvm()
        try:
            tgt = llvm.Target.from_triple(self.triple)
        except RuntimeError as err:
            raise TargetError(f"LLVM cannot generate code for triple {self.triple!r}: {err}") \
                from None
        if jit:
            # The large code model: MCJIT places code wherever mmap puts it, and a 32-bit PC-relative
            # reference to a symbol of a library loaded more than 2 GiB away (libm, libgomp beside a
            # multi-GB torch) fails LLVM's relocation assertion and aborts the process.
            return tgt.create_target_machine(cpu=self.cpu, features=self.feature_string, opt=opt,
                                             reloc="default", codemodel="jitdefault", jit=True)
        return tgt.create_target_machine(cpu=self.cpu, features=self.feature_string, opt=opt,
                                         reloc="pic", codemodel="default")

    def to_json(self) -> dict[str, object]:
        return {"triple": self.triple, "cpu": self.cpu, "features": sorted(self.features)}

    def __str__(self) -> str:
        simd = [f for f in ("avx512f", "avx2", "fma", "neon", "vfp3", "vfp4") if f in self.features]
        if self.arch == "aarch64":
            simd = ["neon"]
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


BOARD_PREFIX = "board:"


def board_target(name: str) -> Target:
    """The host CPU of the FPGA board ``name`` (``board:pynq-z2`` is ``llvm -mtriple=armv7a-linux-gnueabihf
    -mcpu=cortex-a9 -mattr=+neon,+vfp3``); a board without a processor of its own is refused by name."""
    from vdla_hw.fpga.boards import get_board

    board = get_board(name)
    if board.host_cpu is None:
        raise TargetError(f"board {board.name} has no processor of its own to run CPU kernels: its host is the "
                          f"workstation it is attached to",
                          hint="compile the CPU kernels for that machine (--cpu-target llvm)")
    return parse_target(board.host_cpu.llvm_target)


def _check_arm(target: Target, spec: str) -> Target:
    try:
        llvm.Target.from_triple(target.triple)
    except RuntimeError as err:
        raise TargetError(f"LLVM cannot generate code for triple {target.triple!r} (target {spec!r}): {err}") from None
    if "neon" not in target.features and target.arch == "arm":
        raise TargetError(f"target {spec!r} has no NEON: the CPU schedules fill 128-bit NEON registers",
                          hint="add -mattr=+neon (every Cortex-A of the boards has it)")
    return target


def parse_target(spec: str | Target | None) -> Target:
    """``"llvm"`` (the host), ``"llvm -mtriple=T -mcpu=NAME -mattr=+a,+b"``, ``"board:NAME"`` (a board's host
    CPU) or a Target; None is the target being compiled for (:func:`current_target`: the host unless
    :func:`using_target` says otherwise).

    An explicit ``-mcpu`` without ``-mattr`` takes that CPU's SIMD features as LLVM defines
    them (:func:`cpu_simd_features`: ``-mcpu=haswell`` is ``+avx,+avx2,+fma``); ``-mattr``
    features are recorded as given, and the CPU's other SIMD features are switched off.  A
    ``-mtriple`` of another architecture without ``-mcpu`` is LLVM's ``generic`` CPU of it.
    """
    if isinstance(spec, Target):
        return spec
    if spec is None:
        return current_target()
    if spec.strip().startswith(BOARD_PREFIX):
        return board_target(spec.strip()[len(BOARD_PREFIX):])
    words = spec.split()
    if not words or words[0] != "llvm":
        raise TargetError(f"unknown target {spec!r}: this code generator handles 'llvm' "
                          f"targets, e.g. 'llvm', 'llvm -mcpu=znver4', "
                          f"'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53' or 'board:pynq-z2'")
    host = host_target()
    cpu, triple, feats = None, host.triple, None
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
    foreign = triple_arch(triple) != host.arch
    if cpu is None:
        cpu = "generic" if foreign else host.cpu
    if feats is None:
        feats = host.features if (cpu == host.cpu and not foreign) else cpu_simd_features(triple, cpu)
    target = Target(triple, cpu, feats)
    return _check_arm(target, spec) if target.is_arm else target
