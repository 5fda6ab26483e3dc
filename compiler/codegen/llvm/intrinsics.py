"""Math intrinsics: LLVM intrinsics where LLVM has them, libm otherwise, and an inline
polynomial for vector fp32 ``exp``.

``log``, ``sqrt``, ``tanh``, ``fabs``, ``floor``, ``ceil``, ``round``, ``pow`` and scalar
``exp`` map to ``llvm.*`` intrinsics, which the backend turns into instructions (sqrt,
fabs, rounding) or libm calls (lane by lane for vectors). Vector fp32 ``exp`` (softmax,
sigmoid) is inlined: Cody-Waite range reduction ``x = n ln2 + r`` and a degree-6
polynomial (Cephes ``expf``, ~1 ulp), scaled by ``2^n`` as two exponent-field products so
results that overflow become inf and tiny ones denormal or 0, as in libm. ``erf`` has no
intrinsic: vector fp32 ``erf`` (a transformer's Gelu) is inlined too, scalars call libm's
``erff``/``erf``. ``rsqrt`` and ``sigmoid`` are expanded in IR so LLVM can vectorize and
fuse around them.
"""
from __future__ import annotations

from typing import Callable, Sequence

import llvmlite.ir as ir

from ...tir import dtype as dt
from .types import CodegenError, scalar_type, type_suffix, value_type

_LLVM_UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "fabs": "fabs",
               "floor": "floor", "ceil": "ceil", "round": "roundeven"}
_LIBM = {"erf": {"float32": "erff", "float64": "erf"}}
FLOAT_FLAGS = ("contract",)


class MathEmitter:
    """Declares intrinsics in one module (once each) and emits math calls."""

    def __init__(self, module: ir.Module):
        self.module = module

    def _declare(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name=name)
        return fn

    def call(self, b: ir.IRBuilder, op: str, dtype: str, args: list[ir.Value]) -> ir.Value:
        """``op(*args)`` on values of ``dtype`` (scalar or vector float)."""
        if not dt.is_float(dtype):
            raise CodegenError(f"math intrinsic {op} needs a float argument, got {dtype}")
        ty = value_type(dtype)
        if op == "exp" and dt.element(dtype) == "float32" and dt.lanes(dtype) > 1:
            return self._vector_expf(b, args[0], dtype)
        if op == "erf" and dt.element(dtype) == "float32" and dt.lanes(dtype) > 1:
            return self._vector_erff(b, args[0], dtype)
        if op in _LLVM_UNARY:
            fn = self._declare(f"llvm.{_LLVM_UNARY[op]}.{type_suffix(dtype)}", ty, [ty])
            return b.call(fn, args)
        if op == "pow":
            fn = self._declare(f"llvm.pow.{type_suffix(dtype)}", ty, [ty, ty])
            return b.call(fn, args)
        one = _splat(ty, 1.0)
        if op == "rsqrt":
            return b.fdiv(one, self.call(b, "sqrt", dtype, args), flags=FLOAT_FLAGS)
        if op == "sigmoid":
            neg = b.fneg(args[0])
            return b.fdiv(one, b.fadd(one, self.call(b, "exp", dtype, [neg]),
                                      flags=FLOAT_FLAGS), flags=FLOAT_FLAGS)
        if op in _LIBM:
            elem = dt.element(dtype)
            if elem not in _LIBM[op]:
                raise CodegenError(f"{op} is not available for {elem}; cast to float32")
            st = scalar_type(dtype)
            fn = self._declare(_LIBM[op][elem], st, [st])
            return per_lane(b, dtype, args, lambda xs: b.call(fn, xs))
        raise CodegenError(f"the LLVM backend has no implementation of intrinsic {op!r}")


    def _vector_expf(self, b: ir.IRBuilder, x: ir.Value, dtype: str) -> ir.Value:
        ty = value_type(dtype)
        ity = ir.VectorType(ir.IntType(32), dt.lanes(dtype))
        f = FLOAT_FLAGS
        # Beyond these bounds the result is 0 or inf anyway; NaN passes the selects.
        xc = b.select(b.fcmp_ordered("<", x, _splat(ty, -104.0)), _splat(ty, -104.0), x)
        xc = b.select(b.fcmp_ordered(">", xc, _splat(ty, 89.0)), _splat(ty, 89.0), xc)
        n = self.call(b, "round", dtype, [b.fmul(xc, _splat(ty, _LOG2E), flags=f)])
        r = b.fsub(xc, b.fmul(n, _splat(ty, _LN2_HI), flags=f), flags=f)
        r = b.fsub(r, b.fmul(n, _splat(ty, _LN2_LO), flags=f), flags=f)
        p = _splat(ty, _EXP_POLY[0])
        for c in _EXP_POLY[1:]:
            p = b.fadd(b.fmul(p, r, flags=f), _splat(ty, c), flags=f)
        poly = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r, flags=f), flags=f), r, flags=f),
                      _splat(ty, 1.0), flags=f)
        ni = b.fptosi(n, ity)
        half = b.ashr(ni, ir.Constant(ity, [ir.Constant(ir.IntType(32), 1)] * ity.count))

        def pow2(k: ir.Value) -> ir.Value:
            bias = ir.Constant(ity, [ir.Constant(ir.IntType(32), 127)] * ity.count)
            shift = ir.Constant(ity, [ir.Constant(ir.IntType(32), 23)] * ity.count)
            return b.bitcast(b.shl(b.add(k, bias), shift), ty)

        return b.fmul(b.fmul(poly, pow2(half), flags=f), pow2(b.sub(ni, half)), flags=f)

    def _vector_erff(self, b: ir.IRBuilder, x: ir.Value, dtype: str) -> ir.Value:
        """fp32 erf within ~2.5 ulp (1.2e-7 absolute) of the exact value.

        ``|x| <= 1``: ``x * P(x^2)``; above, ``sign(x) * (1 - exp(-x^2) * Q(1/|x|))`` with ``|x|``
        clamped at 4 (where erf rounds to 1 in fp32); ``P`` and ``Q`` are least-squares fits on
        Chebyshev nodes of ``erf(x)/x`` and ``erfc(x) exp(x^2)``.  NaN takes the first branch and
        stays NaN; infinities give +-1.
        """
        ty = value_type(dtype)
        f = FLOAT_FLAGS

        def poly(coefs: tuple[float, ...], z: ir.Value) -> ir.Value:
            acc = _splat(ty, coefs[-1])
            for c in coefs[-2::-1]:
                acc = b.fadd(b.fmul(acc, z, flags=f), _splat(ty, c), flags=f)
            return acc

        small = b.fmul(x, poly(_ERF_SMALL, b.fmul(x, x, flags=f)), flags=f)
        ax = self.call(b, "fabs", dtype, [x])
        four = _splat(ty, 4.0)
        axc = b.select(b.fcmp_ordered(">", ax, four), four, ax)
        tail = b.fmul(self._vector_expf(b, b.fneg(b.fmul(axc, axc, flags=f)), dtype),
                      poly(_ERFC_SCALED, b.fdiv(_splat(ty, 1.0), axc, flags=f)), flags=f)
        big = b.fsub(_splat(ty, 1.0), tail, flags=f)
        big = b.select(b.fcmp_ordered("<", x, _splat(ty, 0.0)), b.fneg(big), big)
        return b.select(b.fcmp_ordered(">", ax, _splat(ty, 1.0)), big, small)


_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)

#: erf(x) / x as a polynomial in x^2 on [0, 1] (relative error 4e-8).
_ERF_SMALL = (1.1283791065216064, -0.37612348794937134, 0.11280364543199539, -0.026716390624642372,
              0.004923280794173479, -0.0005654108827002347)
#: erfc(x) exp(x^2) as a polynomial in u = 1/x on [1/4, 1] (relative error 3e-8).
_ERFC_SCALED = (0.00014589364582207054, 0.561318039894104, 0.02404867112636566, -0.39137062430381775,
                0.27308711409568787, 0.1622374802827835, -0.4490048289299011, 0.37459802627563477,
                -0.15350189805030823, 0.026025723665952682)


def _splat(ty: ir.Type, value: float) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def per_lane(b: ir.IRBuilder, dtype: str, args: list[ir.Value],
             fn: Callable[[list[ir.Value]], ir.Value]) -> ir.Value:
    """Apply a scalar operation lane by lane (the result has ``dtype``)."""
    n = dt.lanes(dtype)
    if n == 1:
        return fn(args)
    out: ir.Value = ir.Constant(value_type(dtype), ir.Undefined)
    for i in range(n):
        lane = ir.Constant(ir.IntType(32), i)
        out = b.insert_element(out, fn([b.extract_element(a, lane) for a in args]), lane)
    return out
