"""A fuzz program as immutable data, and the rules that make it legal.

A :class:`Plan` is what the generator draws, what the shrinker edits and what a
regression test stores: a few DRAM source buffers (sizes and a data seed), the
number of virtual threads, and *rounds*.  Each round is one pass through the
three modules: loads (load module, INP/WGT), computes (compute module: micro-op
and bias loads, GEMM, ALU) and stores (store module).  SRAM addresses are
absolute, so dropping a round never moves another round's accesses.

Dependency tokens are not part of the plan: :func:`vdla.fuzz.generator.build_program`
derives them from the round structure (round ``r`` runs on virtual thread
``r % threads``), and :func:`check_plan` proves that those tokens order every
conflicting pair of accesses and that every SRAM element is written before it is
read.  A plan that passes :func:`check_plan` is therefore race-free: every correct
backend computes the same DRAM, whatever its timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import MAX_ELEM_STRIDE, AluOp, MemType, Uop

from vdla.simulator.access import copy_forwarding_hazard

SRAM_KINDS: tuple[str, ...] = ("uop", "inp", "wgt", "acc")


class PlanError(ValueError):
    """A plan breaks a legality rule (bounds, read of unwritten SRAM, unordered conflict)."""


@dataclass(frozen=True)
class LoadOp:
    """LOAD of ``mem`` (INP/WGT in the load module, ACC in compute) from its DRAM source buffer.

    ``offset`` is the first DRAM element inside the source buffer; ``pad`` is
    (top, bottom, left, right) zero padding; ``elem_stride`` > 1 gathers (element ``(r, c)`` at
    ``offset + r * stride + c * elem_stride``; no x padding then).
    """

    mem: MemType
    sram: int
    offset: int
    y: int
    x: int
    stride: int
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)
    elem_stride: int = 1

    @property
    def span(self) -> int:
        """DRAM elements from a row's first element to one past its last."""
        return (self.x - 1) * self.elem_stride + 1

    @property
    def sram_elems(self) -> int:
        """SRAM elements written (data and padding)."""
        return (self.pad[0] + self.y + self.pad[1]) * (self.pad[2] + self.x + self.pad[3])


@dataclass(frozen=True)
class UopLoadOp:
    """LOAD UOP of the micro-op list ``uops`` to micro-op SRAM ``sram`` (compute module)."""

    sram: int
    uops: tuple[Uop, ...]


@dataclass(frozen=True)
class Loop:
    """A micro-op sub-range ``[bgn, end)`` run in a two-level loop with (outer, inner) index factors."""

    bgn: int
    end: int
    iter_out: int = 1
    iter_in: int = 1
    dst: tuple[int, int] = (0, 0)
    src: tuple[int, int] = (0, 0)
    wgt: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class GemmOp:
    """GEMM (or, with ``reset``, zeroing of the destination accumulators; with ``overwrite``, the
    products written without reading the accumulators) over ``loop``."""

    loop: Loop
    reset: bool = False
    overwrite: bool = False


@dataclass(frozen=True)
class AluStep:
    """ALU ``op`` over ``loop`` with immediate ``imm``, or the accumulator operand when ``imm`` is None."""

    op: AluOp
    loop: Loop
    imm: int | None = None


@dataclass(frozen=True)
class StoreOp:
    """STORE of ``y x x`` accumulators from ``sram`` to the output buffer at element ``offset``,
    requantized by ``shift`` / ``clip`` / ``relu`` (all off: the plain narrowing); ``bias`` =
    (first accumulator, step 0 or 1) adds ``acc[first + row * step]`` to each row first."""

    sram: int
    offset: int
    y: int
    x: int
    stride: int
    shift: int = 0
    clip: bool = False
    relu: bool = False
    bias: tuple[int, int] | None = None


ComputeOp = Union[LoadOp, UopLoadOp, GemmOp, AluStep]


def _check_fetch_keeps_up(cfg: HwConfig, plan: Plan) -> None:
    """With more threads than a token queue holds, a producer blocked on a full queue waits for a
    consumer ``threads - dep_queue_depth`` rounds further on in program order; fetch reaches that
    consumer's instructions only if the blocked module's command queue holds its instructions of
    the rounds in between (else fetch, the producer and the consumer wait on each other)."""
    window = plan.threads - cfg.dep_queue_depth + 1
    for name in ("loads", "computes", "stores"):
        sizes = [len(getattr(rnd, name)) for rnd in plan.rounds]
        for r in range(len(sizes)):
            if sum(sizes[r:r + window]) > cfg.cmd_queue_depth:
                raise PlanError(f"rounds {r}..{r + window - 1} have {sum(sizes[r:r + window])} {name[:-1]} instructions, "
                                f"more than cmd_queue_depth={cfg.cmd_queue_depth}: with threads={plan.threads} > "
                                f"dep_queue_depth={cfg.dep_queue_depth} the program could deadlock; use fewer threads "
                                "or shorter rounds")


def max_threads(cfg: HwConfig) -> int:
    """The most virtual threads a plan may have: ``2 * dep_queue_depth``.

    Up to ``dep_queue_depth`` threads no token queue can fill (a module runs at most
    ``threads`` rounds ahead of its consumer).  Beyond it a queue can fill and its producer
    stalls, which is legal; a deadlock needs two queues full at once in opposite directions.
    With load at round ``a`` and compute at ``b``, ``l2c`` is full when load pushes and
    ``a - b = depth + 1``, ``c2l`` is full when compute pushes and ``a - b = threads - 1 - depth``:
    both need ``threads = 2 * depth + 2``.  The same holds for compute and store
    (``c2s``/``s2c``).  Fetch is the other party: beyond ``dep_queue_depth`` threads the rounds
    must also be short enough for the command queues (``_check_fetch_keeps_up``).
    """
    return 2 * cfg.dep_queue_depth


@dataclass(frozen=True)
class Round:
    """One pass through the modules; each list holds at least one instruction (it carries the tokens).

    ``pop_s2c`` is the compute instruction that waits for the store module (of round
    ``r - threads``) to release the accumulators, ``push_c2l`` the one after which the
    load module may overwrite inputs and weights again; positions past the end mean
    the last instruction.  Other tokens sit on the first or last instruction.
    """

    loads: tuple[LoadOp, ...]
    computes: tuple[ComputeOp, ...]
    stores: tuple[StoreOp, ...]
    pop_s2c: int = 0
    push_c2l: int = 1 << 30

    def token_positions(self) -> tuple[int, int]:
        """(pop_s2c, push_c2l) clipped to the compute list."""
        last = len(self.computes) - 1
        return min(self.pop_s2c, last), min(self.push_c2l, last)


@dataclass(frozen=True)
class DataSpec:
    """DRAM contents: source buffers of ``inp``/``wgt``/``acc`` tiles and the output buffer.

    Values are drawn from ``seed``, uniform in the type's range clipped to
    ``[-amplitude, amplitude]`` (the shrinker lowers it to make a failure readable).
    """

    seed: int
    n_inp: int
    n_wgt: int
    n_acc: int
    n_out: int
    amplitude: int = 1 << 30


@dataclass(frozen=True)
class Plan:
    """A whole fuzz program (see the module docstring)."""

    threads: int
    data: DataSpec
    rounds: tuple[Round, ...]

    @property
    def insn_count(self) -> int:
        """Instructions of the built program, FINISH included."""
        return 1 + sum(len(r.loads) + len(r.computes) + len(r.stores) for r in self.rounds)


# ---- access sets -----------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """SRAM elements one instruction reads and writes, by buffer kind."""

    reads: dict[str, np.ndarray]
    writes: dict[str, np.ndarray]


def _span(base: int, n: int) -> np.ndarray:
    return np.arange(base, base + n, dtype=np.int64)


def loop_indices(loop: Loop, fields: np.ndarray, factors: tuple[int, int]) -> np.ndarray:
    """Element indices a loop addresses through one micro-op field (same order as the hardware)."""
    outer = np.arange(loop.iter_out, dtype=np.int64)[:, None, None] * factors[0]
    inner = np.arange(loop.iter_in, dtype=np.int64)[None, :, None] * factors[1]
    return (fields[None, None, :] + outer + inner).reshape(-1)


def access_of(op: object, uops: list[Uop | None]) -> Access:
    """The SRAM access sets of ``op`` given the micro-op buffer contents ``uops``.

    Raises :class:`PlanError` when a loop reads a micro-op slot that was never loaded.
    """
    if isinstance(op, LoadOp):
        return Access({}, {op.mem.name.lower(): _span(op.sram, op.sram_elems)})
    if isinstance(op, UopLoadOp):
        return Access({}, {"uop": _span(op.sram, len(op.uops))})
    if isinstance(op, StoreOp):
        reads = _span(op.sram, op.y * op.x)
        if op.bias is not None:
            reads = np.concatenate([reads, op.bias[0] + np.arange(op.y, dtype=np.int64) * op.bias[1]])
        return Access({"acc": reads}, {})
    loop = op.loop  # type: ignore[attr-defined]
    if loop.end > len(uops) or loop.bgn >= loop.end:
        raise PlanError(f"micro-op range [{loop.bgn}, {loop.end}) is empty or outside the micro-op buffer")
    used = uops[loop.bgn:loop.end]
    if any(u is None for u in used):
        raise PlanError(f"micro-op range [{loop.bgn}, {loop.end}) reads micro-op slots never loaded")
    dst_f = np.array([u.dst for u in used], dtype=np.int64)  # type: ignore[union-attr]
    src_f = np.array([u.src for u in used], dtype=np.int64)  # type: ignore[union-attr]
    wgt_f = np.array([u.wgt for u in used], dtype=np.int64)  # type: ignore[union-attr]
    dst = loop_indices(loop, dst_f, loop.dst)
    reads = {"uop": _span(loop.bgn, loop.end - loop.bgn)}
    if isinstance(op, GemmOp):
        if op.overwrite:
            reads.update(inp=loop_indices(loop, src_f, loop.src), wgt=loop_indices(loop, wgt_f, loop.wgt))
        elif not op.reset:
            reads.update(acc=dst, inp=loop_indices(loop, src_f, loop.src), wgt=loop_indices(loop, wgt_f, loop.wgt))
    else:
        src = None if op.imm is not None else loop_indices(loop, src_f, loop.src)
        if op.op == AluOp.MOV:  # a copy reads only its operand, and no earlier iteration's write
            if src is not None and copy_forwarding_hazard(dst, src) is not None:
                raise PlanError(f"MOV over {loop} reads an accumulator an earlier iteration of it writes")
            reads["acc"] = dst[:0] if src is None else src
        else:
            reads["acc"] = dst if src is None else np.concatenate([dst, src])
    return Access(reads, {"acc": dst})


def sram_depths(cfg: HwConfig) -> dict[str, int]:
    """Depth (elements) of every SRAM buffer."""
    return {"uop": cfg.uop_buff_depth, "inp": cfg.inp_buff_depth, "wgt": cfg.wgt_buff_depth, "acc": cfg.acc_buff_depth}


# ---- legality ----------------------------------------------------------------------------


def check_plan(cfg: HwConfig, plan: Plan) -> None:
    """Raise :class:`PlanError` unless ``plan`` is legal and race-free on ``cfg`` (see the module docstring).

    Ordering the tokens give (round ``r`` on thread ``r % d``): load(r) starts after
    compute(r - d) retired, compute(r) after load(r) and store(r - d), store(r) after
    compute(r); each module runs its own instructions in order.  So a load of round
    ``r`` may overlap computes of rounds ``r-d+1 .. r-1``, and a compute of round ``q``
    stores of rounds ``q-d+1 .. q-1``: those pairs must not touch the same SRAM element.
    Compute instructions before the round's ``pop_s2c`` may also overlap the stores of
    round ``q - d``, and those after its ``push_c2l`` the loads of round ``q + d``.
    """
    d = plan.threads
    if not 1 <= d <= max_threads(cfg):
        raise PlanError(f"threads={d} must be in [1, {max_threads(cfg)}] (2 x dep_queue_depth={cfg.dep_queue_depth}: "
                        "more threads could fill two token queues in opposite directions at once and deadlock)")
    if not plan.rounds:
        raise PlanError("a plan needs at least one round")
    if d > cfg.dep_queue_depth:
        _check_fetch_keeps_up(cfg, plan)
    _check_data(plan.data)
    depths = sram_depths(cfg)
    written = {k: np.zeros(depths[k], dtype=bool) for k in SRAM_KINDS}
    uops: list[Uop | None] = [None] * depths["uop"]
    load_writes: list[np.ndarray] = []   # per round: inp/wgt elements written (wgt offset by inp depth)
    comp_reads: list[np.ndarray] = []    # per round: inp/wgt elements read by compute
    comp_writes: list[np.ndarray] = []   # per round: acc elements written by compute
    late_reads: list[np.ndarray] = []    # per round: inp/wgt read by computes after push_c2l
    early_writes: list[np.ndarray] = []  # per round: acc written by computes before pop_s2c
    store_reads: list[np.ndarray] = []   # per round: acc elements read by stores
    for r, rnd in enumerate(plan.rounds):
        if not (rnd.loads and rnd.computes and rnd.stores):
            raise PlanError(f"round {r}: every module needs at least one instruction per round (it carries the tokens)")
        lw, cr, cw, sr = [], [], [], []
        pop_s2c, push_c2l = rnd.token_positions()
        for kind_ops, module in ((rnd.loads, "load"), (rnd.computes, "compute"), (rnd.stores, "store")):
            for op in kind_ops:
                _check_op(cfg, plan.data, op, module, r)
                acc = access_of(op, uops)
                _check_access(acc, written, depths, r, op)
                for buf, idx in acc.writes.items():
                    written[buf][idx] = True
                if isinstance(op, UopLoadOp):
                    uops[op.sram:op.sram + len(op.uops)] = list(op.uops)
                lw += [_flat(acc.writes, depths)] if module == "load" else []
                cr += [_flat(acc.reads, depths)] if module == "compute" else []
                cw += [acc.writes.get("acc", np.zeros(0, np.int64))] if module == "compute" else []
                sr += [acc.reads["acc"]] if module == "store" else []
        load_writes.append(np.unique(np.concatenate(lw)))
        comp_reads.append(np.unique(np.concatenate(cr)))
        comp_writes.append(np.unique(np.concatenate(cw)))
        store_reads.append(np.unique(np.concatenate(sr)))
        late_reads.append(np.unique(np.concatenate([np.zeros(0, np.int64)] + cr[push_c2l + 1:])))
        early_writes.append(np.unique(np.concatenate([np.zeros(0, np.int64)] + cw[:pop_s2c])))
    # Rounds q in (r - d, r) overlap round r whole: their reads are counted per element in a sliding
    # window (a plan of 1,000 rounds over 500 threads would take minutes pairwise); round r - d
    # overlaps only in part. A round with any conflict is re-checked pair by pair for the message.
    in_reads = np.zeros(depths["inp"] + depths["wgt"], np.int32)
    acc_reads = np.zeros(depths["acc"], np.int32)
    for r in range(len(plan.rounds)):
        if r >= 1:
            in_reads[comp_reads[r - 1]] += 1
            acc_reads[store_reads[r - 1]] += 1
        if r >= d:
            in_reads[comp_reads[r - d]] -= 1
            acc_reads[store_reads[r - d]] -= 1
        clash = bool(in_reads[load_writes[r]].any() or acc_reads[comp_writes[r]].any())
        if r >= d:
            clash = clash or bool(np.intersect1d(load_writes[r], late_reads[r - d]).size
                                  or np.intersect1d(early_writes[r], store_reads[r - d]).size)
        if clash:
            _raise_conflict(r, d, load_writes, comp_reads, late_reads, comp_writes, early_writes, store_reads)


def _raise_conflict(r: int, d: int, load_writes: list[np.ndarray], comp_reads: list[np.ndarray],
                    late_reads: list[np.ndarray], comp_writes: list[np.ndarray], early_writes: list[np.ndarray],
                    store_reads: list[np.ndarray]) -> None:
    """The first unordered pair of round ``r`` with an earlier round, as a :class:`PlanError`."""
    for q in range(max(0, r - d), r):
        reads = comp_reads[q] if q > r - d else late_reads[q]
        if np.intersect1d(load_writes[r], reads).size:
            raise PlanError(f"loads of round {r} overwrite input/weight SRAM that computes of round {q} may still read")
        writes = comp_writes[r] if q > r - d else early_writes[r]
        if np.intersect1d(writes, store_reads[q]).size:
            raise PlanError(f"computes of round {r} overwrite accumulators that stores of round {q} may still read")
    raise AssertionError(f"round {r}: a conflict was counted but no pair has it")


def _flat(sets: dict[str, np.ndarray], depths: dict[str, int]) -> np.ndarray:
    """INP and WGT indices in one array (WGT shifted past the INP buffer)."""
    parts = [sets.get("inp", np.zeros(0, np.int64)), sets.get("wgt", np.zeros(0, np.int64)) + depths["inp"]]
    return np.concatenate(parts)


def _check_data(data: DataSpec) -> None:
    if min(data.n_inp, data.n_wgt, data.n_acc, data.n_out) < 1 or data.amplitude < 0:
        raise PlanError(f"data buffers need at least one element each and amplitude >= 0: {data}")


_MODULE_OPS = {"load": (LoadOp,), "compute": (LoadOp, UopLoadOp, GemmOp, AluStep), "store": (StoreOp,)}


def _check_op(cfg: HwConfig, data: DataSpec, op: object, module: str, r: int) -> None:
    if not isinstance(op, _MODULE_OPS[module]):
        raise PlanError(f"round {r}: {type(op).__name__} cannot run in the {module} module")
    if isinstance(op, LoadOp):
        allowed = (MemType.INP, MemType.WGT) if module == "load" else (MemType.ACC,)
        n_src = {MemType.INP: data.n_inp, MemType.WGT: data.n_wgt, MemType.ACC: data.n_acc}.get(op.mem, 0)
        if op.mem not in allowed:
            raise PlanError(f"round {r}: {op.mem.name} load in the {module} module")
        _check_block(op.y, op.span, op.stride, op.offset, n_src, f"round {r}: {op}")
        if min(op.pad) < 0 or max(op.pad) >= 1 << 4:
            raise PlanError(f"round {r}: padding {op.pad} out of range")
        if not 1 <= op.elem_stride <= MAX_ELEM_STRIDE or (op.elem_stride > 1 and (op.pad[2] or op.pad[3])):
            raise PlanError(f"round {r}: element stride {op.elem_stride} outside [1, {MAX_ELEM_STRIDE}] or "
                            f"with x padding {op.pad[2:]}")
    elif isinstance(op, StoreOp):
        _check_block(op.y, op.x, op.stride, op.offset, data.n_out, f"round {r}: {op}")
    elif isinstance(op, UopLoadOp):
        if not op.uops:
            raise PlanError(f"round {r}: empty micro-op load")
    else:
        loop = op.loop  # type: ignore[attr-defined]
        if loop.iter_out < 1 or loop.iter_in < 1 or min(*loop.dst, *loop.src, *loop.wgt) < 0:
            raise PlanError(f"round {r}: loop {loop} needs iterations >= 1 and factors >= 0")
        if isinstance(op, AluStep) and op.imm is not None and not -(1 << 15) <= op.imm < 1 << 15:
            raise PlanError(f"round {r}: immediate {op.imm} does not fit 16 bits")


def _check_block(y: int, x: int, stride: int, offset: int, n: int, what: str) -> None:
    if y < 1 or x < 1 or stride < x or offset < 0 or offset + (y - 1) * stride + x > n:
        raise PlanError(f"{what}: block outside its {n}-element DRAM buffer or with stride < x")


def _check_access(acc: Access, written: dict[str, np.ndarray], depths: dict[str, int], r: int, op: object) -> None:
    for buf, idx in list(acc.writes.items()) + list(acc.reads.items()):
        if idx.size and (idx.min() < 0 or idx.max() >= depths[buf]):
            raise PlanError(f"round {r}: {type(op).__name__} addresses {buf} SRAM outside [0, {depths[buf]})")
    for buf, idx in acc.reads.items():
        if idx.size and not written[buf][idx].all():
            raise PlanError(f"round {r}: {type(op).__name__} reads {buf} SRAM never written")


def is_legal(cfg: HwConfig, plan: Plan) -> bool:
    """True when :func:`check_plan` accepts ``plan``."""
    try:
        check_plan(cfg, plan)
    except PlanError:
        return False
    return True
