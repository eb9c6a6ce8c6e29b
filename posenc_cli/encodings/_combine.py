"""The per-entry arithmetic of the fast path: the angle addition, its proven error bound, and the Ziv check.

See :mod:`~posenc_cli.encodings._engine` for the decomposition ``X[a] * U[b] + Y[a] * V[b]``.
"""

from __future__ import annotations

import numpy as np

from posenc_cli.encodings import _kernel as K
from posenc_cli.encodings._columns import Columns
from posenc_cli.encodings._exact import Sinusoid

# Error bounds (derived in bound), each 2-3x above what the analysis gives.
_ERR32, _ERR64, _FLOOR, _UNDERFLOW = 2.0**-49, 2.0**-75, 2.0**-1060, 2.0**-1045


class Stats:
    """Per-column inputs of :func:`bound`."""

    def __init__(self, cols: Columns, consts: np.ndarray, spec: Sinusoid) -> None:
        self.f = consts[K.FREQ][cols.kidx] + 2.0**-1074  # an upper bound, subnormal frequencies included
        mixed = spec.start < 0 < spec.step or spec.step < 0 < spec.start
        same_sign = not mixed  # every block and offset angle has one sign: no cancellation
        self.sin = cols.sin & same_sign
        turns = consts[K.STEP_TURNS][cols.kidx]
        under = (turns > 0) & (turns < 2.0**-950)  # the pieces of M * g underflow (see kernel())
        self.floor = np.where(under, _UNDERFLOW, _FLOOR)
        self.scale, self.start, self.step = abs(spec.scale), abs(spec.start), abs(spec.step)


def bound(stats: Stats, last_row: int, wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-column bounds ``(absolute, relative)`` for rows up to ``last_row``: the entry ``y`` of column ``c`` is within
    ``absolute[c] + relative[c] * |y|`` of the exact value.

    Float32 output, ``y = Xh*U'h + Yh*V'h`` in float64 with ``U' = fl(s*Uh)``: ``Xh``, ``Yh`` carry at most
    ``e1 = 2**-54 + 2**-78`` (rounding the kernel's double-double to its high part), ``U'``, ``V'`` at most
    ``|s| (e1 + 2**-53)`` (exact, so ``|s| e1``, when ``s`` is 1); with ``|X| + |Y|``, ``|U| + |V| <= sqrt 2`` the
    products are off by at most ``5.7 * 2**-54 |s|``, their roundings add ``2 * 2**-54 |s|`` (``|XU| + |YV| <= 1``)
    and the sum ``2 * 2**-54 |s|``: ``2**-50.7 |s|``; the float64 roundings of ``y -+ err`` in the check add
    ``2**-53 |s|``; so ``2**-49 |s|`` has a 2.8x margin (4x for ``s = 1``).  Sine columns whose angles stay below
    1 rad and have one sign (``start * step >= 0``) add no cancellation (the two products have one sign and every
    factor is relatively accurate), so there the bound scales with the largest value, ``x_max = |position| f``:
    ``2**-49 |s| x_max``.  Float64 output computes ``y`` in double-double: factors within ``2**-78`` (times
    ``|m| < 2``, plus ``2**-104`` relative for the product by ``m``), hence ``2**-76.4 |s|`` (``2**-75 |s|`` used).
    Sine columns with ``x_max <= 2**-10 < pi / M`` (and one sign) stay at table index 0, where the kernel's
    relative error is at most ``2**-102 + 1.5 * 2**-53 * x**2``; the four factors and the double-double arithmetic
    then give ``2**-99 + 3 * 2**-53 * x_max**2`` relative to the entry (``2**-96 + 2**-49 * x_max**2`` used).
    Absolute floors: ``2**-1060`` covers float64 underflow in the arithmetic (before and after scaling), ``2**-1045``
    the underflow of the kernel's constants (columns with ``M |step| f / (2 pi) < 2**-950``); ``2**-104`` relative
    the rounding of the float64 test itself.
    """
    x_max = stats.f * ((stats.start + stats.step * last_row) * (1 + 2.0**-40))
    s = stats.scale
    if not wide:
        e = np.where(stats.sin, np.minimum(x_max, 1.0), 1.0) * _ERR32 + stats.floor
        return (e * s if s != 1.0 else e) + _FLOOR, np.zeros(0)
    tiny = stats.sin & (x_max <= 2.0**-10)
    absolute = np.where(tiny, 0.0, _ERR64) + stats.floor
    relative = np.where(tiny, 2.0**-96 + 2.0**-49 * x_max * x_max, 0.0) + 2.0**-104
    return (absolute * s if s != 1.0 else absolute) + _FLOOR, relative


def combine32(
    out: np.ndarray, xh: np.ndarray, yh: np.ndarray, uh: np.ndarray, vh: np.ndarray, err: np.ndarray
) -> np.ndarray:
    """Float32 rows into ``out`` (shape ``(nq, rows, d)``); returns the undecided mask.

    Same test as :func:`~posenc_cli.encodings._exact.round_checked` for float32, with the margins already in
    ``err``: the float64 -> float32 conversion rounds once (IEEE, half-even) and is monotone, so equal roundings of
    ``y - err`` and ``y + err`` prove the rounding of everything in between.
    """
    y = xh * uh
    t = yh * vh
    y += t
    np.add(y, err, out=t)
    np.copyto(out, t, casting="same_kind")
    np.subtract(y, err, out=y)
    undecided: np.ndarray = out.view(np.uint32) != y.astype(np.float32).view(np.uint32)
    return undecided


def combine64(
    out: np.ndarray,
    tab: tuple[np.ndarray, ...],
    vec: tuple[np.ndarray, ...],
    err: tuple[np.ndarray, np.ndarray],
    p2: float,
) -> np.ndarray:
    """Float64 rows into ``out``: double-double angle addition, times ``p2`` (a power of two), then the test.

    ``yh + yl`` is within ``e = err[0] + err[1] * |yh|`` of the exact value and ``yh = fl(yh + yl)``; if
    ``|yl| + e`` is below half the gap from ``|yh|`` down to its float64 neighbour (the smaller of its two gaps),
    the exact value rounds to ``yh``.  Scaling by ``p2`` is exact unless it underflows, and subnormal results never
    pass the test (their gap, ``2**-1074``, is below the ``2**-1060`` floor).
    """
    xh, xl, x1, x2, yh_, yl_, y1, y2 = tab
    uh, ul, u1, u2, vh, vl, v1, v2 = vec
    p1 = xh * uh
    p2_ = yh_ * vh
    e = K.prod_err(x1, x2, u1, u2, p1) + K.prod_err(y1, y2, v1, v2, p2_)
    s, t = K.two_sum(p1, p2_)
    t += e + (xh * ul + xl * uh) + (yh_ * vl + yl_ * vh)
    hi, lo = K.two_sum(s, t)
    if p2 != 1.0:
        hi *= p2
        lo *= p2
    out[...] = hi
    a = np.abs(hi)
    below = (a.view(np.int64) - 1).view(np.float64)  # nextafter(a, 0); NaN for a == 0, which stays undecided
    undecided: np.ndarray = ~(np.abs(lo) + (err[0] + a * err[1]) < (a - below) * 0.5)
    return undecided
