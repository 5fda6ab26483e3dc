"""insert_dep_token: dependency tokens between the load, compute and store modules.

The three modules run their own instructions in order but independently of each other;
an instruction that touches SRAM another module wrote (read-after-write) or still reads
(write-after-read), or that overwrites another module's output (write-after-write), must
wait for it.  For every instruction ``j`` this pass finds, per other module ``A``, the
newest earlier instruction ``i`` of ``A`` whose SRAM ranges conflict with ``j``'s.  If
``i`` is newer than the last instruction of ``A`` that ``j``'s module already waited for,
``i`` pushes a token towards ``j``'s module and ``j`` pops it.  Tokens are FIFO counts, so
pushes and pops pair up in order; every push has exactly one pop, and only real
conflicts synchronize (a load into thread 1's region never waits for thread 0's GEMM).
A FINISH that waits for everything still outstanding ends the stream.

Load and store share no queue and no SRAM (stores read the accumulator, loads write the
input and weight buffers), so every conflict is between neighbouring modules.
"""

from __future__ import annotations

from collections import defaultdict

from vdla_hw.isa import DepFlags, Module

from vdla.compiler.tir import Allocate, AttrStmt, PrimFunc, SeqStmt, Stmt

from ..decode import Range, module_and_ranges
from ..stmt import DEPS, finish
from .common import flat_stream

# (waiting module, module waited for) -> (flag on the waiter, flag on the producer)
_FLAGS: dict[tuple[Module, Module], tuple[str, str]] = {
    (Module.COMPUTE, Module.LOAD): ("pop_prev", "push_next"),
    (Module.LOAD, Module.COMPUTE): ("pop_next", "push_prev"),
    (Module.STORE, Module.COMPUTE): ("pop_prev", "push_next"),
    (Module.COMPUTE, Module.STORE): ("pop_next", "push_prev"),
}


def _overlap(a: Range, b: Range) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def _conflicts(reads: list[Range], writes: list[Range], o_reads: list[Range], o_writes: list[Range]) -> bool:
    return (any(_overlap(w, r) for w in writes for r in o_reads) or any(_overlap(w, o) for w in writes for o in o_writes)
            or any(_overlap(r, o) for r in reads for o in o_writes))


def insert_dep_token(func: PrimFunc) -> PrimFunc:
    """Add dependency-token flags to the instruction stream of ``func`` (after ``unroll_stream``) and a FINISH."""
    arenas, insns = flat_stream(func, "insert_dep_token")
    info = [module_and_ranges(s) for s in insns]
    flags: list[dict[str, bool]] = [dict() for _ in insns]
    # Per (module, scope): indices of that module's instructions touching the scope, oldest first.
    history: dict[tuple[Module, str], list[int]] = defaultdict(list)
    synced: dict[tuple[Module, Module], int] = defaultdict(lambda: -1)

    def wait(j: int, module: Module, reads: list[Range], writes: list[Range], everything: bool) -> None:
        for other in Module:
            pair = (module, other)
            if other == module or pair not in _FLAGS:
                continue
            need = -1
            for scope in {r[0] for r in reads + writes} | ({s for (m, s) in history if m == other} if everything else set()):
                for i in reversed(history[(other, scope)]):
                    if i <= max(need, synced[pair]):
                        break
                    _, o_reads, o_writes = info[i]
                    if everything or _conflicts(reads, writes, o_reads, o_writes):
                        need = i
                        break
            if need > synced[pair]:
                pop, push = _FLAGS[pair]
                flags[j][pop] = True
                flags[need][push] = True
                synced[pair] = need

    for j, (module, reads, writes) in enumerate(info):
        wait(j, module, reads, writes, everything=False)
        for scope in {r[0] for r in reads + writes}:
            history[(module, scope)].append(j)
    insns.append(finish())
    flags.append({})
    wait(len(insns) - 1, Module.COMPUTE, [], [], everything=True)
    out = [AttrStmt(f"{info[k][0].name.lower() if k < len(info) else 'compute'}", DEPS, DepFlags(**fl), s) if fl else s
           for k, (s, fl) in enumerate(zip(insns, flags))]
    stream: Stmt = SeqStmt(tuple(out))
    for buf in reversed(arenas):
        stream = Allocate(buf, stream)
    return func.with_body(stream)
