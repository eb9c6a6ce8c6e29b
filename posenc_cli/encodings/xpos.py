"""xPos's per-position scale (Sun et al. 2022, "A Length-Extrapolatable Transformer"): the table a RoPE query is
multiplied by, and its key divided by, beside the rotation.

For a rotated width ``w`` (even) and frequency ``k < w / 2`` the scale's base is ``zeta_k = (2k + 0.4 w) / (1.4 w)``
(the paper's ``gamma = 0.4``; exactly ``(10k + 2w) / (7w)``, from ``2/7`` up to below 1), and at row ``i`` of
``L`` rows

``xpos[i, k] = zeta_k ** ((i - c) / scale_base)``

with ``scale_base`` 512 by default and ``c`` the centre the code subtracts, which the two implementations round
differently for an odd ``L`` (equal for an even one):

``torchscale`` (torchscale ``component/xpos_relative_position.py`` ``XPOS.forward``, ``offset=0``)
    ``c = ceil(L / 2)``: positions ``arange(-(L // 2 rounded up), ...)`` (``min_pos = -(length + offset) // 2``).
``rotary-embedding-torch`` (``RotaryEmbedding(use_xpos=True).get_scale``, as ``rotate_queries_and_keys`` calls it)
    ``c = floor(L / 2)``: ``power = (t - len(t) // 2) / scale_base``.

Queries are multiplied by ``xpos`` and keys by ``1 / xpos`` (torchscale ``downscale=True``, rotary-embedding-torch
``scale ** -1``), so a query-key product carries ``zeta ** ((i - j) / scale_base)`` whatever the centre. Both
implementations repeat each frequency's scale over its pair of columns in their interleaved layout
(:func:`expand`).

``arithmetic="exact"``: every entry is the exact real value correctly rounded to float32. ``"framework"``: as both
implementations compute it in float32: ``zeta = f32(f32(2k) + f32(0.4 w)) / f32(1.4 w)`` (an int64 ``arange`` plus
a Python float, divided by a Python float), the exponent ``f32(i - c) / f32(scale_base)``, and ``zeta ** e`` (torch's
float32 ``pow``) correctly rounded. A power whose exact value is rational (``(9/16) ** 0.5 = 3/4`` for ``w = 160``,
``k = 31``) is rounded exactly, the rest by enclosures of growing precision.

Examples
--------
>>> xpos_positions(5, "torchscale").tolist(), xpos_positions(5, "rotary-embedding-torch").tolist()
([-3, -2, -1, 0, 1], [-2, -1, 0, 1, 2])
>>> xpos_scale(np.array([-512, 0, 512]), 4, 512, "exact").tolist()  # zeta = (0.4 * 4) / 5.6 = 2/7, (2 + 1.6) / 5.6
[[3.5, 1.5555555820465088], [1.0, 1.0], [0.2857142984867096, 0.6428571343421936]]
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..dtypes import nearest_bits
from ..errors import SpecError
from ._exact import round_checked
from .float32 import TRUSTED, f32
from .names import XPOS_CENTERS

__all__ = ["CENTERS", "MAX_EXPONENT", "expand", "xpos_positions", "xpos_scale"]

CENTERS = XPOS_CENTERS
#: The largest ``|i - c| / scale_base`` accepted: ``(7/2) ** 64 = 2**115.7`` keeps every scale and its reciprocal a
#: normal float32 (real models stay below 16: 8k positions at the default 512).
MAX_EXPONENT = 64
_MAX_DIGITS = 4000


def xpos_positions(rows: int, center: str) -> np.ndarray:
    """The signed positions ``i - c`` of rows ``0 .. rows - 1`` (int64), centred as ``center``'s code does."""
    if center not in CENTERS:
        raise SpecError(f"xpos_center must be one of {', '.join(CENTERS)}, got {center!r}", param="xpos_center")
    c = (rows + 1) // 2 if center == "torchscale" else rows // 2
    return np.arange(rows, dtype=np.int64) - c


def _root(n: int, b: int) -> int | None:
    """The integer ``r`` with ``r ** b == n`` (``n >= 1``), or None."""
    if b == 1 or n == 1:
        return n
    if n.bit_length() <= b:  # r >= 2 would give at least 2**b > n
        return None
    guess = round(math.exp(math.log(n) / b))
    return next((r for r in (guess - 1, guess, guess + 1) if r > 0 and r**b == n), None)


def _rational_power(base: Fraction, e: Fraction) -> Fraction | None:
    """``base ** e`` (``base > 0``) when it is rational, else None (it is then irrational: algebraic)."""
    n, d = _root(base.numerator, e.denominator), _root(base.denominator, e.denominator)
    if n is None or d is None:
        return None
    return Fraction(n, d) ** e.numerator


def _float32(bits: int) -> np.float32:
    return np.float32(np.array(bits, np.uint32).view(np.float32))


def _decide(base: Fraction, e: Fraction) -> np.float32:
    """``base ** e`` correctly rounded to float32: exactly when rational, else from Decimal enclosures (the value
    is then irrational, never a float32 or a midpoint, so the loop ends)."""
    exact = _rational_power(base, e)
    if exact is not None:
        return _float32(nearest_bits(exact, np.float32))
    digits = 40
    while digits <= _MAX_DIGITS:
        with decimal.localcontext() as ctx:
            ctx.prec = digits + 10
            ln = (Decimal(base.numerator) / Decimal(base.denominator)).ln()
            y = ln * (Decimal(e.numerator) / Decimal(e.denominator))
            ctx.prec = digits
            v = Fraction(y.exp())
        slack = (abs(Fraction(y)) + 2) * Fraction(1, 10 ** (digits - 3))  # ln's, the product's and exp's errors
        lo, hi = nearest_bits(v * (1 - slack), np.float32), nearest_bits(v * (1 + slack), np.float32)
        if lo == hi:
            return _float32(lo)
        digits *= 2
    raise ArithmeticError(f"could not round {base} ** {e} to float32")  # pragma: no cover - irrational


def _powers(bases: list[Fraction], exponents: list[Fraction], approx: np.ndarray, err: np.ndarray) -> np.ndarray:
    """``bases[k] ** exponents[i]`` correctly rounded to float32, ``(len(exponents), len(bases))``, from float64
    approximations within ``err``; the entries that bound does not decide by :func:`_decide`."""
    out, undecided = round_checked(approx, err, np.float32)
    out = np.asarray(out, np.float32)
    for i, k in zip(*np.nonzero(undecided), strict=True):
        out[i, k] = _decide(bases[k], exponents[i])
    return out


def _check_range(positions: np.ndarray, scale_base: int) -> None:
    reach = int(np.max(np.abs(positions))) if positions.size else 0
    if reach > MAX_EXPONENT * scale_base:
        raise SpecError(
            f"xPos's scale leaves float32's range past |position| / xpos_scale_base = {MAX_EXPONENT}: the positions "
            f"reach {reach}, so xpos_scale_base must be at least {-(-reach // MAX_EXPONENT)}",
            param="xpos_scale_base",
        )


def xpos_scale(positions: np.ndarray, width: int, scale_base: int, arithmetic: str) -> np.ndarray:
    """The ``(len(positions), width / 2)`` float32 scales ``zeta_k ** (p / scale_base)`` at the signed
    ``positions`` (int64, already centred: :func:`xpos_positions`), one column per frequency."""
    _check_range(positions, scale_base)
    k = np.arange(width // 2, dtype=np.int64)
    p = np.asarray(positions, np.int64)
    if arithmetic == "exact":
        bases = [Fraction(10 * int(j) + 2 * width, 7 * width) for j in k]
        exponents = [Fraction(int(q), scale_base) for q in p]
        e64 = p.astype(np.float64) / scale_base
        approx = np.power(((10 * k + 2 * width) / (7 * width))[None, :], e64[:, None])
        # the float64 base and exponent are each within 2**-53: their effect on the power is |e ln zeta| 2**-52
        err = approx * (TRUSTED + np.abs(e64)[:, None] * 2.0**-49)
        return _powers(bases, exponents, approx, err)
    zeta = ((2 * k).astype(np.float32) + f32(0.4 * width)) / f32(1.4 * width)
    e32 = p.astype(np.float32) / f32(scale_base)
    approx = np.power(zeta.astype(np.float64)[None, :], e32.astype(np.float64)[:, None])
    bases = [Fraction(float(z)) for z in zeta]
    exponents = [Fraction(float(v)) for v in e32]
    return _powers(bases, exponents, approx, approx * TRUSTED)


def expand(scales: np.ndarray, layout: str) -> np.ndarray:
    """Per-frequency ``scales`` ``(rows, w / 2)`` laid out as the caches' columns: ``interleaved`` repeats each
    over its pair (torchscale's and rotary-embedding-torch's own layout), ``half`` over both halves,
    ``half-width`` keeps one column per frequency."""
    if layout == "interleaved":
        return np.repeat(scales, 2, axis=1)
    if layout == "half":
        return np.concatenate([scales, scales], axis=1)
    return scales
