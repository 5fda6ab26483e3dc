"""Random valid VDLA programs, for differential tests of the backends (fsim, cycle, rtl).

:func:`random_program` builds a program of several *rounds*; each round loads
input/weight tiles (load module), computes on them with GEMM, ALU and
accumulator loads (compute module) and stores results (store module).  Every
access stays inside its buffer, and dependency tokens order every conflicting
pair of accesses, so the program is race-free: any backend that honours the
token protocol must produce the same final DRAM, whatever its timing.

With ``threads=2`` the SRAM is split into two ping-pong regions and rounds
alternate between them, so round ``r + 1`` loads while round ``r`` computes and
stores -- the overlap a timed backend actually reorders.  Round ``r`` reuses
the region of round ``r - threads``, so its loads wait for that round's compute
(``c2l``) and its compute waits for that round's stores (``s2c``).

SRAM has no reset value (the RTL starts it random), so a prologue first loads every
input, weight and accumulator tile of every region from the source buffers: no
instruction reads an element no instruction wrote.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluOp, MemType, Uop

from vdla.runtime.program import Program, ProgramBuilder
from vdla.simulator.access import copy_forwarding_hazard

_MAX_REGION = 48
"""Largest SRAM region (tiles) per buffer and thread: small keeps the programs fast to run."""


@dataclass(frozen=True)
class _Regions:
    inp: int
    wgt: int
    acc: int


def random_program(cfg: HwConfig, seed: int | random.Random = 0, *, rounds: int | None = None,
                   threads: int | None = None) -> Program:
    """A random race-free program on ``cfg`` (see the module docstring).

    ``seed`` is an int or a :class:`random.Random` (e.g. from hypothesis' ``st.randoms()``);
    ``rounds`` (1..6) and ``threads`` (1 or 2) are drawn from it when not given.
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    rounds = rounds if rounds is not None else rng.randint(1, 6)
    threads = threads if threads is not None else rng.choice((1, 2))
    if threads not in (1, 2) or rounds < 1:
        raise ValueError(f"threads must be 1 or 2 and rounds >= 1, got threads={threads}, rounds={rounds}")
    size = _Regions(*(min(_MAX_REGION, depth // threads) for depth in (cfg.inp_buff_depth, cfg.wgt_buff_depth,
                                                                      cfg.acc_buff_depth - 1)))
    return _Generator(cfg, rng, size, threads).build(rounds)


class _Generator:
    def __init__(self, cfg: HwConfig, rng: random.Random, size: _Regions, threads: int) -> None:
        self.cfg, self.rng, self.size, self.threads = cfg, rng, size, threads
        self.pb = ProgramBuilder(cfg)
        nprng = np.random.default_rng(rng.getrandbits(32))
        self.src = {}
        for kind, rows, cols in (("inp", 8, 6), ("wgt", 4, 6), ("acc", 4, 6)):
            shape = {"inp": (rows * cfg.batch, cols * cfg.block_in), "wgt": (rows * cfg.block_out, cols * cfg.block_in),
                     "acc": (rows * cfg.batch, cols * cfg.block_out)}[kind]
            width = {"inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": min(cfg.acc_width, 16)}[kind]
            data = nprng.integers(-(1 << (width - 1)), 1 << (width - 1), size=shape)
            self.src[kind] = (self.pb.alloc(f"src_{kind}", kind, shape, data), rows, cols)
        self.out_rows, self.out_cols = 8, 6
        out_shape = (self.out_rows * cfg.batch, self.out_cols * cfg.block_out)
        half = 1 << (cfg.out_width - 1)
        # Random initial output, so a store of zeros still changes DRAM.
        self.out = self.pb.alloc("out", "out", out_shape, nprng.integers(-half, half, size=out_shape))
        self.uop_ranges: dict[tuple[str, int], tuple[int, int]] = {}
        self.uop_list: list[Uop] = []
        self.dsts: dict[int, list[int]] = {}
        """Per region: accumulator indices the micro-ops write (stores and ACC loads aim there)."""

    # ---- micro-ops ------------------------------------------------------------------------
    def _uops(self) -> list[Uop]:
        """Per region: a GEMM list (acc, inp, wgt) and an ALU list (acc, acc) of 1-4 micro-ops each."""
        rng, size = self.rng, self.size
        uops: list[Uop] = []
        for region in range(self.threads):
            for kind in ("gemm", "alu"):
                n = rng.randint(1, 4)
                base = len(uops)
                for _ in range(n):
                    dst = region * size.acc + rng.randrange(size.acc // 2)
                    self.dsts.setdefault(region, []).append(dst)
                    if kind == "gemm":
                        uops.append(Uop(dst, region * size.inp + rng.randrange(size.inp // 2),
                                        region * size.wgt + rng.randrange(size.wgt // 2)))
                    else:
                        uops.append(Uop(dst, region * size.acc + rng.randrange(size.acc // 2), 0))
                self.uop_ranges[(kind, region)] = (base, base + n)
        return uops

    def _loop(self, kind: str, region: int) -> dict[str, Any]:
        """A random micro-op sub-range and two-level loop that stays inside the region's upper half."""
        rng, size = self.rng, self.size
        bgn, end = self.uop_ranges[(kind, region)]
        lo = rng.randrange(bgn, end)
        hi = rng.randint(lo + 1, end)
        iter_out, iter_in = rng.randint(1, 3), rng.randint(1, 3)

        def factors(region_size: int) -> tuple[int, int]:
            # Indices start below half the region; the loop may add up to the other half.
            budget = region_size - region_size // 2
            f_out = rng.randint(0, budget // (2 * iter_out)) if iter_out > 1 else 0
            f_in = rng.randint(0, budget // (2 * iter_in)) if iter_in > 1 else 0
            return f_out, f_in

        loop: dict[str, Any] = {"uop_bgn": lo, "uop_end": hi, "iter_out": iter_out, "iter_in": iter_in,
                                   "dst_factor": factors(size.acc)}
        if kind == "gemm":
            loop["src_factor"] = factors(size.inp)
            loop["wgt_factor"] = factors(size.wgt)
        else:
            loop["src_factor"] = factors(size.acc)
        return loop

    # ---- instructions ---------------------------------------------------------------------
    def _near_dst(self, region: int, n: int) -> int:
        """An accumulator SRAM base for ``n`` tiles in ``region``, starting at a micro-op destination."""
        size = self.size.acc
        return min(self.rng.choice(self.dsts[region]), region * size + size - n)

    def _load(self, mem_type: MemType, region: int, **deps: bool) -> None:
        rng = self.rng
        kind = mem_type.name.lower()
        spec, rows, cols = self.src[kind]
        region_size = getattr(self.size, kind)
        y, x = rng.randint(1, 3), rng.randint(1, 4)
        pad = tuple(rng.choice((0, 0, 1, 2)) for _ in range(4))
        while (pad[0] + y + pad[1]) * (pad[2] + x + pad[3]) > region_size:
            y, x, pad = 1, 1, (0, 0, 0, 0)
        stride = rng.randint(x, cols)
        r0 = rng.randint(0, rows - y)
        c0 = rng.randint(0, stride - x)
        dram = spec.addr + r0 * cols + c0 if stride == cols else spec.addr + r0 * stride + c0
        if stride != cols:
            # A non-matrix stride still must stay inside the buffer.
            dram = spec.addr + rng.randint(0, rows * cols - ((y - 1) * stride + x))
        n = (pad[0] + y + pad[1]) * (pad[2] + x + pad[3])
        if mem_type == MemType.ACC:
            sram = self._near_dst(region, n)
        else:
            sram = region * region_size + rng.randint(0, region_size - n)
        self.pb.load(mem_type, sram, dram, y, x, stride, pad=pad, **deps)  # type: ignore[arg-type]

    def _store(self, region: int, **deps: bool) -> None:
        rng = self.rng
        y, x = rng.randint(1, 3), rng.randint(1, 4)
        sram = self._near_dst(region, y * x)
        r0, c0 = rng.randint(0, self.out_rows - y), rng.randint(0, self.out_cols - x)
        requant = rng.random() < 0.5  # half plain narrowing stores, half requantizing ones
        bias = None
        if rng.random() < 0.4:  # a bias per DRAM row (step 1) or one for the block (step 0), inside the region
            step = rng.randint(0, 1)
            size = self.size.acc
            bias = (region * size + rng.randint(0, size - 1 - (y - 1) * step), step)
        self.pb.store(sram, self.out.addr + r0 * self.out_cols + c0, y, x, self.out_cols, **deps,
                      shift=rng.randint(0, self.cfg.acc_width - 1) if requant else 0,
                      clip=requant and rng.random() < 0.5, relu=requant and rng.random() < 0.5, bias=bias)

    def _compute(self, region: int, **deps: bool) -> None:
        rng = self.rng
        choice = rng.random()
        if choice < 0.2:
            self._load(MemType.ACC, region, **deps)
        elif choice < 0.6:
            mode = rng.random()  # a fifth reset, a fifth overwrite (acc = inp @ wgt), the rest accumulate
            self.pb.gemm(reset=mode < 0.2, overwrite=0.2 <= mode < 0.4, **self._loop("gemm", region),
                         **deps)  # type: ignore[arg-type]
        else:
            op = rng.choice(list(AluOp))
            use_imm = rng.random() < 0.5
            imm = rng.randint(-8, 8) if op == AluOp.SHR else rng.randint(-(1 << 15), (1 << 15) - 1)
            loop = self._loop("alu", region)
            if op == AluOp.MOV and not use_imm and self._copy_hazard(loop):
                use_imm = True  # this loop's copy would read what an earlier iteration writes: illegal
            self.pb.alu(op, imm=imm if use_imm else None, **loop, **deps)  # type: ignore[arg-type]

    def _copy_hazard(self, loop: dict[str, Any]) -> bool:
        """True when a tensor-operand MOV over ``loop`` reads an accumulator an earlier iteration writes."""
        used = self.uop_list[loop["uop_bgn"]:loop["uop_end"]]
        outer = np.arange(loop["iter_out"], dtype=np.int64)[:, None, None]
        inner = np.arange(loop["iter_in"], dtype=np.int64)[None, :, None]

        def indices(fields: list[int], factors: tuple[int, int]) -> np.ndarray:
            return (np.array(fields, dtype=np.int64)[None, None, :] + outer * factors[0] + inner * factors[1]).reshape(-1)

        dst = indices([u.dst for u in used], loop["dst_factor"])
        src = indices([u.src for u in used], loop["src_factor"])
        return copy_forwarding_hazard(dst, src) is not None

    def _define_sram(self) -> None:
        """Load every tile of every region, copying the source buffer as often as needed.

        INP/WGT go through the load module and ACC through compute, each before any
        instruction of the rounds in its module's program order, so no token is needed.
        """
        for mem_type in (MemType.INP, MemType.WGT, MemType.ACC):
            kind = mem_type.name.lower()
            spec, rows, cols = self.src[kind]
            total = getattr(self.size, kind) * self.threads
            for base in range(0, total, rows * cols):
                n = min(rows * cols, total - base)
                self.pb.load(mem_type, base, spec.addr, 1, n, n)  # the buffer is contiguous: one row

    @staticmethod
    def _flags(count: int, first: dict[str, bool], last: dict[str, bool]) -> list[dict[str, bool]]:
        """Dependency flags for ``count`` instructions: pops on the first, pushes on the last."""
        flags = [dict() for _ in range(count)]  # type: list[dict[str, bool]]
        flags[0].update(first)
        flags[-1].update(last)
        return flags

    def build(self, rounds: int) -> Program:
        rng, d = self.rng, self.threads
        self.uop_list = self._uops()
        self.pb.load_uops(self.pb.uops(self.uop_list, "uops"))
        self._define_sram()
        for r in range(rounds):
            region = r % d
            loads = self._flags(rng.randint(1, 3), {"pop_next": r >= d}, {"push_next": True})
            for flags in loads:
                self._load(rng.choice((MemType.INP, MemType.WGT)), region, **flags)
            computes = self._flags(rng.randint(1, 4), {"pop_prev": True, "pop_next": r >= d},
                                   {"push_prev": r + d < rounds, "push_next": True})
            for flags in computes:
                self._compute(region, **flags)
            stores = self._flags(rng.randint(1, 2), {"pop_prev": True},
                                 {"push_prev": r + d < rounds or r == rounds - 1})
            for flags in stores:
                self._store(region, **flags)
        self.pb.finish(pop_next=True)
        return self.pb.build()
