"""The VDLA instruction set: opcodes, instruction records and their bit layouts.

Instructions are 128 bits, micro-ops 32 bits.  Field widths that depend on the
hardware (SRAM index widths, micro-op index widths) are derived from a
:class:`~vdla_hw.config.HwConfig`; everything else is fixed here.  Fields are
packed from the least significant bit upwards in the order they are declared,
which is also the order of the generated SystemVerilog packed structs (listed
MSB first there).

Every other layer (simulators, RTL package, runtime, compiler) encodes and
decodes through :class:`Isa`; no field offset is written anywhere else.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields
from enum import IntEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Iterable, Mapping, Union

import numpy as np

from vdla_hw.config import ConfigError
from vdla_hw.errors import BadFileError

if TYPE_CHECKING:
    from vdla_hw.config import HwConfig

INSN_BITS = 128
UOP_BITS = 32
INSN_BYTES = INSN_BITS // 8
UOP_BYTES = UOP_BITS // 8

# Fixed field widths (not derived from the config).
OPCODE_W = 3
MEMTYPE_W = 3
ALUOP_W = 3
DRAM_ADDR_W = 32
SIZE_W = 16
STRIDE_W = 16
PAD_W = 4
LOOP_ITER_W = 14
IMM_W = 16
SHIFT_W = 5
"""STORE's requantization shift: 0..31, enough for any accumulator width (at most 32 bits)."""
ELEM_STRIDE_W = 4
"""LOAD's element stride, encoded as ``elem_stride - 1``: strides 1..16 (every code is legal; all
zero bits, what a LOAD encoded before the field existed holds, is today's contiguous row)."""
MAX_ELEM_STRIDE = 1 << ELEM_STRIDE_W


class IsaError(BadFileError):
    """A malformed instruction or micro-op: a field out of range or an undecodable word."""


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    ALU = 3
    FINISH = 4


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    """Arithmetic shift right by the operand; a negative operand shifts left."""
    MUL = 4
    MOV = 5
    """Copy: ``acc[dst] = b``.  It never reads ``acc[dst]``, so it issues one micro-op iteration per
    cycle (``TimingConfig.alu_copy_ii``); no iteration may read a destination an earlier
    iteration of the same instruction writes (the pipeline does not forward it)."""


class Module(IntEnum):
    """The three execution modules fetch dispatches to."""

    LOAD = 0
    COMPUTE = 1
    STORE = 2


DEP_FLAG_NAMES = ("pop_prev", "pop_next", "push_prev", "push_next")


@dataclass(frozen=True)
class DepFlags:
    """Dependency-token flags of an instruction, relative to the module that executes it.

    For the load module "next" is compute; for compute "prev" is load and "next" is
    store; for store "prev" is compute.
    """

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    def __str__(self) -> str:
        names = [n for n in DEP_FLAG_NAMES if getattr(self, n)]
        return ",".join(names)


NO_DEPS = DepFlags()

# Which dependency queue each flag pops from / pushes to, per executing module. Queues are
# named by direction: l2c = load->compute, c2l = compute->load, c2s = compute->store,
# s2c = store->compute.  A flag missing for a module has no queue there (load has no
# previous stage, store no next stage) and must be clear.
DEP_QUEUE_NAMES: tuple[str, ...] = ("l2c", "c2l", "c2s", "s2c")
FLAG_QUEUES: Mapping[Module, Mapping[str, str]] = MappingProxyType(
    {
        Module.LOAD: MappingProxyType({"pop_next": "c2l", "push_next": "l2c"}),
        Module.COMPUTE: MappingProxyType(
            {"pop_prev": "l2c", "pop_next": "s2c", "push_prev": "c2l", "push_next": "c2s"}
        ),
        Module.STORE: MappingProxyType({"pop_prev": "c2s", "push_prev": "s2c"}),
    }
)


@dataclass(frozen=True)
class MemInsn:
    """LOAD (DRAM -> SRAM, with zero padding) or STORE (SRAM -> DRAM) of a 2D block.

    ``dram_base``, ``x_size`` and ``x_stride`` count elements of ``mem_type`` (a
    whole tile, e.g. BATCH x BLOCK_IN inputs), not bytes.  A load writes
    ``(y_pad0 + y_size + y_pad1) x (x_pad0 + x_size + x_pad1)`` consecutive SRAM
    elements starting at ``sram_base``; padding elements are zero.

    A STORE requantizes each accumulator lane on its way out (:func:`requantize`):
    an arithmetic right shift by ``shift``, then ``relu`` (lower bound 0) and ``clip``
    (saturate to the signed output range), then it keeps the low output-width bits.
    ``shift=0`` with both flags clear is the plain wrapping narrow.  A STORE cannot pad
    (its encoding holds these fields where a LOAD holds the pads); a LOAD cannot requantize.

    A LOAD with ``elem_stride`` > 1 gathers: element ``(r, c)`` of the block is DRAM element
    ``dram_base + r * x_stride + c * elem_stride`` (``elem_stride`` = 1 is the contiguous row), e.g.
    the pixels a stride-2 convolution uses, rows at twice the pitch and pixels at stride 2, in one
    instruction.  The DMA reads such a block one element per command.  A gathering LOAD cannot pad
    along x (its SRAM rows are the gathered elements only); a STORE never gathers.

    With ``bias`` a STORE first adds the accumulator element ``acc[bias_row + y * bias_step]``
    (``bias_step`` is 0 or 1) to every element of DRAM row ``y``, wrapping at the accumulator
    width, before the shift: the bias of a layer whose rows are output-channel blocks rides
    on the STORE instead of initialising the accumulators (see :class:`GemmInsn` ``overwrite``).
    """

    opcode: Opcode
    mem_type: MemType
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad0: int = 0
    y_pad1: int = 0
    x_pad0: int = 0
    x_pad1: int = 0
    deps: DepFlags = NO_DEPS
    shift: int = 0
    clip: bool = False
    relu: bool = False
    bias: bool = False
    bias_row: int = 0
    bias_step: int = 0
    elem_stride: int = 1

    @property
    def last_elem(self) -> int:
        """DRAM element index of the block's last element (of a non-empty block): the largest
        address it touches, ``dram_base + (y_size - 1) * x_stride + (x_size - 1) * elem_stride``."""
        return self.dram_base + (self.y_size - 1) * self.x_stride + (self.x_size - 1) * self.elem_stride


def requantize(acc: np.ndarray, shift: int, clip: bool, relu: bool, out_width: int) -> np.ndarray:
    """What a STORE writes for accumulator lanes ``acc``: ``(acc >> shift)``, then ReLU (max 0) if
    ``relu``, saturation to the signed ``out_width``-bit range if ``clip``, then the low
    ``out_width`` bits (two's-complement wrap), as int64 values in the signed output range."""
    v = np.asarray(acc, dtype=np.int64) >> np.int64(shift)
    if relu:
        v = np.maximum(v, 0)
    if clip:
        v = np.clip(v, -(1 << (out_width - 1)), (1 << (out_width - 1)) - 1)
    half = np.int64(1 << (out_width - 1))
    return ((v + half) & np.int64((1 << out_width) - 1)) - half


# Enum members as module constants: in Python 3.11 looking a member up on its Enum class costs
# several times a global lookup, and the simulators apply the ALU per instruction.
_MIN, _MAX, _ADD, _MUL, _MOV = AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.MUL, AluOp.MOV


def alu_apply(op: AluOp, a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """What an ALU micro-op iteration computes: ``op(a, b)`` on accumulator lanes ``a`` with operand
    ``b`` (an immediate or accumulator lanes), wrapped to the accumulator type of ``a``.

    The one definition of the ALU's arithmetic: the simulators execute it and the compiler's
    tensor intrinsic evaluates it."""
    if op == _MIN:
        return np.minimum(a, b)
    if op == _MAX:
        return np.maximum(a, b)
    if op == _ADD:
        return a + np.asarray(b, dtype=a.dtype)
    if op == _MUL:
        return a * np.asarray(b, dtype=a.dtype)
    if op == _MOV:
        return np.broadcast_to(np.asarray(b, dtype=a.dtype), a.shape)
    # SHR: arithmetic shift right by b, left by -b; amounts beyond the width saturate
    # (right: sign fill, left: zero), computed in int64 and narrowed by a wrapping cast.
    wide = a.astype(np.int64)
    if isinstance(b, int):  # an immediate: clamp in Python (np.clip on a scalar costs more than the shift)
        right, left = min(max(b, 0), 63), min(max(-b, 0), 63)
        return ((wide >> right) << left).astype(a.dtype)
    amount = np.asarray(b, dtype=np.int64)
    shifted = (wide >> np.clip(amount, 0, 63)) << np.clip(-amount, 0, 63)
    return shifted.astype(a.dtype)


@dataclass(frozen=True)
class GemmInsn:
    """GEMM over micro-ops ``[uop_bgn, uop_end)`` inside a two-level affine loop.

    For ``i0 < iter_out, i1 < iter_in`` and each micro-op ``u``:
    ``acc[u.dst + i0*dst_factor_out + i1*dst_factor_in] += inp[u.src + ...] @ wgt[u.wgt + ...].T``
    (or ``= 0`` when ``reset``).  With ``overwrite`` every iteration writes the product without
    reading the accumulator (``acc[dst] = inp @ wgt``): the first reduction step of a tile then
    needs no accumulator initialisation before it (the bias moves to the STORE).  ``reset`` and
    ``overwrite`` exclude each other.
    """

    reset: bool
    uop_bgn: int
    uop_end: int
    iter_out: int
    iter_in: int
    dst_factor_out: int
    dst_factor_in: int
    src_factor_out: int
    src_factor_in: int
    wgt_factor_out: int
    wgt_factor_in: int
    deps: DepFlags = NO_DEPS
    overwrite: bool = False


@dataclass(frozen=True)
class AluInsn:
    """Vector ALU over micro-ops: ``acc[dst] = op(acc[dst], imm if use_imm else acc[src])``
    (``MOV`` copies the operand without reading ``acc[dst]``).

    Indices follow the same two-level affine loop as :class:`GemmInsn`; both
    operands index the accumulator buffer.  ``imm`` is a signed 16-bit value.
    """

    alu_op: AluOp
    use_imm: bool
    imm: int
    uop_bgn: int
    uop_end: int
    iter_out: int
    iter_in: int
    dst_factor_out: int
    dst_factor_in: int
    src_factor_out: int
    src_factor_in: int
    deps: DepFlags = NO_DEPS


@dataclass(frozen=True)
class FinishInsn:
    """Ends the program: compute raises ``done`` once everything before it retired."""

    deps: DepFlags = NO_DEPS


@dataclass(frozen=True)
class Uop:
    """A micro-op: one accumulator, one input (or second accumulator) and one weight index."""

    dst: int
    src: int
    wgt: int


Insn = Union[MemInsn, GemmInsn, AluInsn, FinishInsn]


def opcode_of(insn: Insn) -> Opcode:
    """The opcode of an instruction record."""
    if isinstance(insn, MemInsn):
        return insn.opcode
    if isinstance(insn, GemmInsn):
        return Opcode.GEMM
    if isinstance(insn, AluInsn):
        return Opcode.ALU
    if isinstance(insn, FinishInsn):
        return Opcode.FINISH
    raise IsaError(f"not a VDLA instruction: {insn!r}")


def module_of(insn: Insn) -> Module:
    """The module that executes ``insn``: micro-op and accumulator loads run on compute."""
    if isinstance(insn, MemInsn):
        if insn.opcode == Opcode.STORE:
            return Module.STORE
        return Module.LOAD if insn.mem_type in (MemType.INP, MemType.WGT) else Module.COMPUTE
    return Module.COMPUTE


@dataclass(frozen=True)
class Field:
    """One bit field of a layout: ``width`` bits at ``offset`` (LSB = 0)."""

    name: str
    width: int
    offset: int
    signed: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else self.mask


@dataclass(frozen=True)
class Layout:
    """The packed bit layout of one instruction format (or of the micro-op)."""

    name: str
    fields: tuple[Field, ...]
    total_bits: int

    @property
    def used_bits(self) -> int:
        return sum(f.width for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def pack(self, values: dict[str, int]) -> int:
        word = 0
        for f in self.fields:
            try:
                v = operator.index(values[f.name])
            except TypeError:
                raise IsaError(f"{self.name}.{f.name} must be an integer, got {values[f.name]!r}") from None
            if not f.lo <= v <= f.hi:
                raise IsaError(
                    f"{self.name}.{f.name} = {v} does not fit its {f.width}-bit field (allowed [{f.lo}, {f.hi}])"
                )
            word |= (v & f.mask) << f.offset
        return word

    def unpack(self, word: int) -> dict[str, int]:
        if word >> self.used_bits:
            raise IsaError(
                f"malformed {self.name} word 0x{word:0{self.total_bits // 4}x}: bits above bit "
                f"{self.used_bits - 1} are reserved and must be zero"
            )
        out: dict[str, int] = {}
        for f in self.fields:
            v = (word >> f.offset) & f.mask
            if f.signed and v >> (f.width - 1):
                v -= 1 << f.width
            out[f.name] = v
        return out


# One field of a layout spec: (name, width) or (name, width, signed), or, for a width derived
# from the config, (name, width, signed, config key that sets it).
_Spec = Union[tuple[str, int], tuple[str, int, bool], tuple[str, int, bool, str]]


def _layout(name: str, spec: Iterable[_Spec], total: int, cfg: "HwConfig") -> Layout:
    out: list[Field] = []
    origins: dict[str, str] = {}
    offset = 0
    for item in spec:
        fname, width = item[0], item[1]
        signed = bool(item[2]) if len(item) > 2 else False
        if len(item) > 3:
            origins[fname] = item[3]  # type: ignore[misc]
        out.append(Field(fname, width, offset, signed))
        offset += width
    if offset > total:
        detail = " + ".join(f"{f.name}({f.width})" for f in out)
        culprits = [f"{key} = {getattr(cfg, key)}" for key in sorted(set(origins.values()))]
        raise ConfigError(
            f"{cfg.name}: the {name} fields need {offset} bits but only {total} are available "
            f"({detail}); the index widths come from {', '.join(culprits)}: reduce those buffer sizes"
        )
    return Layout(name, tuple(out), total)


def _index(name: str, width: int, buf: str) -> tuple[str, int, bool, str]:
    """A field indexing buffer ``buf``, sized by that buffer's depth."""
    return (name, width, False, f"log_{buf}_buff_size")


_COMMON: list[_Spec] = [("opcode", OPCODE_W)] + [(n, 1) for n in DEP_FLAG_NAMES]


class Isa:
    """Bit layouts of a config's instructions and micro-ops, with encode/decode."""

    def __init__(self, cfg: "HwConfig") -> None:
        self.cfg = cfg
        uop_w = cfg.log_uop_buff_depth
        acc_w = cfg.log_acc_buff_depth
        inp_w = cfg.log_inp_buff_depth
        wgt_w = cfg.log_wgt_buff_depth
        self.sram_idx_w = max(uop_w, acc_w, inp_w, wgt_w)
        self.uop_src_w = max(inp_w, acc_w)
        widest = max(("uop", uop_w), ("acc", acc_w), ("inp", inp_w), ("wgt", wgt_w), key=lambda b: b[1])[0]
        src_buf = "inp" if inp_w >= acc_w else "acc"
        loop: list[_Spec] = [
            _index("uop_bgn", uop_w, "uop"),
            _index("uop_end", uop_w + 1, "uop"),
            ("iter_out", LOOP_ITER_W),
            ("iter_in", LOOP_ITER_W),
        ]
        block: list[_Spec] = [
            ("mem_type", MEMTYPE_W),
            _index("sram_base", self.sram_idx_w, widest),
            ("dram_base", DRAM_ADDR_W),
            ("y_size", SIZE_W),
            ("x_size", SIZE_W),
            ("x_stride", STRIDE_W),
        ]
        self.mem = _layout(
            "mem",
            _COMMON + block + [("y_pad0", PAD_W), ("y_pad1", PAD_W), ("x_pad0", PAD_W), ("x_pad1", PAD_W),
                               ("elem_stride_m1", ELEM_STRIDE_W)],
            INSN_BITS,
            cfg,
        )
        # STORE shares LOAD's fields up to the stride (fetch and the dependency gates read them
        # through either layout); where a LOAD keeps its pads, a STORE keeps its requantization.
        self.store = _layout(
            "store",
            _COMMON + block + [("shift", SHIFT_W), ("clip", 1), ("relu", 1),
                               ("bias", 1), _index("bias_row", acc_w, "acc"), ("bias_step", 1)],
            INSN_BITS,
            cfg,
        )
        self.gemm = _layout(
            "gemm",
            _COMMON
            + [("reset", 1)]
            + loop
            + [
                _index("dst_factor_out", acc_w, "acc"),
                _index("dst_factor_in", acc_w, "acc"),
                _index("src_factor_out", inp_w, "inp"),
                _index("src_factor_in", inp_w, "inp"),
                _index("wgt_factor_out", wgt_w, "wgt"),
                _index("wgt_factor_in", wgt_w, "wgt"),
                ("overwrite", 1),
            ],
            INSN_BITS,
            cfg,
        )
        self.alu = _layout(
            "alu",
            _COMMON
            + loop
            + [
                _index("dst_factor_out", acc_w, "acc"),
                _index("dst_factor_in", acc_w, "acc"),
                _index("src_factor_out", acc_w, "acc"),
                _index("src_factor_in", acc_w, "acc"),
                ("alu_op", ALUOP_W),
                ("use_imm", 1),
                ("imm", IMM_W, True),
            ],
            INSN_BITS,
            cfg,
        )
        self.finish = _layout("finish", _COMMON, INSN_BITS, cfg)
        self.uop = _layout(
            "uop",
            [_index("dst", acc_w, "acc"), _index("src", self.uop_src_w, src_buf), _index("wgt", wgt_w, "wgt")],
            UOP_BITS,
            cfg,
        )

    @property
    def layouts(self) -> dict[str, Layout]:
        return {"mem": self.mem, "store": self.store, "gemm": self.gemm, "alu": self.alu, "finish": self.finish, "uop": self.uop}

    # ---- instructions -----------------------------------------------------------------
    def encode(self, insn: Insn) -> int:
        """Pack an instruction into a 128-bit integer; raises :class:`IsaError` if a field overflows."""
        op = opcode_of(insn)
        if isinstance(insn, MemInsn):
            if op not in (Opcode.LOAD, Opcode.STORE):
                raise IsaError(f"a MemInsn must have opcode LOAD or STORE, got {op!r}")
            _check_enum("mem_type", insn.mem_type, MemType)
            _check_mem_fields(insn)
        if isinstance(insn, AluInsn):
            _check_enum("alu_op", insn.alu_op, AluOp)
        if isinstance(insn, GemmInsn) and insn.reset and insn.overwrite:
            raise IsaError("a GEMM either resets (acc = 0) or overwrites (acc = inp @ wgt), not both; clear one flag")
        values = {f.name: getattr(insn, f.name) for f in fields(insn) if f.name != "deps"}
        if isinstance(insn, MemInsn):
            values["elem_stride_m1"] = values.pop("elem_stride") - 1
        values.update({n: int(getattr(insn.deps, n)) for n in DEP_FLAG_NAMES})
        values["opcode"] = int(op)
        layout = {Opcode.LOAD: self.mem, Opcode.STORE: self.store, Opcode.GEMM: self.gemm}.get(op)
        layout = layout or (self.alu if op == Opcode.ALU else self.finish)
        return layout.pack(values)

    def decode(self, word: int) -> Insn:
        """Unpack a 128-bit integer; raises :class:`IsaError` on a malformed word."""
        if not isinstance(word, int) or not 0 <= word < (1 << INSN_BITS):
            raise IsaError(f"instruction word {word!r} is not a 128-bit unsigned integer")
        raw = word & ((1 << OPCODE_W) - 1)
        try:
            op = Opcode(raw)
        except ValueError:
            raise IsaError(f"malformed instruction 0x{word:032x}: opcode {raw} is not one of {[o.name for o in Opcode]}") from None
        if op in (Opcode.LOAD, Opcode.STORE):
            v = (self.mem if op == Opcode.LOAD else self.store).unpack(word)
            try:
                mem_type = MemType(v["mem_type"])
            except ValueError:
                raise IsaError(
                    f"malformed {op.name} 0x{word:032x}: memory type {v['mem_type']} is not one of {[m.name for m in MemType]}"
                ) from None
            rest = {k: v[k] for k in ("sram_base", "dram_base", "y_size", "x_size", "x_stride")}
            if op == Opcode.LOAD:
                rest.update({k: v[k] for k in ("y_pad0", "y_pad1", "x_pad0", "x_pad1")})
                rest["elem_stride"] = v["elem_stride_m1"] + 1
                if rest["elem_stride"] > 1 and (rest["x_pad0"] or rest["x_pad1"]):
                    raise IsaError(f"malformed LOAD 0x{word:032x}: a gathering LOAD (elem_stride "
                                   f"{rest['elem_stride']}) has x pads; it cannot pad along x")
            else:
                if not v["bias"] and (v["bias_row"] or v["bias_step"]):
                    raise IsaError(f"malformed STORE 0x{word:032x}: bias_row/bias_step are set but bias is not")
                rest.update(shift=v["shift"], clip=bool(v["clip"]), relu=bool(v["relu"]), bias=bool(v["bias"]),
                            bias_row=v["bias_row"], bias_step=v["bias_step"])
            return MemInsn(op, mem_type, **rest, deps=_deps(v))
        if op == Opcode.GEMM:
            v = self.gemm.unpack(word)
            names = [f.name for f in fields(GemmInsn) if f.name != "deps"]
            args = {n: v[n] for n in names}
            args["reset"] = bool(args["reset"])
            args["overwrite"] = bool(args["overwrite"])
            if args["reset"] and args["overwrite"]:
                raise IsaError(f"malformed GEMM 0x{word:032x}: both reset and overwrite are set")
            return GemmInsn(**args, deps=_deps(v))
        if op == Opcode.ALU:
            v = self.alu.unpack(word)
            try:
                alu_op = AluOp(v["alu_op"])
            except ValueError:
                raise IsaError(f"malformed ALU 0x{word:032x}: ALU op {v['alu_op']} is not one of {[a.name for a in AluOp]}") from None
            names = [f.name for f in fields(AluInsn) if f.name not in ("deps", "alu_op", "use_imm")]
            return AluInsn(alu_op=alu_op, use_imm=bool(v["use_imm"]), **{n: v[n] for n in names if n != "imm"}, imm=v["imm"], deps=_deps(v))
        return FinishInsn(deps=_deps(self.finish.unpack(word)))

    def encode_program(self, insns: Iterable[Insn]) -> np.ndarray:
        """Instructions as little-endian bytes (16 per instruction), as they sit in DRAM."""
        words = [self.encode(i) for i in insns]
        buf = bytearray()
        for w in words:
            buf += w.to_bytes(INSN_BYTES, "little")
        return np.frombuffer(bytes(buf), dtype=np.uint8).copy()

    def decode_program(self, data: bytes | np.ndarray) -> list[Insn]:
        """Decode a byte image of consecutive 16-byte instructions."""
        raw = bytes(np.asarray(data, dtype=np.uint8).tobytes()) if not isinstance(data, bytes) else data
        if len(raw) % INSN_BYTES:
            raise IsaError(f"instruction image of {len(raw)} bytes is not a multiple of {INSN_BYTES}")
        out = []
        for k in range(0, len(raw), INSN_BYTES):
            try:
                out.append(self.decode(int.from_bytes(raw[k : k + INSN_BYTES], "little")))
            except IsaError as exc:
                raise IsaError(f"instruction {k // INSN_BYTES}: {exc}") from None
        return out

    # ---- micro-ops ----------------------------------------------------------------------
    def encode_uop(self, uop: Uop) -> int:
        return self.uop.pack({"dst": uop.dst, "src": uop.src, "wgt": uop.wgt})

    def decode_uop(self, word: int) -> Uop:
        if not isinstance(word, int) or not 0 <= word < (1 << UOP_BITS):
            raise IsaError(f"micro-op word {word!r} is not a 32-bit unsigned integer")
        return Uop(**self.uop.unpack(word))

    def encode_uops(self, uops: Iterable[Uop]) -> np.ndarray:
        """Micro-ops as a little-endian uint32 array, as they sit in DRAM."""
        return np.array([self.encode_uop(u) for u in uops], dtype="<u4")

    def decode_uop_fields(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vectorized decode of many micro-op words into (dst, src, wgt) index arrays."""
        w = np.asarray(words, dtype=np.uint64)
        d, s, g = self.uop.fields
        return tuple(((w >> np.uint64(f.offset)) & np.uint64(f.mask)).astype(np.int64) for f in (d, s, g))  # type: ignore[return-value]


def _check_enum(name: str, value: object, enum: type[IntEnum]) -> None:
    if value not in set(enum):
        raise IsaError(f"{name} = {value!r} is not one of {[e.name for e in enum]}")


def _check_mem_fields(insn: MemInsn) -> None:
    """The fields a LOAD or STORE has no bits for must hold their defaults."""
    if insn.opcode == Opcode.STORE and (insn.y_pad0 or insn.y_pad1 or insn.x_pad0 or insn.x_pad1):
        raise IsaError("STORE cannot pad (its encoding holds shift/clip/relu where a LOAD holds the pads); "
                       "set all pads to 0")
    if insn.opcode == Opcode.LOAD and (insn.shift or insn.clip or insn.relu or insn.bias or insn.bias_row or insn.bias_step):
        raise IsaError("only a STORE requantizes or adds a bias; set shift=0, clip, relu and bias off on a LOAD")
    if not insn.bias and (insn.bias_row or insn.bias_step):
        raise IsaError(f"a STORE without bias has bias_row = {insn.bias_row}, bias_step = {insn.bias_step}; "
                       f"set bias (or leave both 0)")
    try:
        stride = operator.index(insn.elem_stride)
    except TypeError:
        stride = 0
    if not 1 <= stride <= MAX_ELEM_STRIDE:
        raise IsaError(f"elem_stride = {insn.elem_stride!r}: a LOAD steps 1..{MAX_ELEM_STRIDE} DRAM elements "
                       f"between a row's elements (1 = contiguous)")
    if insn.opcode == Opcode.STORE and insn.elem_stride != 1:
        raise IsaError(f"STORE with elem_stride = {insn.elem_stride}: only a LOAD gathers elements; "
                       f"store contiguous rows (elem_stride=1)")
    if insn.elem_stride > 1 and (insn.x_pad0 or insn.x_pad1):
        raise IsaError(f"a gathering LOAD (elem_stride = {insn.elem_stride}) cannot pad along x "
                       f"(x_pad0 = {insn.x_pad0}, x_pad1 = {insn.x_pad1}); set both to 0 or load contiguous rows")
    if insn.bias_step not in (0, 1):
        raise IsaError(f"bias_step = {insn.bias_step}: the bias advances 0 or 1 accumulator element per DRAM row")


def _deps(v: dict[str, int]) -> DepFlags:
    return DepFlags(*(bool(v[n]) for n in DEP_FLAG_NAMES))
