"""inject_dma_copy: copy loop nests between DRAM and the on-chip scopes -> 2-D DMA statements.

A copy nest is a perfect loop nest whose body is ``sram[t, i, j] = dram[..., i, j]``
(optionally ``if_then_else(in_bounds, dram[...], 0)``, which becomes zero padding) or
``dram[..., i, j] = cast(sram[t, i, j])`` (a STORE; ``cast(vdla.requant(sram[t, i, j], ...))`` is a
requantizing STORE), where the two innermost loops
``i, j`` cover exactly one tile.  Above the tile loops, loops whose strides are contiguous
in both memories are fused; the innermost remaining loop becomes the DMA's x dimension,
the next one its y dimension (any DRAM row stride, consecutive SRAM rows), and loops
further out stay loops around the DMA.  Padding amounts are expressions of the outer
loop variables (boundary tiles pad, interior tiles do not).  The SRAM extent of every
copy is checked against the buffer's capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla.compiler.tir import (GE, GT, LE, LT, Add, And, BufferLoad, BufferStore, Call, Cast, For, IntImm, Mutator,
                          PrimExpr, PrimFunc, Stmt, Var)
from vdla.compiler.tir.ir import Max, Min
from vdla.compiler.tir.functor import substitute, uses_var

from ..affine import NotAffineError, affine, simplify
from ..stmt import dma_load, dma_store, requant_parts
from ..target import VdlaTarget
from .common import VdlaLoweringError, const_extent, is_vdla_scope, perfect_nest, rebuild_nest, tile_index


@dataclass
class _Group:
    """Fused loops acting as one DMA dimension: ``var`` iterates ``extent`` with the strides of its innermost loop."""

    vars: list[Var]
    extent: int
    sram_coef: int
    dram_coef: int


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _bounds(cond: PrimExpr | None, var: Var, extent: int) -> tuple[PrimExpr, PrimExpr]:
    """(pad_before, pad_after) of ``var`` in ``[0, extent)`` under ``cond``'s conjuncts on it."""
    lo: PrimExpr = IntImm(0)
    hi: PrimExpr = IntImm(extent)
    for c in _conjuncts(cond) if cond is not None else []:
        if not uses_var(c, {var}):
            continue
        if not isinstance(c, (LE, LT, GE, GT)):
            raise VdlaLoweringError(f"padding condition {c} must be a comparison of {var.name} with bounds")
        diff = (c.b - c.a) if isinstance(c, (LE, LT)) else (c.a - c.b)  # constraint: diff >= need
        need = 1 if isinstance(c, (LT, GT)) else 0
        coef, rest = affine(diff, [var])
        k = coef[var]
        if k == 1:
            lo = Max(lo, IntImm(need) - rest)
        elif k == -1:
            hi = Min(hi, rest - IntImm(need) + 1)
        else:
            raise VdlaLoweringError(f"padding condition {c} must bound {var.name} with coefficient +-1")
    pad0 = simplify(Min(lo, IntImm(extent)))
    pad1 = simplify(Max(IntImm(extent) - Max(hi, pad0), IntImm(0)))
    return pad0, pad1


class _Inject(Mutator):
    def __init__(self, target: VdlaTarget):
        self.target = target

    def visit_For(self, loop: For) -> Stmt:
        loops, body = perfect_nest(loop)
        if isinstance(body, BufferStore) and len(loops) >= 2:
            lowered = self._copy(loops, body)
            if lowered is not None:
                return lowered
        return self.generic(loop)

    def _copy(self, loops: list[For], store: BufferStore) -> Stmt | None:
        value, cond = store.value, None
        if isinstance(value, Call) and value.op == "if_then_else":
            cond, value = value.args[0], value.args[1]
            if not (isinstance(value, BufferLoad) and isinstance(store.value.args[2], IntImm)
                    and store.value.args[2].value == 0):
                return None
        if isinstance(value, Cast):
            value = value.value
        on_store = requant_parts(value)
        bias_load: BufferLoad | None = None
        if on_store is not None:
            value = on_store[0]
            if (isinstance(value, Add) and isinstance(value.a, BufferLoad) and isinstance(value.b, BufferLoad)
                    and is_vdla_scope(value.b.buffer)):
                value, bias_load = value.a, value.b  # a bias the STORE adds (fold_bias_store)
        if not isinstance(value, BufferLoad):
            return None
        dst, src = store.buffer, value.buffer
        if is_vdla_scope(dst) == is_vdla_scope(src):
            return None
        is_load = is_vdla_scope(dst)
        if is_load and on_store is not None:
            raise VdlaLoweringError(f"copy into {dst.name}: only a STORE requantizes, a LOAD copies as is")
        sram, dram = (dst, src) if is_load else (src, dst)
        scope = self.target.scope(sram.scope)
        ntile = len(scope.tile)
        tile_loops = loops[-ntile:]
        tile_vars = tuple(lp.loop_var for lp in tile_loops)
        if [const_extent(lp) for lp in tile_loops] != list(scope.tile):
            return None
        sram_idx = tile_index(sram, store.indices if is_load else value.indices, tile_vars)
        dram_idx = tile_index(dram, value.indices if is_load else store.indices, tile_vars)
        if sram_idx is None or dram_idx is None:
            return None
        if cond is not None and uses_var(cond, set(tile_vars)):
            raise VdlaLoweringError(f"copy into {sram.name}: padding must be whole tiles, but {cond} tests a tile lane")
        if cond is not None and not is_load:
            raise VdlaLoweringError(f"a STORE from {sram.name} cannot pad; remove the condition {cond}")
        # One-iteration loops above the tile (e.g. the batch of a compute_at region) are no DMA dimension.
        unit = {lp.loop_var: IntImm(0) for lp in loops[:-ntile] if const_extent(lp) == 1}
        outer = [lp for lp in loops[:-ntile] if lp.loop_var not in unit]
        sram_idx, dram_idx = substitute(sram_idx, unit), substitute(dram_idx, unit)
        cond = None if cond is None else substitute(cond, unit)
        vs = [lp.loop_var for lp in outer]
        try:
            s_coef = affine(sram_idx, vs)[0]
            d_coef = affine(dram_idx, vs)[0]
        except NotAffineError as exc:
            raise VdlaLoweringError(f"copy between {sram.name} and {dram.name}: {exc}") from None
        padded = {v for v in vs if cond is not None and uses_var(cond, {v})}
        b_coef = self._bias_coef(bias_load, tile_vars, unit, vs)
        groups: list[_Group] = []
        for lp in reversed(outer):  # innermost first: fuse loops contiguous in both memories
            v, ext = lp.loop_var, const_extent(lp)
            g = groups[-1] if groups else None
            # A bias is one tile per DRAM row: a loop that moves it never fuses with one that does not.
            same_bias = b_coef is None or g is None or all((b_coef[v] == 0) == (b_coef[u] == 0) for u in g.vars)
            if (g is not None and v not in padded and not (set(g.vars) & padded) and same_bias
                    and s_coef[v] == g.sram_coef * g.extent and d_coef[v] == g.dram_coef * g.extent):
                g.vars.append(v)
                g.extent *= ext
            else:
                groups.append(_Group([v], ext, s_coef[v], d_coef[v]))
        if groups and b_coef is not None and any(b_coef[v] for v in groups[0].vars):
            groups.insert(0, _Group([], 1, 1, 1))  # the bias moves along the innermost loop: rows of one tile
        if groups and groups[0].sram_coef == 1 and groups[0].dram_coef != 1:
            # Strided in DRAM only: rows of one tile, the loop becomes the y dimension.
            groups.insert(0, _Group([], 1, 1, 1))
        x = groups[0] if groups else _Group([], 1, 1, 1)
        y = groups[1] if len(groups) > 1 else _Group([], 1, x.extent, x.extent)
        rest_groups = groups[2:]
        if x.sram_coef != 1 or x.dram_coef not in (1, 0) or (x.dram_coef == 0 and x.extent > 1):
            raise VdlaLoweringError(f"copy between {sram.name} and {dram.name}: the innermost loop must walk "
                                    f"consecutive tiles in both memories (strides {x.sram_coef}, {x.dram_coef})")
        if y.sram_coef != x.extent and y.extent > 1:
            raise VdlaLoweringError(f"copy into {sram.name}: rows must be consecutive in SRAM (row stride "
                                    f"{y.sram_coef}, row length {x.extent})")
        if len(x.vars) > 1 and x.vars[-1] in padded or len(y.vars) > 1 and y.vars[-1] in padded:
            raise VdlaLoweringError(f"copy into {sram.name}: padding on a fused loop")
        zero = {v: IntImm(0) for v in vs}
        xv = x.vars[0] if len(x.vars) == 1 else None
        yv = y.vars[0] if len(y.vars) == 1 else None
        xp = _bounds(cond, xv, x.extent) if xv is not None and xv in padded else (IntImm(0), IntImm(0))
        yp = _bounds(cond, yv, y.extent) if yv is not None and yv in padded else (IntImm(0), IntImm(0))
        for g in rest_groups:
            if set(g.vars) & padded:
                raise VdlaLoweringError(f"copy into {sram.name}: only the two innermost copy dimensions may pad")
        keep = {v for g in rest_groups for v in g.vars}
        at_origin = {v: e for v, e in zero.items() if v not in keep}
        sram_base = simplify(substitute(sram_idx, at_origin))
        if is_load:
            start = dict(at_origin)
            if xv is not None:
                start[xv] = xp[0]
            if yv is not None:
                start[yv] = yp[0]
            dram_base = simplify(substitute(dram_idx, start))
            y_size = simplify(IntImm(y.extent) - yp[0] - yp[1])
            x_size = simplify(IntImm(x.extent) - xp[0] - xp[1])
            span = sum(abs(s_coef[v]) * (const_extent(lp) - 1) for v, lp in zip(vs, outer)) + 1
            scope.check_fits(span, f"copy into {sram.name}")
            dma: Stmt = dma_load(sram, sram_base, dram, dram_base, y_size, x_size, y.dram_coef,
                                 (yp[0], yp[1], xp[0], xp[1]))
        else:
            dram_base = simplify(substitute(dram_idx, at_origin))
            bias = None if bias_load is None else self._bias(bias_load, tile_vars, unit, vs, outer, x, y, at_origin)
            dma = dma_store(dram, dram_base, sram, sram_base, y.extent, x.extent, y.dram_coef,
                            None if on_store is None else on_store[1], bias)
        kept = [lp for lp in outer if lp.loop_var in keep]
        return rebuild_nest(kept, dma)


    @staticmethod
    def _bias_coef(load: BufferLoad | None, tile_vars, unit, vs):  # type: ignore[no-untyped-def]
        """The bias tile index's coefficient per copy loop, or None without a bias."""
        if load is None:
            return None
        idx = tile_index(load.buffer, load.indices, tile_vars)
        if idx is None:
            raise VdlaLoweringError(f"the bias {load.buffer.name} of a STORE must be read as whole tiles")
        try:
            return affine(substitute(idx, unit), vs)[0]
        except NotAffineError as exc:
            raise VdlaLoweringError(f"the bias {load.buffer.name} of a STORE: {exc}") from None

    @staticmethod
    def _bias(load: BufferLoad, tile_vars, unit, vs, outer, x, y, at_origin):  # type: ignore[no-untyped-def]
        """``(buffer, first tile, step)`` of a STORE's bias: one tile per DRAM row, the same for every
        tile of the row, advancing 0 or 1 tile per row."""
        buf = load.buffer
        idx = tile_index(buf, load.indices, tile_vars)
        if idx is None:
            raise VdlaLoweringError(f"the bias {buf.name} of a STORE must be read as whole tiles")
        idx = substitute(idx, unit)
        try:
            coef = affine(idx, vs)[0]
        except NotAffineError as exc:
            raise VdlaLoweringError(f"the bias {buf.name} of a STORE: {exc}") from None
        if any(coef[v] for v in x.vars):
            raise VdlaLoweringError(f"the bias {buf.name} of a STORE changes along a DRAM row; the STORE adds one "
                                    f"bias tile per row")
        extents = {lp.loop_var: const_extent(lp) for lp in outer}
        weight, step = 1, None
        for v in y.vars:  # innermost first: the row index of a fused y is sum(v * weight)
            s = coef[v] // weight if coef[v] % weight == 0 else -1
            if step is None:
                step = s
            if s != step or step not in (0, 1):
                raise VdlaLoweringError(f"the bias {buf.name} of a STORE must advance 0 or 1 tile per DRAM row")
            weight *= extents[v]
        return buf, simplify(substitute(idx, at_origin)), step or 0


def inject_dma_copy(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Replace every DRAM<->SRAM copy nest of ``func`` by ``vdla.load``/``vdla.store`` statements."""
    return func.with_body(_Inject(target).visit(func.body))

