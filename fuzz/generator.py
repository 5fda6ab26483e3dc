"""Random legal plans (:func:`draw_plan`) and their lowering to programs (:func:`build_program`).

The generator gives every virtual thread its own slice of each SRAM buffer and
keeps a shadow of what is written, so it only draws reads of written elements:
loads (strided, zero-padded, every memory type) fill a thread's slice, micro-op
lists point into it, GEMM/ALU loops over micro-op sub-ranges get index factors
that stay inside written data (else fall back to simpler loops), and stores read
written accumulators.  Round ``r`` reuses the slices of round ``r - threads``, so
every token queue carries write-after-read as well as read-after-write order.
Now and then a program uses whole buffers, long rounds (past the command queue
depth) or many threads, to reach the config's limits.  :func:`check_plan` has the
last word: a drawn plan that fails it is a generator bug.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluOp, MemType, Uop

from vdla.runtime.memory import BufferSpec
from vdla.runtime.program import Program, ProgramBuilder
from vdla.fuzz.plan import (AluStep, ComputeOp, DataSpec, GemmOp, LoadOp, Loop, Plan, PlanError, Round, StoreOp, UopLoadOp,
                       access_of, check_plan, max_threads, sram_depths)

_DATA_TILES = 64
"""Tiles in each DRAM source buffer and in the output buffer."""
_SMALL_REGION = 48
"""SRAM slice per thread in ordinary programs (keeps them fast); "edge" programs use whole buffers."""
_LOOP_TRIES = 12
_OVER_DEPTH_MAX = 16
"""Programs with more threads than ``dep_queue_depth`` are drawn only for token queues
at most this deep (deeper ones would need hundreds of rounds to fill) ..."""
_DEEP_SHARE = 0.02
"""... and on deeper ones in this share of the programs, as *deep* plans: ``dep_queue_depth + 2``
threads, ``2 x threads`` rounds of one instruction per module but the slow one (over 3,000
instructions on ``default`` and ``wide``), so that a producer runs a whole queue ahead."""


@dataclass(frozen=True)
class Origin:
    """Where instruction ``k`` of a built program comes from: round, module and index in its list."""

    round: int
    module: str
    index: int


# ---- lowering --------------------------------------------------------------------------


def build_program(cfg: HwConfig, plan: Plan) -> tuple[Program, tuple[Origin | None, ...]]:
    """The program of ``plan`` with its dependency tokens, and the origin of every instruction.

    The plan is checked first (:class:`PlanError` if illegal); the last origin (FINISH) is None.
    """
    check_plan(cfg, plan)
    pb = ProgramBuilder(cfg)
    src = _alloc_data(cfg, pb, plan.data)
    origins: list[Origin | None] = []
    d, n = plan.threads, len(plan.rounds)
    for r, rnd in enumerate(plan.rounds):
        later = r + d < n
        pop_s2c, push_c2l = rnd.token_positions()
        last = -1
        mods = (("load", rnd.loads, ((0, "pop_next", r >= d), (last, "push_next", True))),
                ("compute", rnd.computes, ((0, "pop_prev", True), (pop_s2c, "pop_next", r >= d),
                                           (push_c2l, "push_prev", later), (last, "push_next", True))),
                ("store", rnd.stores, ((0, "pop_prev", True), (last, "push_prev", later or r == n - 1))))
        for module, ops, tokens in mods:
            for k, op in enumerate(ops):
                flags = {flag: on for pos, flag, on in tokens if on and pos in (k, k - len(ops))}
                _emit(pb, src, op, flags, f"r{r}_{k}")
                origins.append(Origin(r, module, k))
    pb.finish(pop_next=True)
    origins.append(None)
    return pb.build(), tuple(origins)


def _alloc_data(cfg: HwConfig, pb: ProgramBuilder, data: DataSpec) -> dict[str, BufferSpec]:
    rng = np.random.default_rng(data.seed)
    widths = {"inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width, "out": cfg.out_width}
    tiles = {"inp": (cfg.batch, cfg.block_in), "wgt": (cfg.block_out, cfg.block_in), "acc": (cfg.batch, cfg.block_out),
             "out": (cfg.batch, cfg.block_out)}
    counts = {"inp": data.n_inp, "wgt": data.n_wgt, "acc": data.n_acc, "out": data.n_out}
    out: dict[str, BufferSpec] = {}
    for kind in ("inp", "wgt", "acc", "out"):
        rows, cols = tiles[kind]
        half = 1 << (widths[kind] - 1)
        lo, hi = max(-half, -data.amplitude), min(half - 1, data.amplitude)
        values = rng.integers(lo, hi + 1, size=(counts[kind] * rows, cols))
        name = "out" if kind == "out" else f"src_{kind}"
        out[kind] = pb.alloc(name, kind, values.shape, values)
    return out


def _emit(pb: ProgramBuilder, src: dict[str, BufferSpec], op: object, flags: dict[str, bool], tag: str) -> None:
    if isinstance(op, LoadOp):
        base = src[op.mem.name.lower()].addr + op.offset
        pb.load(op.mem, op.sram, base, op.y, op.x, op.stride, pad=op.pad, elem_stride=op.elem_stride, **flags)
    elif isinstance(op, UopLoadOp):
        pb.load_uops(pb.uops(list(op.uops), f"uops_{tag}"), op.sram, **flags)
    elif isinstance(op, StoreOp):
        pb.store(op.sram, src["out"].addr + op.offset, op.y, op.x, op.stride, shift=op.shift, clip=op.clip,
                 relu=op.relu, bias=op.bias, **flags)
    elif isinstance(op, GemmOp):
        lp = op.loop
        pb.gemm(lp.bgn, lp.end, iter_out=lp.iter_out, iter_in=lp.iter_in, dst_factor=lp.dst, src_factor=lp.src,
                wgt_factor=lp.wgt, reset=op.reset, overwrite=op.overwrite, **flags)
    elif isinstance(op, AluStep):
        lp = op.loop
        pb.alu(op.op, lp.bgn, lp.end, imm=op.imm, iter_out=lp.iter_out, iter_in=lp.iter_in, dst_factor=lp.dst,
               src_factor=lp.src, **flags)
    else:
        raise TypeError(f"not a plan operation: {op!r}")


# ---- drawing ---------------------------------------------------------------------------


def draw_plan(cfg: HwConfig, seed: int, *, max_rounds: int = 6) -> Plan:
    """A random legal plan for ``cfg``, fully determined by ``seed``."""
    rng = random.Random(seed)
    # A stream of its own decides on a deep plan, so every other seed draws what it always drew.
    deep = cfg.dep_queue_depth > _OVER_DEPTH_MAX and random.Random(f"deep-{seed}").random() < _DEEP_SHARE
    return _Drawer(cfg, rng, random.Random(f"gather-{seed}")).draw(max_rounds, deep=deep)


@dataclass(frozen=True)
class _Slices:
    """Per buffer kind: the base of each thread's slice and the slice size."""

    base: dict[str, tuple[int, ...]]
    size: dict[str, int]


class _Drawer:
    def __init__(self, cfg: HwConfig, rng: random.Random, gather_rng: random.Random | None = None) -> None:
        self.cfg, self.rng = cfg, rng
        # Gathering LOADs draw from a stream of their own: a plan without one is what the seed always drew.
        self.gather_rng = gather_rng or random.Random(0)
        self.depths = sram_depths(cfg)
        self.written = {k: np.zeros(v, dtype=bool) for k, v in self.depths.items()}
        self.uops: list[Uop | None] = [None] * self.depths["uop"]

    def draw(self, max_rounds: int, *, deep: bool = False) -> Plan:
        rng, cfg = self.rng, self.cfg
        depth = cfg.dep_queue_depth
        if deep:
            return self._draw_deep()
        choices = [t for t in (1, 2, 2, 3, 4, 8, depth) if t <= min(depth, 16)]
        # Only more threads than a token queue holds let a unit run far enough ahead to fill
        # one (see plan.max_threads); the program then has about twice that many rounds.
        over = depth <= _OVER_DEPTH_MAX and rng.random() < 0.1
        threads = rng.randint(depth + 1, min(depth + 2, max_threads(cfg))) if over else rng.choice(choices)
        edge = rng.random() < 0.25
        self.long_rounds = not over and rng.random() < 0.1  # see plan.check_plan: fetch must keep up
        # Half the many-thread programs are compute-bound: one tiny input load and one large bias
        # load per round, so the load module runs a whole token queue ahead (l2c fills); the other
        # half load-bound: three large loads and one 1x1 bias load per round, so compute catches up
        # and c2l fills.
        self.compute_bound = over and rng.random() < 0.5
        self.load_bound = over and not self.compute_bound
        if self.load_bound:
            # Load pops c2l at the start of a round, compute pushes it at the end of one: with
            # depth + 1 threads c2l holds at most depth - 1 tokens when compute pushes.
            threads = min(depth + 2, max_threads(cfg))
        self.slices = self._slices(threads, edge)
        data = DataSpec(rng.getrandbits(32), _DATA_TILES, _DATA_TILES, _DATA_TILES, _DATA_TILES)
        self.data = data
        if over:
            n = rng.randint(threads, 2 * threads + 2)
        else:
            n = rng.randint(1, max_rounds) if threads == 1 else rng.randint(threads, max(threads, max_rounds))
        rounds = tuple(self._round(r % threads) for r in range(n))
        plan = Plan(threads, data, rounds)
        try:
            check_plan(cfg, plan)
        except PlanError as exc:
            raise AssertionError(f"the generator drew an illegal plan: {exc}") from exc
        return plan

    def _draw_deep(self) -> Plan:
        """A plan that fills a token queue of ``dep_queue_depth`` = 512 (``default``, ``wide``).

        A producer can run a whole queue ahead of its consumer only when it is far faster, when
        ``threads > depth`` (else the reverse token stops it first) and when fetch keeps feeding
        it: the consumer's command queue (``cmd_queue_depth`` = 512 too) must hold all the
        rounds in between, so the consumer has *one* instruction per round. Compute-bound plans
        (one 1x1 input load; compute a GEMM reset looping ~200 times over one micro-op) fill
        ``l2c`` (load blocks) and, two rounds on, ``s2c`` (store blocks: compute pops round
        ``r - threads``'s token late); load-bound plans (three input loads of the whole slice;
        compute one 1x1 bias load) fill ``c2l`` (compute blocks). ``threads = depth + 2``
        leaves each SRAM slice only a few elements (``depth // threads``), so compute's slowness is a
        loop, not a large load.
        """
        rng, cfg = self.rng, self.cfg
        threads = cfg.dep_queue_depth + 2
        self.long_rounds = False
        self.compute_bound = rng.random() < 0.5
        self.load_bound = not self.compute_bound
        self.slices = self._slices(threads, edge=True)
        self.data = DataSpec(rng.getrandbits(32), _DATA_TILES, _DATA_TILES, _DATA_TILES, _DATA_TILES)

        def whole(mem: MemType, t: int) -> LoadOp:
            lo, hi = self._region(mem.name.lower(), t)
            return LoadOp(mem, lo, rng.randrange(_DATA_TILES - (hi - lo) + 1), 1, hi - lo, hi - lo, (0, 0, 0, 0))

        # Compute-bound rounds zero their accumulator in a long loop (GEMM reset over one micro-op,
        # factors 0): hundreds of cycles of compute for one of load, without SRAM the slices lack.
        # The micro-ops of all threads (thread t's at index t) are loaded once, in round 0.
        table = UopLoadOp(0, tuple(Uop(self.slices.base["acc"][t], self.slices.base["inp"][t], 0) for t in range(threads)))
        iters = (rng.randint(12, 16), rng.randint(12, 16))
        rounds = []
        for r in range(2 * threads):
            t = r % threads
            if self.compute_bound:
                loads: tuple[LoadOp, ...] = (self._apply(self._tiny_load(MemType.INP, t)),)  # type: ignore[assignment]
                zero = GemmOp(Loop(t, t + 1, *iters), reset=True)
                computes = ((self._apply(table),) if r == 0 else ()) + (self._apply(zero),)  # type: ignore[assignment]
            else:
                loads = tuple(self._apply(whole(MemType.INP, t)) for _ in range(3))  # type: ignore[misc]
                computes = (self._apply(self._tiny_load(MemType.ACC, t)),)
            rounds.append(Round(loads, computes, (self._apply(self._store(t)),)))  # type: ignore[arg-type]
        plan = Plan(threads, self.data, tuple(rounds))
        try:
            check_plan(cfg, plan)
        except PlanError as exc:
            raise AssertionError(f"the generator drew an illegal deep plan: {exc}") from exc
        return plan

    def _slices(self, threads: int, edge: bool) -> _Slices:
        base: dict[str, tuple[int, ...]] = {}
        size: dict[str, int] = {}
        for kind, depth in self.depths.items():
            share = depth // threads
            s = share if edge else min(share, _SMALL_REGION if kind != "uop" else 16)
            # Slices sit at the top of each share, so the last one touches the end of the buffer.
            base[kind] = tuple((t + 1) * share - s for t in range(threads))
            size[kind] = s
        return _Slices(base, size)

    # ---- helpers ------------------------------------------------------------------------
    def _apply(self, op: object) -> object:
        acc = access_of(op, self.uops)
        for buf, idx in acc.writes.items():
            self.written[buf][idx] = True
        if isinstance(op, UopLoadOp):
            self.uops[op.sram:op.sram + len(op.uops)] = list(op.uops)
        return op

    def _region(self, kind: str, t: int) -> tuple[int, int]:
        lo = self.slices.base[kind][t]
        return lo, lo + self.slices.size[kind]

    def _written_in(self, kind: str, t: int) -> np.ndarray:
        lo, hi = self._region(kind, t)
        return lo + np.flatnonzero(self.written[kind][lo:hi])

    def _count(self, typical: int) -> int:
        if self.long_rounds:
            return self.rng.randint(typical, self.cfg.cmd_queue_depth + 4)
        return self.rng.randint(1, typical)

    # ---- rounds -------------------------------------------------------------------------
    def _round(self, t: int) -> Round:
        rng = self.rng
        if self.compute_bound:
            loads: tuple[LoadOp, ...] = (self._apply(self._tiny_load(MemType.INP, t)),)  # type: ignore[assignment]
        else:
            n_loads = 3 if self.load_bound else self._count(3)
            loads = tuple(self._apply(self._load(rng.choice((MemType.INP, MemType.WGT)), t, big=self.load_bound))
                          for _ in range(n_loads))
        computes: list[ComputeOp] = []
        lo, hi = self._region("uop", t)
        if self.compute_bound:
            # Two large bias loads: compute must be several times slower than a one-tile input load
            # (whose DRAM latency alone is tens of cycles) for load to get a whole queue ahead.
            computes += [self._apply(self._load(MemType.ACC, t, big=True)) for _ in range(2)]  # type: ignore[misc]
            return Round(loads, tuple(computes), (self._apply(self._store(t)),))
        if self.load_bound:
            computes.append(self._apply(self._tiny_load(MemType.ACC, t)))  # type: ignore[arg-type]
            return Round(loads, tuple(computes), (self._apply(self._store(t)),))
        if self.uops[lo] is None and rng.random() < 0.15:
            # A thread's first round with a single compute instruction (a bias load): it alone
            # carries the l2c pop and the c2s push (and the c2l push), a flag combination no
            # longer round has.
            computes.append(self._apply(self._load(MemType.ACC, t)))  # type: ignore[arg-type]
            stores = tuple(self._apply(self._store(t)) for _ in range(self._count(2)))
            return Round(loads, tuple(computes), stores)
        if self._written_in("acc", t).size and rng.random() < 0.15:
            split = self._split_computes(t)
            stores = tuple(self._apply(self._store(t)) for _ in range(self._count(2)))
            return Round(loads, split, stores, 1, 1)
        if self.uops[lo] is None or rng.random() < 0.3:
            computes.append(self._apply(self._uop_load(t)))  # type: ignore[arg-type]
        for _ in range(self._count(4)):
            computes.append(self._apply(self._compute(t)))  # type: ignore[arg-type]
        if not self._written_in("acc", t).size:
            computes.append(self._apply(self._reset_all(t)))  # type: ignore[arg-type]
        stores = tuple(self._apply(self._store(t)) for _ in range(self._count(2)))
        pop_s2c, push_c2l = self._token_positions(computes)
        return Round(loads, tuple(computes), stores, pop_s2c, push_c2l)  # type: ignore[arg-type]

    def _split_computes(self, t: int) -> tuple[ComputeOp, ...]:
        """Micro-op load, GEMM, then ALU steps; the GEMM both waits for the stores (s2c) and
        releases the inputs to the loads (c2l): it is the first accumulator write and the last
        input read, so the two tokens can share an instruction that is neither first nor last."""
        computes: list[ComputeOp] = [self._apply(self._uop_load(t)),  # type: ignore[list-item]
                                     self._apply(self._loop_op(t, lambda lp: GemmOp(lp)))]  # type: ignore[list-item]
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(list(AluOp))
            computes.append(self._apply(self._loop_op(t, lambda lp: AluStep(op, lp, self._imm(op)))))  # type: ignore[arg-type]
        return tuple(computes)

    def _token_positions(self, computes: list[ComputeOp]) -> tuple[int, int]:
        """Late s2c pop / early c2l push: up to the first accumulator write / from the last input read."""
        rng = self.rng
        writes = [k for k, op in enumerate(computes) if not isinstance(op, UopLoadOp)]
        reads = [k for k, op in enumerate(computes) if isinstance(op, GemmOp) and not op.reset]
        last = len(computes) - 1
        pop_s2c = rng.randint(0, writes[0] if writes else last) if rng.random() < 0.4 else 0
        push_c2l = rng.randint(reads[-1] if reads else 0, last) if rng.random() < 0.4 else last
        return pop_s2c, push_c2l

    def _tiny_load(self, mem: MemType, t: int) -> LoadOp:
        lo, _ = self._region(mem.name.lower(), t)
        return LoadOp(mem, lo, self.rng.randrange(_DATA_TILES), 1, 1, 1, (0, 0, 0, 0))

    def _load(self, mem: MemType, t: int, big: bool = False) -> LoadOp:
        rng = self.rng
        kind = mem.name.lower()
        lo, hi = self._region(kind, t)
        n_src = _DATA_TILES
        for _ in range(8):
            y, x = (rng.randint(3, 4), rng.randint(5, 6)) if big else (rng.randint(1, 4), rng.randint(1, 6))
            pad = tuple(rng.choice((0, 0, 0, 1, 2, 3)) for _ in range(4))
            if (pad[0] + y + pad[1]) * (pad[2] + x + pad[3]) <= hi - lo:
                break
        else:
            y, x, pad = 1, 1, (0, 0, 0, 0)
        stride = x + rng.choice((0, 0, 1, 3))
        if (y - 1) * stride + x > n_src:
            stride = x
        offset = rng.randint(0, n_src - ((y - 1) * stride + x))
        op = LoadOp(mem, 0, offset, y, x, stride, pad)  # type: ignore[arg-type]
        n = op.sram_elems
        # ACC (bias) loads aim at micro-op destinations, so GEMMs and ALUs then read them.
        ulo, uhi = self._region("uop", t)
        dsts = [u.dst for u in self.uops[ulo:uhi] if u is not None]
        if mem == MemType.ACC and dsts and rng.random() < 0.7:
            sram = min(max(lo, rng.choice(dsts) - rng.randint(0, 2)), hi - n)
        else:
            sram = rng.choice((lo, hi - n, rng.randint(lo, hi - n)))
        return self._gather(LoadOp(mem, sram, offset, y, x, stride, pad), n_src)  # type: ignore[arg-type]

    def _gather(self, op: LoadOp, n_src: int) -> LoadOp:
        """``op`` as a gathering LOAD (element stride 2..4, the same SRAM block) for about half the loads that
        could be one (more than one element per row, no x padding); its DRAM walk is redrawn from the gather
        stream, so the main stream, and every plan without a gathering LOAD, is unchanged."""
        g = self.gather_rng
        if g.random() >= 0.5 or op.x < 2 or op.pad[2] or op.pad[3]:
            return op
        step = g.randint(2, 4)
        span = (op.x - 1) * step + 1
        stride = span + g.choice((0, 0, 1, 3))
        if (op.y - 1) * stride + span > n_src:
            stride = span
        if (op.y - 1) * stride + span > n_src:
            return op
        return replace(op, offset=g.randint(0, n_src - ((op.y - 1) * stride + span)), stride=stride, elem_stride=step)

    def _uop_load(self, t: int) -> UopLoadOp:
        rng = self.rng
        lo, hi = self._region("uop", t)
        n = rng.randint(1, min(8, hi - lo))
        base = rng.choice((lo, hi - n, rng.randint(lo, hi - n)))
        if self.uops[lo] is None:
            base = lo
        uops = []
        for _ in range(n):
            fields = [self._pick("acc", t), self._pick("inp", t), self._pick("wgt", t)]
            uops.append(Uop(*fields))
        return UopLoadOp(base, tuple(uops))

    def _pick(self, kind: str, t: int) -> int:
        """An index in the thread's slice of ``kind``: usually a written one."""
        ok = self._written_in(kind, t)
        if ok.size and self.rng.random() < 0.9:
            return int(self.rng.choice(ok))
        lo, hi = self._region(kind, t)
        return self.rng.randrange(lo, hi)

    def _compute(self, t: int) -> ComputeOp:
        rng = self.rng
        pick = rng.random()
        if pick < 0.15:
            return self._load(MemType.ACC, t)
        if pick < 0.25:
            return self._uop_load(t)
        if pick < 0.30:
            return self._loop_op(t, lambda lp: GemmOp(lp, reset=True))
        if pick < 0.38:
            return self._loop_op(t, lambda lp: GemmOp(lp, overwrite=True))
        if pick < 0.65:
            return self._loop_op(t, lambda lp: GemmOp(lp))
        op = rng.choice(list(AluOp))
        if rng.random() < 0.5:
            return self._loop_op(t, lambda lp: AluStep(op, lp, None))
        return self._loop_op(t, lambda lp: AluStep(op, lp, self._imm(op)))

    def _imm(self, op: AluOp) -> int:
        rng = self.rng
        if op == AluOp.SHR:
            w = self.cfg.acc_width
            return rng.randint(-(w + 2), w + 2)  # negative amounts shift left; beyond the width saturate
        if op == AluOp.MUL:
            return rng.choice((rng.randint(-8, 8), rng.randint(-(1 << 15), (1 << 15) - 1)))
        return rng.randint(-(1 << 15), (1 << 15) - 1)

    def _loop_op(self, t: int, make) -> ComputeOp:  # type: ignore[no-untyped-def]
        """``make(loop)`` for a random loop whose accesses are legal; simpler loops when none is found."""
        rng = self.rng
        lo, hi = self._region("uop", t)
        loaded = [k for k in range(lo, hi) if self.uops[k] is not None]
        for attempt in range(_LOOP_TRIES):
            bgn = rng.choice(loaded)
            end = bgn + 1
            while end < hi and self.uops[end] is not None and rng.random() < 0.6:
                end += 1
            simple = attempt >= _LOOP_TRIES // 2
            iters = (1, 1) if simple else (rng.randint(1, 4), rng.randint(1, 4))
            zero = simple or rng.random() < 0.2
            fac = (lambda: (0, 0)) if zero else (lambda: (rng.randint(0, 3), rng.randint(0, 3)))
            loop = Loop(bgn, end, iters[0], iters[1], fac(), fac(), fac())
            op = make(loop)
            if self._legal_here(op, t):
                return op
        return self._reset_all(t)

    def _legal_here(self, op: object, t: int) -> bool:
        try:
            acc = access_of(op, self.uops)
        except PlanError:  # e.g. a MOV reading what an earlier iteration of it writes
            return False
        for buf, idx in list(acc.reads.items()) + list(acc.writes.items()):
            lo, hi = self._region(buf, t)
            if idx.size and (idx.min() < lo or idx.max() >= hi):
                return False
        return all(self.written[buf][idx].all() for buf, idx in acc.reads.items())

    def _reset_all(self, t: int) -> GemmOp:
        """GEMM reset over the first loaded micro-op: always legal, it only writes its destination."""
        lo, _ = self._region("uop", t)
        return GemmOp(Loop(lo, lo + 1), reset=True)

    def _store(self, t: int) -> StoreOp:
        rng = self.rng
        lo, hi = self._region("acc", t)
        ok = self.written["acc"][lo:hi]
        y, x = rng.randint(1, 3), rng.randint(1, 4)
        n = y * x
        window = np.convolve(ok.astype(np.int64), np.ones(n, dtype=np.int64), "valid") == n if n <= ok.size else []
        starts = np.flatnonzero(window)
        if not len(starts):
            y, x = 1, 1
            starts = np.flatnonzero(ok)
        sram = lo + int(rng.choice(starts))
        stride = x + rng.choice((0, 0, 2))
        offset = rng.randint(0, _DATA_TILES - ((y - 1) * stride + x))
        bias = None
        if rng.random() < 0.4:  # a bias per row (step 1) or one for the block (step 0), from written accumulators
            step = rng.randint(0, 1) if y > 1 else 0
            fits = [lo + k for k in range(hi - lo - (y - 1) * step) if ok[k:k + (y - 1) * step + 1:max(step, 1)].all()]
            if fits:
                bias = (int(rng.choice(fits)), step)
        if rng.random() < 0.5:  # half plain narrowing stores, half requantizing ones
            return StoreOp(sram, offset, y, x, stride, bias=bias)
        return StoreOp(sram, offset, y, x, stride, rng.randint(0, self.cfg.acc_width - 1), rng.random() < 0.5,
                       rng.random() < 0.5, bias)
