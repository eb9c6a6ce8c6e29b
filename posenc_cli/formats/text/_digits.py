"""The shortest digits of float32 values, for chunks of values at once (step 1 of
:mod:`~posenc_cli.formats.text.floats`).

:func:`digits32` gives each value's digits as that module's contract spells them (NumPy's Dragon4, "unique"
mode), with NumPy array operations.

With ``e`` the decimal exponent of ``|v|`` (a table indexed by the binary exponent, corrected by one
comparison), ``s = |v| * 10**(8-e)`` lies in ``[1e8, 1e9)`` and the rounding interval is ``s - h .. s + h``,
``h`` the scaled half-spacing of float32 at ``v`` (between 3 and 60 for normal numbers). The multiple ``c_j`` of
``10**j`` nearest to ``s`` (``j`` digits dropped from nine) lies inside while ``|s - c_j| < h``, and this is
monotone in ``j`` (``c_{j+1}`` is itself a multiple of ``10**j``): the largest such ``j`` gives the shortest
digits and ``c_j`` the nearest of them, which is Dragon4's answer whenever the interval is symmetric. All in
float64: ``s`` is off by less than ``3e-7`` and ``h`` by far less, so every decision is taken with a margin of
``1e-6``. The values whose decision falls within the margin -- a candidate on an interval bound (where the
even/odd rule decides) or half-way between two candidates -- get their digits from NumPy's Dragon4, one at a
time: none in tables of sines and cosines, about 0.4 % of float32 bit patterns drawn at random (mostly integers
above ``2**25``, whose midpoints are integers too). Powers of two (lopsided intervals) take their digits from a
table made with NumPy at import.
"""

from __future__ import annotations

import math

import numpy as np

from ._work import Scratch


def take(table: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[:] = table[index]`` (``index`` in range; clipping is only the fastest mode of ``take``)."""
    return np.take(table, index, out=out, mode="clip")


def _dragon4_digits(value: np.floating) -> tuple[int, int, int]:
    """The shortest digits of a float32 ``|value|`` by NumPy's Dragon4 (the exact, slow path): ``(digits, e, p)``,
    the ``p`` digits as an integer and ``e`` the decimal exponent of the first."""
    text = np.format_float_scientific(np.float32(abs(value)), unique=True, trim="-")
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    return int(digits), int(exponent), len(digits)


# -------------------------------------------------------------------------------------------------- digit tables
# Indexed by the biased exponent t of |v| as a float64 (0 for zero, 874..1150 for finite non-zero float32), or by
# u = 2 * t + (1 if |v| >= 10**(k + 1) else 0), k = floor(log10(2**(t - 1023))): then e = k + that bit.


def _pow10(k: int) -> float:
    """``10**k`` correctly rounded to float64 (int / int rounds correctly, ``10.0**k`` need not)."""
    return float(10**k) if k >= 0 else 1 / 10**-k


def _floor_log10_pow2(b: int) -> int:
    """``floor(log10(2**b))``, exactly (integer comparisons of ``2**b`` with powers of ten)."""

    def at_least(k: int) -> bool:  # 2**b >= 10**k
        return bool(2 ** max(b, 0) * 10 ** max(-k, 0) >= 2 ** max(-b, 0) * 10 ** max(k, 0))

    k = math.floor(b * 0.30102999566398120)
    while at_least(k + 1):
        k += 1
    while not at_least(k):
        k -= 1
    return k


_NEXT_POW10_OF_T = np.full(2048, 10.0)
_E_OF_U = np.zeros(4096, np.int64)  # decimal exponent e of |v|
_SCALE_OF_U = np.full(4096, 1e8)  # 10**(8 - e)
_HALF_OF_U = np.full(4096, 1e8)  # half the float32 spacing at |v|, times 10**(8 - e): the interval's half-width
for _t in range(1023 - 150, 1023 + 129):
    _k = _floor_log10_pow2(_t - 1023)
    _NEXT_POW10_OF_T[_t] = _pow10(_k + 1)
    for _c in (0, 1):
        _E_OF_U[2 * _t + _c] = _k + _c
        _SCALE_OF_U[2 * _t + _c] = _pow10(8 - _k - _c)
        _HALF_OF_U[2 * _t + _c] = math.ldexp(1.0, max(_t - 1023, -126) - 24) * _SCALE_OF_U[2 * _t + _c]  # exact
_POW10 = np.array([_pow10(j) for j in range(10)])
_INV_POW10 = np.array([_pow10(-j) for j in range(10)])
#: Margin, in units of the ninth significant digit, within which a float64 decision is not trusted (errors < 3e-7).
_MARGIN = 1e-6

# Powers of two with a lopsided interval (biased float32 exponent 2..254, significand zero): Dragon4's digits.
_POW2_M = np.zeros(256)
_POW2_E = np.zeros(256, np.int64)
_POW2_JM = np.zeros(256, np.int64)
for _E in range(2, 255):
    _POW2_M[_E], _POW2_E[_E], _p = _dragon4_digits(np.float32(math.ldexp(1.0, _E - 127)))
    _POW2_JM[_E] = 9 - _p


def digits32(x: np.ndarray, w: Scratch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shortest digits of each value of the 1-D float32 ``x``: ``(m, e, jm)``, views into ``w``.

    ``m`` (float64 holding an integer) is the digits, ``9 - jm`` of them (0 for zero), ``e`` the decimal exponent
    of the first. ``w.x32`` is left holding ``|x|``.
    """
    n = x.size
    a, s, h, c, acc, m = (f[:n] for f in w.f)
    u, e, jm = w.i[0][:n], w.i[1][:n], w.i[2][:n]
    ok1, ok2, ok3, slow, tmp = (b[:n] for b in w.b[:5])

    np.abs(x, out=w.x32[:n])
    np.copyto(a, w.x32[:n])
    np.right_shift(a.view(np.int64), 52, out=u)
    take(_NEXT_POW10_OF_T, u, c)
    np.greater_equal(a, c, out=tmp)
    np.left_shift(u, 1, out=u)
    np.add(u, tmp, out=u)
    take(_E_OF_U, u, e)
    take(_SCALE_OF_U, u, c)
    np.multiply(a, c, out=s)  # in [1e8, 1e9)
    take(_HALF_OF_U, u, h)  # between 3 and 60 for normal numbers

    # Eight, seven and six digits, for all values (nine always fit: h > 2.9). acc: the closest call so far.
    for j, okj in ((1, ok1), (2, ok2), (3, ok3)):
        np.multiply(s, _INV_POW10[j], out=c)
        np.rint(c, out=c)
        np.multiply(c, _POW10[j], out=c)
        np.subtract(s, c, out=c)
        np.abs(c, out=c)
        np.subtract(h, c, out=c)  # > 0: the candidate is inside the interval
        np.greater(c, _MARGIN, out=okj)
        if j == 1:
            np.abs(c, out=acc)
        else:
            np.abs(c, out=c)
            np.minimum(acc, c, out=acc)
    np.logical_and(ok2, ok1, out=ok2)
    np.logical_and(ok3, ok2, out=ok3)
    np.add(ok1, ok2, out=jm, dtype=np.int64)
    np.add(jm, ok3, out=jm)
    np.less_equal(acc, _MARGIN, out=slow)

    # Five digits and fewer: only for the values that kept six (a few percent, then a tenth at each step).
    idx = np.flatnonzero(ok3)
    for j in range(4, 9):
        if idx.size == 0:
            break
        sj = s[idx]
        cj = np.multiply(sj, _INV_POW10[j])
        np.rint(cj, out=cj)
        np.multiply(cj, _POW10[j], out=cj)
        np.subtract(sj, cj, out=cj)
        np.abs(cj, out=cj)
        np.subtract(h[idx], cj, out=cj)
        near = np.abs(cj) <= _MARGIN
        if near.any():
            slow[idx[near]] = True
        idx = idx[cj > _MARGIN]
        jm[idx] = j

    # The digits, and whether s was (nearly) half-way between two candidates: then its rounding decided.
    inv = h  # the half-width is no longer needed
    take(_INV_POW10, jm, inv)
    np.multiply(inv, s, out=c)
    np.rint(c, out=m)
    np.subtract(c, m, out=c)
    np.abs(c, out=c)
    np.subtract(c, 0.5, out=c)
    np.abs(c, out=c)
    np.multiply(inv, _MARGIN, out=inv)  # the margin in units of the last digit kept
    np.less_equal(c, inv, out=tmp)
    np.logical_or(slow, tmp, out=slow)

    # 9.99999975e-05 -> 1e-04: the candidate is 10 with eight digits dropped.
    np.equal(m, 10.0, out=tmp)
    if tmp.any():
        carry = np.flatnonzero(tmp)
        carry = carry[jm[carry] == 8]
        m[carry] = 1.0
        e[carry] += 1

    # Powers of two: lopsided interval, Dragon4's digits from the table.
    bits = w.u32[0][:n]
    np.bitwise_and(x.view(np.uint32), 0x7FFFFF, out=bits)
    np.equal(bits, 0, out=tmp)
    if tmp.any():
        pow2 = np.flatnonzero(tmp)
        exps = (x[pow2].view(np.uint32) >> 23) & 0xFF
        pow2, exps = pow2[exps >= 2], exps[exps >= 2].astype(np.intp)
        m[pow2] = _POW2_M[exps]
        e[pow2] = _POW2_E[exps]
        jm[pow2] = _POW2_JM[exps]
        slow[pow2] = False

    if slow.any():
        for i in np.flatnonzero(slow).tolist():
            m[i], e[i], p = _dragon4_digits(x[i])
            jm[i] = 9 - p
    return m, e, jm
