"""A deliberately naive sequential reference of the VDLA semantics, for tests only.

It runs instructions in program order (valid for any correctly synchronized
program), one element at a time with Python integers, so it shares no code
path with the vectorized simulator it checks.
"""

from __future__ import annotations

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Insn, MemInsn, MemType, Opcode

_NP = {8: np.int8, 16: np.int16, 32: np.int32}


def wrap(v: int, width: int) -> int:
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def _elem(cfg: HwConfig, mt: MemType) -> tuple[int, int, tuple[int, int]]:
    """(bytes, width, tile shape) of one element of ``mt``."""
    return {
        MemType.INP: (cfg.inp_elem_bytes, cfg.inp_width, (cfg.batch, cfg.block_in)),
        MemType.WGT: (cfg.wgt_elem_bytes, cfg.wgt_width, (cfg.block_out, cfg.block_in)),
        MemType.ACC: (cfg.acc_elem_bytes, cfg.acc_width, (cfg.batch, cfg.block_out)),
    }[mt]


class RefMachine:
    def __init__(self, cfg: HwConfig, dram: np.ndarray) -> None:
        self.cfg = cfg
        self.dram = bytearray(np.asarray(dram, dtype=np.uint8).tobytes())
        self.uops: dict[int, tuple[int, int, int]] = {}
        self.sram: dict[MemType, dict[int, np.ndarray]] = {MemType.INP: {}, MemType.WGT: {}, MemType.ACC: {}}

    def tile(self, mt: MemType, i: int) -> np.ndarray:
        shape = _elem(self.cfg, mt)[2]
        return self.sram[mt].setdefault(i, np.zeros(shape, dtype=object))

    def step(self, insn: Insn) -> None:
        cfg = self.cfg
        if isinstance(insn, FinishInsn):
            return
        if isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD:
            width_x = insn.x_pad0 + insn.x_size + insn.x_pad1
            for r in range(insn.y_pad0 + insn.y_size + insn.y_pad1):
                for c in range(width_x):
                    dst = insn.sram_base + r * width_x + c
                    rr, cc = r - insn.y_pad0, c - insn.x_pad0
                    inside = 0 <= rr < insn.y_size and 0 <= cc < insn.x_size
                    addr = insn.dram_base + rr * insn.x_stride + cc * insn.elem_stride
                    if insn.mem_type == MemType.UOP:
                        word = int.from_bytes(self.dram[addr * 4 : addr * 4 + 4], "little")
                        u = cfg.isa.decode_uop(word)
                        self.uops[dst] = (u.dst, u.src, u.wgt)
                        continue
                    eb, width, shape = _elem(cfg, insn.mem_type)
                    if inside:
                        raw = bytes(self.dram[addr * eb : (addr + 1) * eb])
                        vals = np.frombuffer(raw, dtype=np.dtype(_NP[width]).newbyteorder("<")).astype(object)
                        self.sram[insn.mem_type][dst] = vals.reshape(shape)
                    else:
                        self.sram[insn.mem_type][dst] = np.zeros(shape, dtype=object)
            return
        if isinstance(insn, MemInsn):
            ob = cfg.out_elem_bytes
            for r in range(insn.y_size):
                bias = (self.tile(MemType.ACC, insn.bias_row + r * insn.bias_step).reshape(-1) if insn.bias
                        else np.zeros(cfg.batch * cfg.block_out, dtype=object))
                for c in range(insn.x_size):
                    vals = self.tile(MemType.ACC, insn.sram_base + r * insn.x_size + c).reshape(-1)
                    vals = [wrap(int(v) + int(b), cfg.acc_width) for v, b in zip(vals, bias)]
                    out = bytes(wrap(_requant(int(v), insn, cfg.out_width), cfg.out_width) & 0xFF for v in vals)
                    addr = (insn.dram_base + r * insn.x_stride + c) * ob
                    self.dram[addr : addr + ob] = out
            return
        for i0 in range(insn.iter_out):
            for i1 in range(insn.iter_in):
                for u in range(insn.uop_bgn, insn.uop_end):
                    d, s, w = self.uops[u]
                    d += i0 * insn.dst_factor_out + i1 * insn.dst_factor_in
                    s += i0 * insn.src_factor_out + i1 * insn.src_factor_in
                    acc = self.tile(MemType.ACC, d)
                    if isinstance(insn, GemmInsn):
                        w += i0 * insn.wgt_factor_out + i1 * insn.wgt_factor_in
                        if insn.reset:
                            acc[...] = 0
                            continue
                        x, k = self.tile(MemType.INP, s), self.tile(MemType.WGT, w)
                        for b in range(cfg.batch):
                            for o in range(cfg.block_out):
                                total = (0 if insn.overwrite else int(acc[b, o])) + sum(int(x[b, j]) * int(k[o, j]) for j in range(cfg.block_in))
                                acc[b, o] = wrap(total, cfg.acc_width)
                    else:
                        assert isinstance(insn, AluInsn)
                        other = None if insn.use_imm else self.tile(MemType.ACC, s).copy()
                        for b in range(cfg.batch):
                            for o in range(cfg.block_out):
                                y = insn.imm if other is None else int(other[b, o])
                                acc[b, o] = alu(insn.alu_op, int(acc[b, o]), y, cfg.acc_width)

    def acc_array(self, depth: int) -> np.ndarray:
        out = np.zeros((depth, self.cfg.batch, self.cfg.block_out), dtype=np.int64)
        for i, t in self.sram[MemType.ACC].items():
            out[i] = t.astype(np.int64)
        return out


def alu(op: AluOp, x: int, y: int, width: int) -> int:
    if op == AluOp.MIN:
        return min(x, y)
    if op == AluOp.MAX:
        return max(x, y)
    if op == AluOp.ADD:
        return wrap(x + y, width)
    if op == AluOp.MUL:
        return wrap(x * y, width)
    if op == AluOp.MOV:
        return wrap(y, width)
    return wrap(x >> y, width) if y >= 0 else wrap(x << min(-y, width), width)


def run_reference(cfg: HwConfig, insns: list[Insn], dram: np.ndarray) -> RefMachine:
    machine = RefMachine(cfg, dram)
    for insn in insns:
        machine.step(insn)
    return machine


def _requant(v: int, insn: MemInsn, width: int) -> int:
    """A STORE's requantization of one lane, written out independently of the simulator's."""
    v >>= insn.shift
    if insn.relu and v < 0:
        v = 0
    if insn.clip:
        v = min(max(v, -(2 ** (width - 1))), 2 ** (width - 1) - 1)
    return v
