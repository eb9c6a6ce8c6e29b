"""Correctly rounded float32 elementary functions: the primitives of ``arithmetic="framework"``.

A framework computes its tables in float32: ``+ - * /`` are IEEE operations (numpy's float32 arithmetic is the
same, bit for bit), and ``pow``, ``exp``, ``cos``, ``sin`` come from the platform's vector library, within about an
ulp. posenc emulates the framework's sequence of operations with the four IEEE operations as numpy does them and
each elementary function **correctly rounded** in float32 (round-half-even of the exact real value): the choice that
depends on no platform, and the one a framework's own result differs from by at most its library's error.

Each function takes float32 arrays (every value exactly a float32) and returns the correctly rounded float32
results:

- a float64 approximation from numpy, trusted to ``2**-40`` relative (numpy's and every libm's float64 ``pow``,
  ``exp``, ``cos``, ``sin`` are within a few float64 ulps, ``2**-50``), rounded where that bound proves the
  rounding (:func:`posenc_cli.encodings._exact.round_checked`); for ``cos`` and ``sin``, where the compiled core
  is built, the C library's float64 ``cos`` and ``sin`` (``sincos`` on glibc, both from one pass) trusted to
  ``2**-46`` (glibc's, musl's, macOS's and the MSVC runtime's are within an ulp, ``2**-52``), several threads on
  large arrays: each value the same, since each decided value is the correctly rounded one;
- the rest (about one entry in 65536) from :mod:`decimal` enclosures whose working precision doubles until both
  ends round alike (Ziv's strategy). For ``cos`` and ``sin`` of a nonzero float32 (a nonzero rational) the value is
  transcendental and the loop ends; ``pow`` and ``exp`` of exactly representable results are decided at once, as
  is ``log`` of 1 (``log1p`` of 0), the only rational logarithm of a rational.

Examples
--------
>>> import numpy as np
>>> float(cos(np.array([1.0], np.float32))[0])  # cos 1 = 0.5403023058681398..., rounded to float32
0.5403022766113281
>>> pow_(np.float32([10000.0]), np.float32([0.5])).tolist()  # exactly 100: decided at once
[100.0]
>>> float(log1p(np.float32([1.0]))[0])  # ln 2 = 0.6931471805599453..., rounded to float32
0.6931471824645996
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from types import ModuleType

import numpy as np
import numpy.typing as npt

from .._native import native, threads
from ..dtypes import nearest_bits
from ._engine import helpers
from ._exact import enclosure, round_checked

__all__ = ["cos", "cos_sin_columns", "cos_sin_products", "exp", "f32", "log", "log1p", "pow_", "sin", "trig_columns"]

#: The relative error trusted of numpy's float64 elementary functions (they are within ``2**-50``).
TRUSTED = 2.0**-40
_MAX_DIGITS = 2000


def f32(values: npt.ArrayLike) -> np.ndarray:
    """``values`` rounded to float32 (the IEEE conversion a framework applies to a Python float it combines with a
    float32 tensor)."""
    return np.asarray(values, np.float64).astype(np.float32)


def _decided(
    approx: np.ndarray, exact: Callable[[int, int], tuple[Fraction, Fraction]], shape: tuple[int, ...]
) -> np.ndarray:
    """The float32 results of ``approx`` (float64, relative error within :data:`TRUSTED`), the undecided entries
    from ``exact(i, digits)``: an enclosure ``lo <= v <= hi`` of entry ``i``'s exact value at about ``digits``."""
    out, undecided = round_checked(approx, np.abs(approx) * TRUSTED + 2.0**-1000, np.float32)
    rounded = np.asarray(out, np.float32).reshape(-1)
    at = np.flatnonzero(undecided.reshape(-1))
    rounded[at] = _exact_values(at, exact)
    return rounded.reshape(shape)


def _exact_values(undecided: np.ndarray, exact: Callable[[int, int], tuple[Fraction, Fraction]]) -> np.ndarray:
    """The float32 values at the flat indices ``undecided``, each rounded from ``exact(i, digits)`` (Ziv's loop)."""
    out = np.empty(undecided.size, np.float32)
    for at, i in enumerate(undecided.tolist()):
        digits = 40
        while True:
            lo, hi = exact(i, digits)
            bits = nearest_bits(lo, np.float32)
            if bits == nearest_bits(hi, np.float32):
                out[at] = np.array(bits, np.uint32).view(np.float32)
                break
            digits *= 2
            if digits > _MAX_DIGITS:  # a representable or midpoint value: ``lo == hi`` would have decided it
                raise ArithmeticError(f"could not round entry {i} to float32")
    return out


def _trig(angles: npt.ArrayLike, want_cos: bool) -> np.ndarray:
    a = np.asarray(angles, np.float32)
    grid = a.reshape(-1, a.shape[-1] if a.ndim else 1)
    return trig_columns(grid, np.arange(grid.shape[1]), want_cos).reshape(a.shape)


def trig_columns(angles: np.ndarray, cols: npt.ArrayLike, want_cos: bool) -> np.ndarray:
    """``cos`` (``want_cos``) or ``sin`` of the float32 ``angles`` (``n x k``) correctly rounded, at the columns
    ``cols`` (indices below ``k``): ``cos(angles)[:, cols]``, each angle's value computed once however many columns
    take it.

    Examples
    --------
    >>> import numpy as np
    >>> trig_columns(np.float32([[0.0, 1.0]]), [1, 0, 1], True).tolist()
    [[0.5403022766113281, 1.0, 0.5403022766113281]]
    """
    return _columns(angles, cols, (want_cos,))[0]


def cos_sin_columns(angles: np.ndarray, cols: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``trig_columns(angles, cols, True)`` and ``trig_columns(angles, cols, False)``, in one pass over ``angles``.

    Examples
    --------
    >>> import numpy as np
    >>> [part.tolist() for part in cos_sin_columns(np.float32([[1.0]]), [0, 0])]
    [[[0.5403022766113281, 0.5403022766113281]], [[0.8414709568023682, 0.8414709568023682]]]
    """
    cos_, sin_ = _columns(angles, cols, (True, False))
    return cos_, sin_


def cos_sin_products(
    positions: npt.ArrayLike, inv: npt.ArrayLike, cols: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """``cos_sin_columns`` of the angles ``fl32(fl32(p) * inv[j])`` (``len(positions) x len(inv)``; integer
    positions converted to float32, then one float32 product: ``position_ids.float() * inv_freq``), made row by row
    by the compiled core instead of as a whole array first.

    Examples
    --------
    >>> import numpy as np
    >>> [part.tolist() for part in cos_sin_products([0, 1], np.float32([1.0, 0.5]), [1, 0])]
    [[[1.0, 1.0], [0.8775825500488281, 0.5403022766113281]], [[0.0, 0.0], [0.4794255495071411, 0.8414709568023682]]]
    """
    p = np.ascontiguousarray(positions, np.int64).reshape(-1)
    f = np.ascontiguousarray(inv, np.float32).reshape(-1)
    core = native("_core")
    # |fl32(p) * inv| below 1e38 by a float64 bound: every angle finite, as the compiled loop needs
    reach = float(np.abs(p).max(initial=0)) * float(np.abs(f).max(initial=0)) if np.isfinite(f).all() else np.inf
    if core is None or not p.size or not f.size or not reach < 1e38:
        with np.errstate(over="ignore"):  # a product past float32's range is an infinity, as in torch
            theta = p.astype(np.float32)[:, None] * f[None, :]
        cos_, sin_ = cos_sin_columns(theta, cols)
        return cos_, sin_
    take = np.asarray(cols, np.int64).reshape(-1)

    def angle(i: int) -> float:
        r, j = divmod(i, f.size)
        return float(np.float32(np.float32(p[r]) * f[j]))

    cos_, sin_ = _settled(_trig_compiled(core, (p, f), take, (True, False)), (True, False), take, f.size, angle)
    return cos_, sin_


def _exact_of(angle: Callable[[int], float], want_cos: bool) -> Callable[[int, int], tuple[Fraction, Fraction]]:
    """The enclosure of ``cos`` or ``sin`` of the flat angle ``i`` (its float value ``angle(i)``) at ``digits``."""

    def exact(i: int, digits: int) -> tuple[Fraction, Fraction]:
        # k = 0: the frequency is base**0 = 1, so the enclosure is of trig(position) itself
        return enclosure(Fraction(angle(i)), 0, want_cos, 2.0, Fraction(1), digits)

    return exact


def _columns(angles: np.ndarray, cols: npt.ArrayLike, wants: tuple[bool, ...]) -> list[np.ndarray]:
    a = np.ascontiguousarray(angles, np.float32)
    take = np.asarray(cols, np.int64).reshape(-1)
    n, k = a.shape
    flat = a.reshape(-1)

    def angle(i: int) -> float:
        return float(flat[i])

    core = native("_core")
    if core is None or not a.size or not take.size or not np.isfinite(flat).all():
        pure: list[np.ndarray] = []
        for want in wants:
            with np.errstate(invalid="ignore"):  # cos and sin of an infinity are NaN, as in IEEE and torch
                approx = (np.cos if want else np.sin)(a.astype(np.float64))
            values = _decided(approx, _exact_of(angle, want), a.shape)
            if not want:  # sin(+-0) = +-0: the exact path's rational zero has no sign
                zero = a == 0
                values[zero] = a[zero]
            pure.append(np.take(values, take, axis=1))
        return pure
    return _settled(_trig_compiled(core, a, take, wants), wants, take, k, angle)


def _settled(
    compiled: list[tuple[np.ndarray, np.ndarray]],
    wants: tuple[bool, ...],
    take: np.ndarray,
    k: int,
    angle: Callable[[int], float],
) -> list[np.ndarray]:
    """The compiled parts with each undecided angle ``i`` (flat, ``k`` a row) rounded from its exact value, in
    every column that takes it."""
    for (out, undecided), want in zip(compiled, wants, strict=True):
        if undecided.size:
            settled = _exact_values(undecided, _exact_of(angle, want))
            rows, columns = np.divmod(undecided, k)
            for row, column, value in zip(rows.tolist(), columns.tolist(), settled.tolist(), strict=True):
                out[row, take == column] = value
    return [out for out, _ in compiled]


#: Angles per thread below which the compiled ``cos``/``sin`` runs on the caller's thread alone.
_PART_MIN = 1 << 16


def _trig_compiled(
    core: ModuleType, source: np.ndarray | tuple[np.ndarray, np.ndarray], take: np.ndarray, wants: tuple[bool, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The compiled core's ``trig32`` at columns ``take`` of the angles ``source``: an ``n x k`` finite float32
    array, or ``(positions, inv)`` (int64 ``n``, float32 ``k``: the angles ``fl32(fl32(p) * inv[j])``, finite), for
    each of ``wants`` (True: cos, False: sin), cut by rows into one part per thread
    (:func:`~posenc_cli._native.threads`): per part wanted, the rounded values and the flat angle indices the bound
    leaves undecided."""
    rows, inv = source if isinstance(source, tuple) else (source, None)
    n, k = (rows.size, inv.size) if inv is not None else rows.shape
    outs = {want: np.empty((n, take.size), np.float32) for want in wants}
    parts = max(1, min(threads(), n, n * k // _PART_MIN))
    cuts = [n * i // parts for i in range(parts + 1)]

    def run(lo: int, hi: int) -> tuple[bytes | None, bytes | None]:
        out_cos, out_sin = (outs[want][lo:hi] if want in outs else None for want in (True, False))
        found: tuple[bytes | None, bytes | None] = core.trig32(rows[lo:hi], out_cos, out_sin, k, take, inv)
        return found

    if parts == 1:
        found = [run(0, n)]
    else:
        pool = helpers(parts - 1)
        jobs = [pool.submit(run, lo, hi) for lo, hi in pairwise(cuts[1:])]
        found = [run(0, cuts[1])] + [job.result() for job in jobs]
    result = []
    for want in wants:
        index = 0 if want else 1
        chunks = [np.frombuffer(f[index] or b"", np.int64) + lo * k for f, lo in zip(found, cuts, strict=False)]
        result.append((outs[want], np.concatenate(chunks)))
    return result


def cos(angles: npt.ArrayLike) -> np.ndarray:
    """``cos`` of float32 angles, correctly rounded to float32."""
    return _trig(angles, True)


def sin(angles: npt.ArrayLike) -> np.ndarray:
    """``sin`` of float32 angles, correctly rounded to float32."""
    return _trig(angles, False)


def _exp_enclosure(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """``exp(x)`` within a relative ``10**(5 - digits)``: Decimal's ``exp`` is correctly rounded to ``digits``."""
    if x == 0:
        return Fraction(1), Fraction(1)
    with decimal.localcontext() as ctx:
        ctx.prec = digits + 10
        d = Decimal(x.numerator) / Decimal(x.denominator)
        ctx.prec = digits
        v = Fraction(d.exp())
    err = v * Fraction(1, 10 ** (digits - 5))
    return v - err, v + err


def exp(x: npt.ArrayLike) -> np.ndarray:
    """``e**x`` of float32 ``x``, correctly rounded to float32 (``exp(0) = 1``; other results are transcendental)."""
    a = np.asarray(x, np.float32)
    flat = a.reshape(-1)
    with np.errstate(over="ignore", under="ignore"):
        approx = np.exp(a.astype(np.float64))
    return _decided(approx, lambda i, digits: _exp_enclosure(Fraction(float(flat[i])), digits), a.shape)


def _log_enclosure(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """``ln(x)`` of a rational ``x > 0`` within a relative ``10**(5 - digits)``: ``x`` converted to Decimal exactly
    (a float32's or a float32 plus one's dyadic value has at most a few hundred digits), then Decimal's ``ln``,
    correctly rounded to ``digits``; ``ln 1 = 0`` exactly."""
    if x == 1:
        return Fraction(0), Fraction(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 2 * (len(str(x.numerator)) + len(str(x.denominator))) + 10  # a dyadic quotient, exact
        d = Decimal(x.numerator) / Decimal(x.denominator)
        ctx.prec = digits
        v = Fraction(d.ln())
    err = abs(v) * Fraction(1, 10 ** (digits - 5))
    return v - err, v + err


def _logarithm(x: npt.ArrayLike, plus_one: bool) -> np.ndarray:
    a = np.asarray(x, np.float32)
    flat = a.reshape(-1)
    low = -1.0 if plus_one else 0.0
    if not np.all(a > low) or not np.all(np.isfinite(a)):
        raise ValueError(f"{'log1p' if plus_one else 'log'} takes finite float32 values above {low}")
    approx = (np.log1p if plus_one else np.log)(a.astype(np.float64))
    one = Fraction(1 if plus_one else 0)
    return _decided(approx, lambda i, digits: _log_enclosure(one + Fraction(float(flat[i])), digits), a.shape)


def log(x: npt.ArrayLike) -> np.ndarray:
    """``ln x`` of finite float32 ``x > 0``, correctly rounded to float32 (``ValueError`` outside that domain)."""
    return _logarithm(x, False)


def log1p(x: npt.ArrayLike) -> np.ndarray:
    """``ln(1 + x)`` of finite float32 ``x > -1``, correctly rounded to float32 (the exact ``1 + x``, not its
    float32 rounding: torch's ``log1p``; ``ValueError`` outside that domain)."""
    return _logarithm(x, True)


def pow_(base: npt.ArrayLike, exponent: npt.ArrayLike) -> np.ndarray:
    """``base**exponent`` of float32 values (``base > 0``), correctly rounded to float32, broadcasting."""
    b, e = np.broadcast_arrays(np.asarray(base, np.float32), np.asarray(exponent, np.float32))
    fb, fe = b.reshape(-1), e.reshape(-1)
    with np.errstate(over="ignore", under="ignore"):
        approx = np.power(b.astype(np.float64), e.astype(np.float64))

    def exact(i: int, digits: int) -> tuple[Fraction, Fraction]:
        qb, qe = Fraction(float(fb[i])), Fraction(float(fe[i]))
        if qe == 0 or qb == 1:
            return Fraction(1), Fraction(1)
        if qe.denominator == 1 and abs(qe.numerator) <= 4096:  # an integer power: exact
            v = qb**qe.numerator
            return v, v
        with decimal.localcontext() as ctx:
            ctx.prec = digits + 10
            ln_b = (Decimal(qb.numerator) / Decimal(qb.denominator)).ln()
            y = Fraction(ln_b * (Decimal(qe.numerator) / Decimal(qe.denominator)))
        lo, hi = _exp_enclosure(y, digits)
        slack = (abs(y) + 1) * Fraction(1, 10 ** (digits - 2))  # the logarithm's own error, carried through exp
        return lo * (1 - slack), hi * (1 + slack)

    return _decided(approx, exact, b.shape)
