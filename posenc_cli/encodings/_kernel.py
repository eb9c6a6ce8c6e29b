"""The fast path's arithmetic: double-double helpers, per-column constants, and the sin/cos kernel.

The kernel evaluates ``sin`` and ``cos`` of ``phi_k + r * g_k`` turns (times ``2 pi``) for integer rows
``0 <= r < 2**32``, with ``g_k = step * f_k / (2 pi)`` and the phase ``phi_k = start * f_k / (2 pi)``, i.e. of the
angle ``(start + step * r) * f_k``, to an absolute error below ``2**-78`` (see :func:`kernel`).  Nothing here calls
libm: the constants come from :mod:`decimal` and exact integer arithmetic (:func:`constants`).
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np

from posenc_cli.encodings._exact import pi_decimal, turn_table

M = 2048  # the kernel's table: angle = 2 pi i / M + delta with |delta| <= pi / M
_BITS, _PIECES = 21, 3  # 53 - 21 = 32 bits of row index
_TWO_PI_HI = float(2 * pi_decimal(40))
_TWO_PI_M = (_TWO_PI_HI / M, float(2 * pi_decimal(40) - decimal.Decimal(_TWO_PI_HI)) / M)  # double-double
_TWO_PI_M_1 = _TWO_PI_M[0] * 134217729.0 - (_TWO_PI_M[0] * 134217729.0 - _TWO_PI_M[0])  # Veltkamp halves of the
_TWO_PI_M_2 = _TWO_PI_M[0] - _TWO_PI_M_1  # high part, as split below
_S = (-1 / 6, 1 / 120, -1 / 5040, 1 / 362880)  # sin d = d + d**3 * S(d**2)
_T = (1 / 24, -1 / 720, 1 / 40320)  # cos d - 1 = -d**2 / 2 + d**4 * T(d**2)
_MANTISSA = 192  # bits of the binary mantissas in constants()

# Rows of the constants() array.
PIECES = slice(0, _PIECES + 1)  # three 21-bit pieces of M * g_k, then the float64 nearest to the remainder
FREQ = _PIECES + 1  # f_k rounded to float64
PHASE = slice(_PIECES + 2, _PIECES + 5)  # M * phi_k = n + hi + lo: n an integer in [0, M), |hi| <= 1/2, lo
STEP_TURNS = _PIECES + 5  # |M * g_k|, rounded to float64 (the underflow test of the error bound)


# ------------------------------------------------------------------------------------ double-double arithmetic
def split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp: ``a == hi + lo`` exactly, both with at most 26 significant bits (so their products are exact)."""
    t = a * 134217729.0  # 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth: ``s + e == a + b`` exactly with ``s = fl(a + b)``, whatever the magnitudes."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def prod_err(a1: np.ndarray, a2: np.ndarray, b1: np.ndarray, b2: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Dekker: the exact ``a*b - p`` for ``p = fl(a*b)``, from the Veltkamp halves of ``a`` and ``b``."""
    err: np.ndarray = ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2
    return err


# -------------------------------------------------------------------------------------------------- constants
def _binary(x: Decimal | Fraction, bits: int) -> tuple[int, int]:
    """``(m, e)`` with ``m * 2**e`` within a relative ``2**-bits`` of ``x > 0`` and ``m`` of ``bits + 1`` bits."""
    q = Fraction(x)
    e = q.numerator.bit_length() - q.denominator.bit_length() - bits
    return round(q / Fraction(2) ** e), e


def _dd(m: int, e: int) -> tuple[float, float]:
    """``m * 2**e`` as a double-double ``hi + lo`` (``hi`` the nearest float64, ``lo`` the nearest to the rest)."""
    extra = abs(m).bit_length() - 120  # 120 bits are plenty for a double-double (and float(m) cannot overflow)
    if extra > 0:
        m, e = m >> extra, e + extra
    hi = math.ldexp(float(m), e)
    if hi == 0.0:
        return 0.0, 0.0
    mant, exp = math.frexp(hi)
    hm, he = int(mant * 2**53), exp - 53
    rest = m - (hm << (he - e)) if he >= e else (m << (e - he)) - hm
    return hi, math.ldexp(float(rest), min(e, he))


def _power(r_m: int, r_e: int, n: int) -> tuple[int, int]:
    """``(r_m * 2**r_e) ** n`` as a truncated ``_MANTISSA + 1``-bit mantissa and exponent (square and multiply)."""
    p_m, p_e = 1 << _MANTISSA, -_MANTISSA
    while n:
        if n & 1:
            p_m, p_e = _normal(p_m * r_m, p_e + r_e)
        n >>= 1
        if n:
            r_m, r_e = _normal(r_m * r_m, r_e + r_e)
    return p_m, p_e


def _normal(m: int, e: int) -> tuple[int, int]:
    shift = m.bit_length() - _MANTISSA - 1
    return m >> shift, e + shift


@lru_cache(maxsize=8)
def constants(
    ks: bytes, base: float, denom: Fraction, start: float, step: float, mults: tuple[Fraction, ...] | None = None
) -> np.ndarray:
    """Per frequency index ``k`` (``ks``: sorted distinct ``int64`` values): the rows named by :data:`PIECES`,
    :data:`FREQ`, :data:`PHASE` and :data:`STEP_TURNS`, shape ``(_PIECES + 6, K)``.

    ``f_k = r**k`` with ``r = base**(-1/denom)`` (80 digits), by square-and-multiply on 193-bit mantissas (Python
    integers, truncating): each multiplication adds a relative error below ``2**-192`` and at most ``64`` of them
    separate consecutive ``k`` (at most one for consecutive integers), so ``f_k`` is within ``2**-160`` relative
    for up to ``2**20`` frequencies (the fast path needs ``2**-127``).  The pieces of ``M * step * f_k / (2 pi)``
    are nearest ``21``-bit multiples of what remains (each remainder shrinks by ``2**-21``); the phase is the exact
    product ``M * start * f_k / (2 pi)`` of the binary mantissas, rounded to an integer plus a double-double.
    With ``mults``, ``f_k`` is ``mults[k] * r**k`` (a positive rational; the caller keeps
    ``|position * f_k| < 2**32``): the product is truncated to the same 193 bits, one more ``2**-192``.
    """
    keys = np.frombuffer(ks, np.int64).tolist()
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        r_m, r_e = _binary((Decimal(-denom.denominator) / denom.numerator * Decimal(base).ln()).exp(), _MANTISSA)
        turns = M / (2 * pi_decimal(90))
        t_m, t_e = _binary(turns * Decimal(abs(step)), _MANTISSA) if step else (0, 0)
        s_m, s_e = _binary(turns * Decimal(abs(start)), _MANTISSA) if start else (0, 0)
    out = np.zeros((_PIECES + 6, len(keys)))
    f_m, f_e, k_prev, powers = 1 << _MANTISSA, -_MANTISSA, 0, {1: (r_m, r_e)}
    for i, k in enumerate(keys):
        if k != k_prev:
            if k - k_prev not in powers:
                powers[k - k_prev] = _power(r_m, r_e, k - k_prev)
            p_m, p_e = powers[k - k_prev]
            f_m, f_e = _normal(f_m * p_m, f_e + p_e)
            k_prev = k
        m_m, m_e = f_m, f_e
        if mults is not None and mults[k] != 1:
            m_m, m_e = _normal((f_m * mults[k].numerator << _MANTISSA) // mults[k].denominator, f_e - _MANTISSA)
        out[FREQ, i] = math.ldexp(float(m_m), m_e)
        g_m, g_e = (m_m * t_m) >> _MANTISSA, m_e + t_e + _MANTISSA
        out[STEP_TURNS, i] = max(math.ldexp(float(g_m), g_e), math.ulp(0.0)) if g_m else 0.0  # 0 iff step is 0
        for row in range(_PIECES):
            shift = max(0, g_m.bit_length() - _BITS)
            chunk = (g_m + (1 << shift >> 1)) >> shift  # nearest _BITS-bit multiple of 2**shift
            out[row, i] = math.ldexp(chunk, g_e + shift)
            g_m -= chunk << shift
        out[_PIECES, i] = math.ldexp(float(g_m), g_e)
        if s_m:
            _phase(out[:, i], m_m * s_m, m_e + s_e, start < 0)
    if step < 0:
        out[PIECES] = -out[PIECES]
    return out


def _phase(column: np.ndarray, p_m: int, p_e: int, negative: bool) -> None:
    """Write ``+-p_m * 2**p_e`` as ``n + hi + lo`` into ``column[PHASE]``: ``n = round(p) mod M``, ``|hi| <= 1/2``."""
    if negative:
        p_m = -p_m
    if p_e >= 0:
        n, rest = p_m << p_e, 0
    else:
        n = (p_m + (1 << (-p_e - 1))) >> -p_e
        rest = p_m - (n << -p_e)
    hi, lo = _dd(rest, p_e) if rest else (0.0, 0.0)
    column[PHASE] = (n % M, hi, lo)


@lru_cache(maxsize=1)
def _table() -> np.ndarray:
    """Rows sin_hi, sin_lo, cos_hi, cos_lo of ``2 pi i / M``, then the Veltkamp halves of sin_hi and cos_hi."""
    t = turn_table(M)
    return np.vstack([t, *split(t[0]), *split(t[2])])


def kernel_constants() -> tuple[np.ndarray, np.ndarray]:
    """What :func:`kernel` reads besides its arguments, for the compiled core's copy of it (``posenc_cli._core``):
    the turn table and its Veltkamp halves (``(8, M)``), and the 11 floats ``2 pi / M`` (double-double), the Veltkamp
    halves of its high part, then the Taylor coefficients :data:`_S` and :data:`_T`."""
    floats = (*_TWO_PI_M, _TWO_PI_M_1, _TWO_PI_M_2, *_S, *_T)
    return _table(), np.array(floats, np.float64)


# --------------------------------------------------------------------------------------------------- the kernel
def kernel(
    rows: np.ndarray, g: np.ndarray, phase: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``sin``, ``cos`` of ``2 pi (phase + rows g) / M`` as double-doubles ``(s_hi, s_lo, c_hi, c_lo)``, ``(n, K)``.

    ``rows`` has shape ``(n, 1)`` (integers below ``2**32`` as float64), ``g`` the :data:`PIECES` rows of
    :func:`constants`, ``phase`` its :data:`PHASE` rows (or None for a zero phase).  With ``|rows * step| < 2**33``
    (``f_k <= 1``, so angles below ``2**33`` rad) the error is below ``2**-78`` absolute, and below ``2**-68``
    relative for angles under 1 rad whose row and phase terms have the same sign.  The budget, in radians:

    - reduction: ``rows * g_i`` and ``a - rint(a)`` are exact for the three 21-bit pieces, the phase's ``hi`` adds
      exactly (two-sum); what is left is the float64 tail's representation error (``2**-116`` of ``rows * g``, so
      ``2**-83``), the rounding of ``rows * tail`` (``|rows * tail| <= 2**-21.6`` turns/M) and of the sum of the low
      parts (``2**-83.4`` each), and the phase's double-double error (``2**-107`` turns/M);
      ``delta = (2 pi / M) * v`` is formed in double-double (``2**-100``).
    - ``delta**3 * S(delta**2) <= 2**-30.6`` is evaluated in float64 (relative ``9 * 2**-53``): ``2**-80.5``;
      ``cos delta - 1`` is double-double; the truncated Taylor terms are below ``2**-100``.
    - recombination ``sin(t + d) = sin t + cos t sin d + sin t (cos d - 1)`` with double-double table values and
      exact Dekker products; the low-order sums carry terms up to ``2**-30`` (``2**-82`` of rounding).
    Total under ``2**-79.5``.  Angles under 1 rad keep the table index at most 326, where sines are at least
    ``sin(pi / M) = 2**-9.35``, so relative errors stay below ``2**-68``.  Angles ``x < pi / M`` stay at index 0,
    where no error is absolute when the row term and the phase have the same sign: the reduction and ``delta`` are
    exact to ``2**-102`` relative and only the cubic term's ``9 * 2**-53`` adds ``1.5 * 2**-53 * x**2``.  Underflow
    (pieces or phases below ``2**-969``) adds absolute errors below ``2**-1049`` (``2**32`` times ``2**-1075`` per
    piece); the error bound accounts for them per column (:data:`STEP_TURNS`).
    """
    a = rows * g[0]
    n = np.rint(a)
    v1 = a - n
    a = rows * g[1]
    r = np.rint(a)
    n += r
    v2 = a - r
    a = rows * g[2]
    r = np.rint(a)
    n += r
    h, e1 = two_sum(v1, v2)
    h, e2 = two_sum(h, a - r)
    low = e1 + e2 + rows * g[3]
    if phase is not None:
        n += phase[0]
        h, e3 = two_sum(h, phase[1])
        low += e3 + phase[2]
    r = np.rint(h)
    n += r
    vh, vl = two_sum(h - r, low)  # v in units of 1/M turn, |v| <= 1/2 + 2**-22
    ch, cl = _TWO_PI_M
    p = ch * vh
    w1, w2 = split(vh)
    rest = ((_TWO_PI_M_1 * w1 - p) + _TWO_PI_M_1 * w2 + _TWO_PI_M_2 * w1) + _TWO_PI_M_2 * w2 + (ch * vl + cl * vh)
    dh = p + rest  # |rest| <= 2**-51 |p|: fast two-sum
    dl = rest - (dh - p)
    tab = np.take(_table(), n.astype(np.int64) & (M - 1), axis=1)
    sh, sl, cth, ctl, s1, s2, c1, c2 = tab
    x = dh * dh
    d1, d2 = split(dh)
    xl = prod_err(d1, d2, d1, d2, x) + 2 * dh * dl
    sin_lo = dl + dh * x * (_S[0] + x * (_S[1] + x * (_S[2] + x * _S[3])))  # sin d = dh + sin_lo
    rh = -0.5 * x  # cos d - 1 = rh + rl
    rl = -0.5 * xl + x * x * (_T[0] + x * (_T[1] + x * _T[2]))
    r1, r2 = split(rh)
    out: list[np.ndarray] = []
    # sin(t + d) = a + b sin d + a (cos d - 1) with a = sin t, b = cos t; cos(t + d): a = cos t, b = -sin t
    for ah, al, a1, a2, bh, bl, b1, b2, sign in (
        (sh, sl, s1, s2, cth, ctl, c1, c2, 1.0),
        (cth, ctl, c1, c2, sh, sl, s1, s2, -1.0),
    ):
        pb = bh * dh
        eb = prod_err(b1, b2, d1, d2, pb) + bh * sin_lo + bl * dh
        pa = ah * rh
        ea = prod_err(a1, a2, r1, r2, pa) + ah * rl + al * rh
        s, t1 = two_sum(ah, sign * pb)
        s, t2 = two_sum(s, pa)
        out.extend(two_sum(s, t1 + t2 + al + sign * eb + ea))
    return out[0], out[1], out[2], out[3]
