"""The conv2d epilogue record: what happens to the accumulators after the reduction, and the
derived facts the schedule, the fit model and the cost model read from it.

Every knob function (``fit.py``, ``tiling.estimate_cycles``) takes the :class:`Requantize` itself,
so an epilogue feature is one field here (plus the properties it implies), not a parameter
threaded through every call site.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from vdla.compiler.tir import IntImm


@dataclass(frozen=True)
class Residual:
    """A residual add fused after the requantized conv output (the graph operator ``qadd`` with the conv's
    int8 result as its first operand ``a`` and a second int8 tensor ``b``, the skip, of the output's shape)::

        out = clip(([ReLU](a * m_a + b * m_b + round)) >> shift)     # per-tensor: a >> k_a, b >> k_b

    ``a`` is the conv epilogue's value clamped to int8 and still in the accumulator; ``b`` is LOADed into
    the input buffer beside the conv's input and moved into its own accumulator tile by an identity GEMM.
    The ALU scales both and adds; the STORE does ``[ReLU] >> shift``, the clip and the narrowing."""

    mult: tuple[int, int] | None = None
    align: tuple[int, int] = (0, 0)
    round: int = 0
    shift: int = 0
    relu: bool = False

    @property
    def consts(self) -> bool:
        """Whether the add needs its resident ``m_a, m_b, round`` tiles (multipliers or a rounding term)."""
        return self.mult is not None or self.round != 0


@dataclass(frozen=True)
class Requantize:
    """The epilogue after the accumulation: ``clip(((acc + bias) [ReLU]) [* m[c]] >> shift)`` to the output type.

    With ``multiplier`` an int32 per-output-channel tile ``m`` (loaded like the bias) multiplies the
    accumulators before the common shift: per-channel requantization scales ``m[c] * 2**-shift``.

    ``on_store``: the STORE does the shift, ReLU and clip on the way out (``fold_requant_store``), so
    the compute module runs only the bias add (and the multiply); False runs the whole epilogue on the
    ALU (the code generated before requantizing stores, kept to measure the difference).

    ``bias_init``: the accumulators start as a copy of the bias (one ALU MOV per tile at one cycle
    per tile, ``fold_bias_init``) instead of a GEMM reset and an ALU ADD after the reduction; False
    keeps the reset + ADD (to measure the difference).

    ``bias_store``: no initialisation at all where the layout allows it (``fold_bias_store``): each
    tile's first reduction step is a GEMM with the ``overwrite`` bit and the STORE adds the bias; False
    keeps ``bias_init``'s MOV (to measure the difference).  It applies only with ``on_store`` and
    ``bias_init``.

    ``split_edges``: the prologue and the drain split by block in the instruction stream
    (``split_prologue_load``: the first weight LOADs and the GEMMs reading them, so the first GEMM
    waits for one output-channel block's weights; ``split_drain_store``: the last GEMMs and their
    STOREs, so each block's STORE overlaps the next block's GEMM); False leaves them whole (to
    measure the difference).  Not an epilogue feature but a lowering choice the fit model's
    micro-op count must see, like ``bias_store``.
    """

    shift: int = 0
    relu: bool = True
    bias: bool = True
    multiplier: bool = False
    on_store: bool = True
    bias_init: bool = True
    bias_store: bool = True
    residual: Residual | None = None
    """A residual add fused after the requantization (:class:`Residual`): the conv's shift and clip then run on
    the ALU (the value must be int8 before the add) and the STORE does the add's own shift and clip."""
    split_edges: bool = True

    @property
    def alu_imm(self) -> bool:
        """Whether immediate ALU operations (ReLU, shift, clip) run on the compute module: all of them
        without ``on_store``; with a multiplier the ReLU before the multiply (which may wrap) stays; with a
        fused residual add the conv's shift and clip."""
        return not self.on_store or (self.multiplier and self.relu) or self.residual is not None

    @property
    def inits_from_bias(self) -> bool:
        """Whether the accumulators start as the bias (a bias to start from, and ``bias_init``): no
        GEMM reset and no bias ADD after the reduction."""
        return self.bias and self.bias_init

    @property
    def bias_on_store(self) -> bool:
        """Whether the STORE adds the bias and the first GEMM step overwrites (no accumulator init)."""
        return (self.inits_from_bias and self.on_store and self.bias_store and not self.multiplier
                and self.residual is None)

    @property
    def splits_edges(self) -> bool:
        """Whether the prologue and the drain are split by block (``split_edges``, with the bias on the
        STORE: the only path whose micro-op lists the fit model counts with the pieces)."""
        return self.split_edges and self.bias_on_store

    @property
    def resident_tiles(self) -> int:
        """Per-output-channel tiles kept resident in the accumulator buffer: the bias, the multiplier."""
        return int(self.bias) + int(self.multiplier)


def scale_to_common(m: Any, which: int, mult: Any, align: tuple[int, int], consts: Any, acc_t: str) -> Callable[..., Any]:
    """Operand ``which`` (0 or 1) of a requantizing add at the common scale, as an index function over
    ``(n, c, y, x, b, j)``: times its per-channel multiplier (``consts[which, b, j]``) when the add has one,
    else shifted by ``align[which]`` bits (right when positive, left when negative). Shared by the
    standalone add (``eltwise.py``) and the add fused into a conv (``conv2d.py``), which must round alike."""
    if mult is not None:
        return lambda *i: m[i] * consts[which, i[4], i[5]]
    if align[which] > 0:
        return lambda *i: m[i] // IntImm(1 << align[which], acc_t)
    if align[which] < 0:
        return lambda *i: m[i] * IntImm(1 << -align[which], acc_t)
    return lambda *i: m[i]
