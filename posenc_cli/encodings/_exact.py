"""Correct rounding for the sinusoidal table: the Ziv check and the arbitrary-precision fallback.

The fast path (:mod:`posenc_cli.encodings.sinusoidal`) computes each entry in float64 together with a proven bound on
its error.  This module turns such approximations into correctly rounded values and handles the rest:

- :func:`round_checked` rounds a float64 approximation ``y`` with error bound ``err`` to a narrower binary dtype
  (float32, float16, bfloat16, ...) wherever every real number in ``[y - err, y + err]`` rounds to the same value,
  and flags the entries for which that is not proven (a rounding boundary may lie inside the interval).
- :func:`exact_entries` computes flagged entries from scratch with :mod:`decimal`: an enclosure of the exact value
  ``sin(pos * base**(-2k/d_model))`` (or ``cos``) whose width shrinks with the working precision, raised until the
  whole enclosure rounds to one value of the target dtype (Ziv's strategy).  The result is correctly rounded
  (round-half-even) for any IEEE-style binary dtype, float64 included.  It terminates: for ``pos > 0`` the exact
  value is transcendental (Lindemann-Weierstrass: ``pos * base**(-2k/d)`` is a nonzero algebraic number), so it is
  never a rounding boundary; ``pos == 0`` is answered exactly.
- :func:`turn_chunks` and :func:`turn_table` derive the fast path's constants with :mod:`decimal` as well, so that
  nothing in the guarantee depends on the platform's libm.

Examples
--------
>>> import numpy as np
>>> float(exact_entries(np.array([355]), np.array([0]), 2, 10000.0, np.float64)[0])  # sin(355), close to 0
-3.014435335948845e-05
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")

_MAX_DIGITS = 2000  # Ziv's loop never gets near this; reaching it would mean a bug, so it raises


# ---------------------------------------------------------------------------------------------------- Decimal maths
def _atan_inv(n: int) -> Decimal:
    """``arctan(1/n)`` for an integer ``n >= 2`` in the current context (alternating series, error < 1 unit)."""
    x = Decimal(1) / n
    x2 = x * x
    total, power, k = x, x, 1
    tiny = Decimal(10) ** (-decimal.getcontext().prec - 2)
    while power > tiny:
        power *= x2
        k += 2
        total += (-power if (k // 2) % 2 else power) / k
    return total


@lru_cache(maxsize=16)
def pi_decimal(digits: int) -> Decimal:
    """Pi rounded to ``digits`` significant digits, by Machin's formula with 10 guard digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = digits + 10
        pi = 4 * (4 * _atan_inv(5) - _atan_inv(239))
        ctx.prec = digits
        return +pi


@lru_cache(maxsize=64)
def _log(base: float, prec: int) -> Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = prec
        return Decimal(base).ln()


@lru_cache(maxsize=4096)
def _frequency(k: int, d_model: int, base: float, prec: int) -> Decimal:
    """``base**(-2k/d_model)`` at ``prec`` digits from correctly rounded ``ln``/``exp`` (relative error analysed in
    :func:`_enclosure`)."""
    with decimal.localcontext() as ctx:
        ctx.prec = prec
        return (-(Decimal(2 * k) / d_model) * _log(base, prec)).exp()


def _series(r: Decimal, want_sin: bool) -> tuple[Decimal, int]:
    """Taylor series of sin or cos at ``|r| <= 0.8`` in the current context; returns the sum and the term count.

    Terms decrease at least 4-fold from the start, so stopping once a term is below ``10**-(prec+2)`` of the leading
    term leaves a truncation error below one unit in the last place of the result.
    """
    r2 = r * r
    term = r if want_sin else Decimal(1)
    total, i, count = term, (1 if want_sin else 0), 1
    tiny = abs(term).scaleb(-decimal.getcontext().prec - 2)
    while abs(term) > tiny:
        term = -term * r2 / ((i + 1) * (i + 2))
        total += term
        i += 2
        count += 1
    return total, count


def _enclosure(pos: int, k: int, want_cos: bool, d_model: int, base: float, digits: int) -> tuple[Fraction, Fraction]:
    """Exact rationals ``lo <= PE <= hi`` for ``PE = sin/cos(pos * base**(-2k/d_model))``, about ``digits`` wide.

    Error budget, with ``u = 10**(1-W)/2`` the unit roundoff at the working precision ``W = digits``:

    - ``ln(base)``, ``2k/d``, their product ``a`` and ``f = exp(-a)`` are each correctly rounded, so ``f`` has a
      relative error of at most ``u*(1 + 3.1*|a|)``; the product ``x = pos*f`` at most ``u*(2.01 + 3.2*|a|)``;
      we use ``eps_x = u*(3 + 4*|ln base|)``.
    - ``r = x - n*pi/2`` is formed at ``W + 12`` digits with pi to ``W + 12`` digits and ``|n| < 10**10``, adding at
      most ``4*10**(-W-11)*(|x| + 1)``; so ``|r - r_exact| <= eps_x*|x| + 4*10**(-W-11)*(|x| + 1)`` where ``r_exact``
      is the reduction of the exact ``x`` with the same ``n``.  When ``n == 0`` no subtraction happens and the
      absolute term vanishes (tiny angles keep a relative error).
    - The series at ``|r| <= pi/4 + tiny``: each term carries at most ``3*i*u`` relative error after ``i`` steps and
      each partial sum adds ``u``; the sum of absolute terms is at most ``sinh|r| <= 1.12|r|`` (sine) or
      ``cosh|r| <= 1.34`` (cosine), so the error is below ``(4*count + 8)*u*1.5*(|r| or 1)``.
    - sin and cos are 1-Lipschitz, so the reduction error carries over unchanged.
    """
    if pos == 0:  # exact: sin 0 = 0, cos 0 = 1
        known = Fraction(1 if want_cos else 0)
        return known, known
    u = Fraction(1, 2 * 10 ** (digits - 1))
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_HALF_EVEN
        x = _frequency(k, d_model, base, digits) * pos
        ctx.prec = digits + 12
        half_pi = pi_decimal(digits + 12) / 2
        n = int((x / half_pi).to_integral_value())
        r = x - n * half_pi if n else x
        ctx.prec = digits
        # quadrant n: sin(x) = sin r, cos r, -sin r, -cos r; cos(x) = cos r, -sin r, -cos r, sin r
        quadrant = (n + (1 if want_cos else 0)) % 4
        value, count = _series(r, want_sin=quadrant % 2 == 0)
        if quadrant >= 2:
            value = -value
    x_frac, r_frac = Fraction(x), abs(Fraction(r))
    eps_x = u * (3 + 4 * math.ceil(abs(math.log(base))))
    err = eps_x * abs(x_frac) + (4 * Fraction(1, 10 ** (digits + 11)) * (abs(x_frac) + 1) if n else 0)
    err += (4 * count + 8) * u * Fraction(3, 2) * (r_frac if quadrant % 2 == 0 else 1)
    v = Fraction(value)
    return v - err, v + err


# ------------------------------------------------------------------------------------------ rounding to any dtype
def _bits_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _step(bits: int, up: bool, itemsize: int) -> int:
    """The bit pattern of the next representable value above (``up``) or below, for sign-magnitude binary floats."""
    sign = 1 << (8 * itemsize - 1)
    negative, magnitude = bool(bits & sign), bits & (sign - 1)
    if magnitude == 0:  # +-0: the neighbours are the smallest subnormals
        return 1 if up else sign | 1
    return bits + (-1 if up == negative else 1)


def nearest_bits(q: Fraction, dtype: npt.DTypeLike) -> int:
    """Bit pattern of ``q`` correctly rounded to ``dtype`` (round-half-even, zero takes the sign of ``q``)."""
    dt = np.dtype(dtype)
    start = np.array(float(q)).astype(dt).view(_bits_dtype(dt)).item()  # within a few ulps of q
    best_bits, best_dist = -1, None
    for bits in (start, _step(start, True, dt.itemsize), _step(start, False, dt.itemsize)):
        value = float(np.array(bits, _bits_dtype(dt)).view(dt).item())
        if not math.isfinite(value):
            continue
        dist = abs(Fraction(value) - q)
        if best_dist is None or dist < best_dist or (dist == best_dist and bits % 2 == 0):
            best_bits, best_dist = bits, dist
    value = float(np.array(best_bits, _bits_dtype(dt)).view(dt).item())
    if value == 0.0 and q != 0:  # -0 and +0 are equally near a tiny q: keep q's sign
        best_bits = np.array(math.copysign(0.0, q), np.float64).astype(dt).view(_bits_dtype(dt)).item()
    return best_bits


def exact_value(pos: int, j: int, d_model: int, base: float, dtype: npt.DTypeLike) -> np.generic:
    """``PE[pos, j]`` correctly rounded to ``dtype`` by Ziv's loop over the working precision."""
    dt = np.dtype(dtype)
    digits = 12 + 3 * dt.itemsize * 2  # about twice the dtype's decimal digits: one round usually suffices
    while digits <= _MAX_DIGITS:
        lo, hi = _enclosure(pos, j // 2, j % 2 == 1, d_model, base, digits)
        bits = nearest_bits(lo, dt)
        if nearest_bits(hi, dt) == bits:
            result: np.generic = np.array(bits, _bits_dtype(dt)).view(dt)[()]  # type: ignore[assignment]
            return result
        digits *= 2
    raise ArithmeticError(f"could not round PE[{pos}, {j}] (d_model={d_model}, base={base!r}) at {_MAX_DIGITS} digits")


def exact_decided(pos: int, j: int, d_model: int, base: float, decide: Callable[[Fraction], T]) -> T:
    """``decide(PE[pos, j])`` for a monotone ``decide`` (a rounding, a quantisation), by Ziv's loop: the working
    precision doubles until both ends of the exact value's enclosure give the same result."""
    digits = 40
    while digits <= _MAX_DIGITS:
        lo, hi = _enclosure(pos, j // 2, j % 2 == 1, d_model, base, digits)
        result = decide(lo)
        if decide(hi) == result:
            return result
        digits *= 2
    raise ArithmeticError(f"could not decide PE[{pos}, {j}] (d_model={d_model}, base={base!r}) at {_MAX_DIGITS} digits")


def exact_entries(
    pos: npt.ArrayLike, cols: npt.ArrayLike, d_model: int, base: float, dtype: npt.DTypeLike
) -> np.ndarray:
    """Correctly rounded ``PE[pos[i], cols[i]]`` for each ``i`` (one :func:`exact_value` call per entry)."""
    positions, columns = np.asarray(pos).ravel(), np.asarray(cols).ravel()
    out = np.empty(positions.shape, np.dtype(dtype))
    for i, (p, j) in enumerate(zip(positions.tolist(), columns.tolist(), strict=True)):
        out[i] = exact_value(p, j, d_model, base, dtype)
    return out


# ---------------------------------------------------------------------------------------- the float64 Ziv check
def round_checked(approx: npt.ArrayLike, err: npt.ArrayLike, dtype: npt.DTypeLike) -> tuple[np.ndarray, np.ndarray]:
    """Round float64 approximations to a narrower binary ``dtype`` where the error bound proves it correct.

    Parameters
    ----------
    approx : array_like of float64
        Approximations ``y`` of exact real values ``z``.
    err : array_like of float64, broadcastable to ``approx``
        Bounds with ``|y - z| <= err`` (non-negative).  A small relative margin for the float64 arithmetic done
        here is added internally.
    dtype : dtype
        Any IEEE-style binary float dtype whose values and midpoints float64 represents exactly (float32, float16,
        ml_dtypes.bfloat16, ...).

    Returns
    -------
    rounded : numpy.ndarray of ``dtype``
        ``z`` correctly rounded (round-half-even) wherever ``undecided`` is False; unspecified elsewhere.
    undecided : numpy.ndarray of bool
        True where a rounding boundary (a midpoint between neighbours, or zero for the sign of a zero result) may
        lie within ``[y - err, y + err]``: those entries need :func:`exact_entries`.

    Examples
    --------
    >>> import numpy as np
    >>> r, bad = round_checked(np.array([0.1, 1 + 2.0**-24]), 1e-17, np.float32)  # 1 + 2**-24: a midpoint
    >>> float(r[0]), bad.tolist()
    (0.10000000149011612, [False, True])
    """
    dt = np.dtype(dtype)
    y = np.asarray(approx, np.float64)
    # the bound absorbs the float64 roundings of y -+ e below (relative 2**-53 each) and float64 underflow
    e = np.asarray(err, np.float64) * (1 + 2.0**-50) + np.abs(y) * 2.0**-52 + 2.0**-1074
    if dt == np.float32:  # one IEEE conversion from float64, round-half-even: monotone, so compare both ends
        hi = np.asarray(y + e).astype(np.float32)
        undecided = hi.view(np.uint32) != np.asarray(y - e).astype(np.float32).view(np.uint32)
        return hi, undecided
    # other targets (bfloat16 converts through float32, rounding twice): test against exact float64 midpoints
    ubits = _bits_dtype(dt)
    c = y.astype(dt)
    bits = c.view(ubits).astype(np.int64)
    sign = 1 << (8 * dt.itemsize - 1)
    neg, mag = (bits & sign) != 0, bits & (sign - 1)
    up = np.where(mag == 0, 1, np.where(neg, bits - 1, bits + 1))
    down = np.where(mag == 0, sign | 1, np.where(neg, bits + 1, bits - 1))
    c64 = c.astype(np.float64)
    mid_up = (c64 + up.astype(ubits).view(dt).astype(np.float64)) * 0.5
    mid_down = (c64 + down.astype(ubits).view(dt).astype(np.float64)) * 0.5
    undecided = ~(((y - mid_down) > e) & ((mid_up - y) > e))
    zero = c64 == 0
    undecided |= zero & ~(((y - e) > 0) | ((y + e) < 0))  # the sign of a zero result must be proven too
    c = np.where(zero, np.copysign(np.zeros_like(c64), y).astype(dt), c)
    return c, undecided


# --------------------------------------------------------------------------------- constants of the fast path
def _binary(x: Decimal, bits: int) -> tuple[int, int]:
    """``(m, e)`` with ``m * 2**e`` within a relative ``2**-bits`` of ``x > 0`` and ``m`` of ``bits + 1`` bits."""
    q = Fraction(x)
    e = q.numerator.bit_length() - q.denominator.bit_length() - bits
    return round(q / Fraction(2) ** e), e


@lru_cache(maxsize=8)
def turn_chunks(d_model: int, base: float, scale: int, chunk_bits: int, n_chunks: int) -> np.ndarray:
    """Per frequency ``k < ceil(d_model/2)``: ``G_k = scale * f_k / (2 pi)`` split into float64 pieces.

    Returns an array of shape ``(n_chunks + 2, K)``: rows ``0..n_chunks-1`` hold floats of at most ``chunk_bits``
    significant bits (each nearest to what remains of ``G_k``, so every remainder shrinks by ``2**-chunk_bits``),
    row ``n_chunks`` the float64 nearest to the final remainder, and the last row ``f_k`` rounded to float64.
    ``f_k = r**k`` with ``r = base**(-2/d_model)`` (80 digits), by repeated multiplication of 192-bit binary
    mantissas (Python integers, truncating): relative error below ``2**-170`` for every ``k < 2**20``, far below
    what the fast path needs (``2**-125``).
    """
    bits = 192
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        r_m, r_e = _binary((Decimal(-2) / d_model * Decimal(base).ln()).exp(), bits)
        t_m, t_e = _binary(scale / (2 * pi_decimal(90)), bits)
    count = (d_model + 1) // 2
    out = np.empty((n_chunks + 2, count))
    f_m, f_e = 1 << bits, -bits
    for k in range(count):
        g_m, g_e = (f_m * t_m) >> bits, f_e + t_e + bits
        for row in range(n_chunks):
            shift = max(0, abs(g_m).bit_length() - chunk_bits)
            chunk = (g_m + (1 << shift >> 1)) >> shift  # nearest chunk_bits-bit multiple of 2**shift
            out[row, k] = math.ldexp(chunk, g_e + shift)
            g_m -= chunk << shift
        out[n_chunks, k] = math.ldexp(float(g_m), g_e)
        out[n_chunks + 1, k] = math.ldexp(float(f_m), f_e)
        f_m *= r_m
        shift = f_m.bit_length() - bits - 1
        f_m, f_e = f_m >> shift, f_e + r_e + shift
    return out


@lru_cache(maxsize=2)
def turn_table(m: int) -> np.ndarray:
    """``sin`` and ``cos`` of ``2 pi i / m`` for ``i < m`` as double-doubles: rows sin_hi, sin_lo, cos_hi, cos_lo.

    Built by rotating ``(cos, sin)`` by ``2 pi / m`` at 60 digits (each step adds a relative error below ``1e-59``,
    so ``m`` steps stay far below the ``2**-106`` of a double-double).
    """
    out = np.empty((4, m))
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        step = 2 * pi_decimal(70) / m
        s1, _ = _series(step, want_sin=True)
        c1, _ = _series(step, want_sin=False)
        s, c = Decimal(0), Decimal(1)
        for i in range(m):
            for row, value in ((0, s), (2, c)):
                hi = float(value)
                out[row, i], out[row + 1, i] = hi, float(value - Decimal(hi))
            s, c = s * c1 + c * s1, c * c1 - s * s1
    return out
