"""Primitives that annotate loops and buffers: vectorize, parallel, unroll, bind, pragma,
storage_align, double_buffer. The passes in ``tir.transform`` act on the annotations."""
from __future__ import annotations

from typing import Any

from ..tir.functor import uses_var
from ..tir.ir import Allocate, AttrStmt, For, ForKind, IntImm, IterKind, PrimFunc, Var
from .errors import LoopKindError, ScheduleError
from .loop_transform import get_loop
from .tree import blocks_in, replace, rewrap, strip_root


class StorageError(ScheduleError):
    """storage_align/double_buffer on a buffer that is not a schedulable intermediate."""


def _bound_iters(loop: For) -> list[tuple[str, str]]:
    """``(block, iterator kind)`` of every block iterator whose binding uses the loop."""
    out = []
    for r, _ in blocks_in(loop.body):
        for iv, val in zip(r.block.iter_vars, r.iter_values):
            if uses_var(val, {loop.loop_var}):
                out.append((r.block.name, iv.kind.value))
    return out


def _with_kind(func: PrimFunc, var: Var, kind: ForKind, what: str,
               spatial_only: bool) -> PrimFunc:
    loop, _ = get_loop(func, var)
    if spatial_only:
        for block, kind_ in _bound_iters(loop):
            if kind_ != IterKind.SPATIAL.value:
                raise LoopKindError(
                    f"cannot {what} loop {var.name!r}: it iterates the {kind_} axis of block "
                    f"{block!r}, whose iterations depend on each other; {what} a spatial loop "
                    f"(reorder the reduction loop outside, or use rfactor-style splitting)")
    if kind in (ForKind.VECTORIZED, ForKind.UNROLLED) and not isinstance(loop.extent, IntImm):
        raise LoopKindError(f"cannot {what} loop {var.name!r}: its extent {loop.extent} is not "
                            f"a constant; split it by a constant factor first")
    new = For(loop.loop_var, loop.min, loop.extent, kind, loop.body, loop.annotations)
    return func.with_body(replace(func.body, loop, new))  # type: ignore[arg-type]


def vectorize(func: PrimFunc, var: Var) -> PrimFunc:
    """Mark a spatial loop of constant extent for SIMD execution."""
    return _with_kind(func, var, ForKind.VECTORIZED, "vectorize", True)


def parallel(func: PrimFunc, var: Var) -> PrimFunc:
    """Run the iterations of a spatial loop on several threads."""
    return _with_kind(func, var, ForKind.PARALLEL, "parallelize", True)


def unroll(func: PrimFunc, var: Var) -> PrimFunc:
    """Replicate the body of a constant-extent loop (done by the unroll_loop pass)."""
    return _with_kind(func, var, ForKind.UNROLLED, "unroll", False)


def bind(func: PrimFunc, var: Var, thread: str) -> PrimFunc:
    """Bind a loop to virtual threads (``thread="vthread"``): iterations are independent
    streams that a backend may interleave to hide latency."""
    if thread not in ("vthread", "cthread"):
        raise LoopKindError(f"bind: unknown thread tag {thread!r}; this target supports "
                            f"'vthread' (virtual threads)")
    return _with_kind(func, var, ForKind.VIRTUAL_THREAD, "bind to virtual threads", True)


def pragma(func: PrimFunc, var: Var, key: str, value: Any = True) -> PrimFunc:
    """Attach ``key=value`` to a loop for a later pass or backend."""
    loop, _ = get_loop(func, var)
    ann = tuple((k, v) for k, v in loop.annotations if k != key) + ((key, value),)
    new = For(loop.loop_var, loop.min, loop.extent, loop.kind, loop.body, ann)
    return func.with_body(replace(func.body, loop, new))  # type: ignore[arg-type]


def _mark_allocation(func: PrimFunc, buffer_name: str, key: str, value: Any,
                     what: str) -> PrimFunc:
    wrappers, stmts = strip_root(func.body)
    k = next((k for k, w in enumerate(wrappers)
              if isinstance(w, Allocate) and w.buffer.name == buffer_name), None)
    if k is None:
        raise StorageError(f"{what}: {buffer_name} is not an intermediate buffer of this "
                           f"function (inputs and outputs have a fixed layout)")
    buf = wrappers[k].buffer  # type: ignore[attr-defined]
    attr = AttrStmt(buf, key, value, wrappers[k])
    return func.with_body(rewrap(wrappers[:k] + [attr] + wrappers[k:], stmts))


def storage_align(func: PrimFunc, buffer_name: str, axis: int, factor: int,
                  offset: int) -> PrimFunc:
    """Pad the stride of dimension ``axis`` (not the innermost) of an intermediate buffer
    to ``k * factor + offset`` (avoids bank / cache-set conflicts); done by align_storage."""
    what = f"storage_align({buffer_name!r})"
    wrappers, _ = strip_root(func.body)
    buf = next((w.buffer for w in wrappers if isinstance(w, Allocate)
                and w.buffer.name == buffer_name), None)
    if buf is not None and not 0 <= axis < len(buf.shape) - 1:
        raise StorageError(f"{what}: axis {axis} must name a non-innermost dimension of the "
                           f"{len(buf.shape)}-D buffer (the innermost stride is always 1)")
    if not isinstance(factor, int) or factor <= 0 or not 0 <= offset < factor:
        raise StorageError(f"{what}: need factor > 0 and 0 <= offset < factor, got "
                           f"factor={factor}, offset={offset}")
    return _mark_allocation(func, buffer_name, "storage_align", (axis, factor, offset), what)


def double_buffer(func: PrimFunc, buffer_name: str) -> PrimFunc:
    """Give an intermediate buffer written inside a loop two copies, alternating between
    iterations, so writing the next tile need not wait for reads of the current one."""
    return _mark_allocation(func, buffer_name, "double_buffer_scope", 1,
                            f"double_buffer({buffer_name!r})")
