"""Correct rounding for the sinusoid tables: the Ziv check and the arbitrary-precision fallback.

The fast path (:mod:`posenc_cli.encodings._engine`) computes each entry in float64 together with a proven bound on
its error.  This module turns such approximations into correctly rounded values and handles the rest:

- :func:`round_checked` rounds a float64 approximation ``y`` with error bound ``err`` to a narrower binary dtype
  (float32, float16, bfloat16, ...) wherever every real number in ``[y - err, y + err]`` rounds to the same value,
  and flags the entries for which that is not proven (a rounding boundary may lie inside the interval).
- :func:`decided` and :func:`sinusoid_entries` compute flagged entries from scratch with :mod:`decimal`: an
  enclosure of the exact value ``scale * sin(position * base**(-k/denom))`` (or ``cos``; :class:`Sinusoid`) whose
  width shrinks with the working precision, raised until the whole enclosure rounds to one value of the target type
  (Ziv's strategy).  The result is correctly rounded (round-half-even) for any IEEE-style binary dtype, float64
  included, or any other monotone rounding.  It terminates: for a nonzero position the exact value is
  transcendental (Lindemann-Weierstrass: ``position * base**(-k/denom)`` is a nonzero algebraic number), so it is
  never a rounding boundary; position 0 is answered exactly.  :func:`exact_value`, :func:`exact_decided` and
  :func:`exact_entries` are the same for the paper's table (``PE[pos, j]``).
- :func:`turn_table` derives the fast path's table with :mod:`decimal` as well, so that nothing in the guarantee
  depends on the platform's libm.

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
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from posenc_cli.dtypes import bits_dtype, nearest_bits

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


class Sinusoid(NamedTuple):
    """The real parameters of a sinusoid table, each taken as the exact value of its float64 (``denom`` rational).

    ``value(r, k, trig) = scale * trig((start + step * r) * m_k * base**(-k / denom))``, where ``m_k`` is
    ``mults[k]`` (exact positive rationals: RoPE's scaled frequencies, tensor2tensor's ``min_timescale``) or 1
    when ``mults`` is None.
    """

    base: float
    denom: Fraction
    start: float = 0.0
    step: float = 1.0
    scale: float = 1.0
    mults: tuple[Fraction, ...] | None = None

    def position(self, row: int) -> Fraction:
        return Fraction(self.start) + Fraction(self.step) * row

    def mult(self, k: int) -> Fraction:
        """The frequency multiplier ``m_k``."""
        return Fraction(1) if self.mults is None else self.mults[k]


def paper(d_model: int, base: float) -> Sinusoid:
    """The table of "Attention Is All You Need": ``base**(-2k/d_model) = base**(-k/(d_model/2))``."""
    return Sinusoid(base, Fraction(d_model, 2))


@lru_cache(maxsize=4096)
def _frequency(k: int, base: float, denom: Fraction, prec: int) -> Decimal:
    """``base**(-k/denom)`` at ``prec`` digits from correctly rounded ``ln``/``exp`` (relative error analysed in
    :func:`enclosure`)."""
    with decimal.localcontext() as ctx:
        ctx.prec = prec
        return (-(Decimal(k * denom.denominator) / denom.numerator) * _log(base, prec)).exp()


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


def _decimal(q: Fraction) -> Decimal:
    """The exact decimal value of a dyadic rational ``q = n / 2**e`` (``n * 5**e / 10**e``)."""
    e = q.denominator.bit_length() - 1
    assert q.denominator == 1 << e, "positions are dyadic rationals"
    return Decimal(q.numerator * 5**e).scaleb(-e)


def enclosure(
    position: Fraction, k: int, want_cos: bool, base: float, denom: Fraction, digits: int, mult: Fraction = Fraction(1)
) -> tuple[Fraction, Fraction]:
    """Exact rationals ``lo <= v <= hi`` for ``v = sin/cos(position * mult * base**(-k/denom))``, about ``digits``
    wide (``mult`` a positive rational, ``|position * mult| < 2**32``).

    ``position`` is a dyadic rational with ``|position * f| < 1.5 * 10**10`` (the table's domain gives ``< 2**32``).
    Error budget, with ``u = 10**(1-W)/2`` the unit roundoff at the working precision ``W = digits`` and
    ``a = (k/denom) * ln(base)``:

    - ``ln(base)``, ``k/denom``, their product ``a`` and ``f = exp(-a)`` are each correctly rounded, so ``f`` has a
      relative error of at most ``u*(1 + 3.1*|a|)``; the product ``x = position*f`` (the position's decimal is
      exact) at most ``u*(2.01 + 3.2*|a|)``; a multiplier other than 1 adds two roundings (its decimal, the
      product), so we use ``eps_x = u*(5 + 4*ceil|a|)``.
    - ``r = x - n*pi/2`` is formed at ``W + 12`` digits with pi to ``W + 12`` digits and ``|n| < 10**10``, adding at
      most ``4*10**(-W-11)*(|x| + 1)``; so ``|r - r_exact| <= eps_x*|x| + 4*10**(-W-11)*(|x| + 1)`` where ``r_exact``
      is the reduction of the exact ``x`` with the same ``n``.  When ``n == 0`` no subtraction happens and the
      absolute term vanishes (tiny angles keep a relative error).
    - The series at ``|r| <= pi/4 + tiny``: each term carries at most ``3*i*u`` relative error after ``i`` steps and
      each partial sum adds ``u``; the sum of absolute terms is at most ``sinh|r| <= 1.12|r|`` (sine) or
      ``cosh|r| <= 1.34`` (cosine), so the error is below ``(4*count + 8)*u*1.5*(|r| or 1)``.
    - sin and cos are 1-Lipschitz, so the reduction error carries over unchanged.  Negative ``x`` reduce the same way
      (``n`` negative, the quadrant taken modulo 4).
    """
    if position == 0:  # exact: sin 0 = 0, cos 0 = 1
        known = Fraction(1 if want_cos else 0)
        return known, known
    u = Fraction(1, 2 * 10 ** (digits - 1))
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_HALF_EVEN
        f = _frequency(k, base, denom, digits)
        if mult != 1:
            f = f * (Decimal(mult.numerator) / Decimal(mult.denominator))
        x = f * _decimal(position)
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
    eps_x = u * (5 + 4 * (math.ceil(k / denom * abs(math.log(base))) + 1))
    err = eps_x * abs(x_frac) + (4 * Fraction(1, 10 ** (digits + 11)) * (abs(x_frac) + 1) if n else 0)
    err += (4 * count + 8) * u * Fraction(3, 2) * (r_frac if quadrant % 2 == 0 else 1)
    v = Fraction(value)
    return v - err, v + err


# ------------------------------------------------------------------------------------------ rounding to any dtype
def decided(row: int, k: int, want_cos: bool, spec: Sinusoid, decide: Callable[[Fraction], T], digits: int = 40) -> T:
    """``decide(v)`` for the exact ``v = scale * sin/cos(position(row) * f_k)`` (see :class:`Sinusoid`) and a
    monotone ``decide`` (a rounding, a quantisation), by Ziv's loop: the working precision doubles until both ends of
    the value's enclosure give the same result.

    It terminates: for a nonzero position ``x = position * f_k`` is a nonzero algebraic number (``base`` and
    ``k/denom`` are rational), so ``sin x`` and ``cos x`` are transcendental (Lindemann-Weierstrass) and never a
    rounding boundary; position 0 is answered exactly.
    """
    position, scale = spec.position(row), Fraction(spec.scale)
    while digits <= _MAX_DIGITS:
        lo, hi = enclosure(position, k, want_cos, spec.base, spec.denom, digits, spec.mult(k))
        lo, hi = sorted((lo * scale, hi * scale))
        result = decide(lo)
        if decide(hi) == result:
            return result
        digits *= 2
    raise ArithmeticError(f"could not decide the entry of row {row}, k={k} ({'cos' if want_cos else 'sin'}) of {spec}")


def _bits_decider(dtype: np.dtype) -> Callable[[Fraction], int]:
    return lambda q: nearest_bits(q, dtype)


def sinusoid_entries(
    rows: npt.ArrayLike, ks: npt.ArrayLike, coss: npt.ArrayLike, spec: Sinusoid, dtype: npt.DTypeLike
) -> np.ndarray:
    """Correctly rounded entries ``i``: row ``rows[i]``, frequency ``ks[i]``, cosine where ``coss[i]``."""
    dt = np.dtype(dtype)
    out = np.empty(np.shape(rows), dt)
    digits = 12 + 3 * dt.itemsize * 2  # about twice the dtype's decimal digits: one round usually suffices
    for i, (r, k, c) in enumerate(zip(*(np.asarray(a).tolist() for a in (rows, ks, coss)), strict=True)):
        bits = decided(r, k, bool(c), spec, _bits_decider(dt), digits)
        out[i] = np.array(bits, bits_dtype(dt)).view(dt)[()]
    return out


# The paper's table, "Attention Is All You Need": column j is sin (even j) or cos (odd j) of frequency k = j // 2.
def exact_value(pos: int, j: int, d_model: int, base: float, dtype: npt.DTypeLike) -> np.generic:
    """``PE[pos, j]`` correctly rounded to ``dtype`` by Ziv's loop over the working precision."""
    return sinusoid_entries([pos], [j // 2], [j % 2], paper(d_model, base), dtype)[0]  # type: ignore[no-any-return]


def exact_decided(pos: int, j: int, d_model: int, base: float, decide: Callable[[Fraction], T]) -> T:
    """``decide(PE[pos, j])`` for a monotone ``decide`` (a rounding, a quantisation), by Ziv's loop."""
    return decided(pos, j // 2, j % 2 == 1, paper(d_model, base), decide)


def exact_entries(
    pos: npt.ArrayLike, cols: npt.ArrayLike, d_model: int, base: float, dtype: npt.DTypeLike
) -> np.ndarray:
    """Correctly rounded ``PE[pos[i], cols[i]]`` for each ``i``."""
    positions, columns = np.asarray(pos).ravel(), np.asarray(cols).ravel()
    return sinusoid_entries(positions, columns // 2, columns % 2, paper(d_model, base), dtype)


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
    ubits = bits_dtype(dt)
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
@lru_cache(maxsize=2)
def turn_table(m: int) -> np.ndarray:
    """``sin`` and ``cos`` of ``2 pi i / m`` for ``i < m`` as double-doubles: rows sin_hi, sin_lo, cos_hi, cos_lo.

    Each value ``v`` is stored as ``hi = float(v)``, ``lo = float(v - hi)`` (round-to-nearest both), an exact zero as
    ``+0.0`` twice. Only the first octant (``i <= m/8``) is computed, by rotating ``(cos, sin)`` by ``2 pi / m`` at 60
    digits (each step adds a relative error below ``1e-59``, so the steps stay far below the ``2**-106`` of a
    double-double); the rest of the circle follows exactly by symmetry (``sin(pi/2 - x) = cos x``, quadrant turns
    swap and negate), which takes an eighth of the time (this runs once per process, in every command's start-up).
    ``m`` must be a positive multiple of 8 (``ValueError`` otherwise).
    """
    if m <= 0 or m % 8:
        raise ValueError(f"the turn table needs a positive multiple of 8 entries, got {m}")
    octant = m // 8
    s_oct, c_oct = _double_doubles(*_rotations(m, octant))  # (2, octant + 1) each: hi, lo
    q = m // 4
    # first quadrant: i <= m/8 from the rotation, m/8 < i <= m/4 by sin(2 pi i/m) = cos(2 pi (m/4 - i)/m)
    s_q = np.concatenate([s_oct, c_oct[:, q - octant - 1 :: -1]], axis=1)
    c_q = np.concatenate([c_oct, s_oct[:, q - octant - 1 :: -1]], axis=1)
    s_q[:, q], c_q[:, 0] = (1.0, 0.0), (1.0, 0.0)
    s, c = s_q[:, :q], c_q[:, :q]
    # quarter turns (s, c) -> (c, -s): negating a double-double is exact; + 0.0 keeps every zero +0.0
    sines = np.concatenate([s, c, -s + 0.0, -c + 0.0], axis=1)
    cosines = np.concatenate([c, -s + 0.0, -c + 0.0, s], axis=1)
    return np.vstack([sines, cosines])


def _rotations(m: int, last: int) -> tuple[list[Decimal], list[Decimal]]:
    """``sin`` and ``cos`` of ``2 pi i / m`` for ``i <= last`` at 60 digits, by rotation; ``i = 0`` exact."""
    sines, cosines = [Decimal(0)], [Decimal(1)]
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        step = 2 * pi_decimal(70) / m
        s1, _ = _series(step, want_sin=True)
        c1, _ = _series(step, want_sin=False)
        s, c = Decimal(0), Decimal(1)
        for _ in range(last):
            s, c = s * c1 + c * s1, c * c1 - s * s1
            sines.append(s)
            cosines.append(c)
    return sines, cosines


def _double_doubles(sines: list[Decimal], cosines: list[Decimal]) -> tuple[np.ndarray, np.ndarray]:
    """Rows hi, lo of the sines and of the cosines (an exact zero: ``+0.0`` twice)."""
    out = np.zeros((2, 2, len(sines)))
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        for which, values in enumerate((sines, cosines)):
            for i, value in enumerate(values):
                if value:
                    hi = float(value)
                    out[which, 0, i], out[which, 1, i] = hi, float(value - Decimal(hi))
    return out[0], out[1]
