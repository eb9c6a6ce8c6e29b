"""Correctly rounded float64 primitives for code that computes in float64 and casts to float32 (diffusers' and MAE's
numpy or float64 torch paths): the companions of :mod:`posenc_cli.encodings.float32`.

- :func:`pow_`: ``base**e`` of float64 exponents, correctly rounded to float64.
- :func:`trig_to_float32`: ``f32(f64(cos x))`` or ``f32(f64(sin x))`` of float64 angles: the correctly rounded
  float64 value, then rounded to float32, the double rounding of float64 code whose result is cast to float32.

Both take numpy's float64 value where its error (trusted to ``2**-40`` relative, as in :mod:`.float32`) proves
the rounding, and decide the rest by :mod:`decimal` enclosures whose precision doubles until both ends round alike
(Ziv's strategy): a nonzero float64 angle's sine and cosine are transcendental, and a power of a rational exponent
either is exactly representable (decided at once) or is not a float64 midpoint, so each loop ends.

Examples
--------
>>> import numpy as np
>>> pow_(10000.0, np.array([0.0, 0.5, 0.25])).tolist()
[1.0, 100.0, 10.0]
>>> trig_to_float32(np.array([0.0, 1.0]), want_cos=True).tolist()  # cos 1 = 0.54030230586813971740...
[1.0, 0.5403022766113281]
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..dtypes import nearest_bits
from ._exact import enclosure, round_checked

__all__ = ["TRUSTED", "pow_", "trig_to_float32"]

#: The relative error numpy's float64 ``pow``, ``cos`` and ``sin`` are trusted to (every libm is within a few
#: float64 ulps, ``2**-50``).
TRUSTED = 2.0**-40


def pow_(base: float, exponents: np.ndarray) -> np.ndarray:
    """``base**e`` for each float64 exponent ``e``, correctly rounded to float64 (``base > 0``; ``e = 0`` or
    ``base = 1`` gives 1)."""
    out = np.ones(exponents.shape, np.float64)
    flat = out.reshape(-1)
    for i, e in enumerate(np.asarray(exponents, np.float64).reshape(-1).tolist()):
        qe = Fraction(e)
        digits = 40
        while qe != 0 and base != 1:
            with decimal.localcontext() as ctx:
                ctx.prec = digits + 10
                y = Decimal(base).ln() * (Decimal(qe.numerator) / Decimal(qe.denominator))
                ctx.prec = digits
                v = Fraction(y.exp())
            err = v * Fraction(1, 10 ** (digits - 6)) * (abs(Fraction(y)) + 1)
            bits = nearest_bits(v - err, np.float64)
            if bits == nearest_bits(v + err, np.float64):
                flat[i] = np.array(bits, np.uint64).view(np.float64)
                break
            digits *= 2
    return out


def trig_to_float32(angles: np.ndarray, want_cos: bool) -> np.ndarray:
    """``cos`` (``want_cos``) or ``sin`` of float64 ``angles``, correctly rounded to float64, then to float32."""
    angles = np.asarray(angles, np.float64)
    flat = angles.reshape(-1)
    approx = (np.cos if want_cos else np.sin)(angles)
    out, undecided = round_checked(approx, np.abs(approx) * TRUSTED + 2.0**-1000, np.float32)
    out = np.asarray(out, np.float32).reshape(-1)
    for i in np.flatnonzero(undecided.reshape(-1)).tolist():
        if flat[i] == 0:
            out[i] = np.float32(1.0 if want_cos else 0.0)
            continue
        digits = 40
        while True:
            lo, hi = enclosure(Fraction(float(flat[i])), 0, want_cos, 2.0, Fraction(1), digits)
            bits = nearest_bits(lo, np.float64)
            if bits == nearest_bits(hi, np.float64):
                out[i] = np.float32(np.array(bits, np.uint64).view(np.float64))
                break
            digits *= 2
    return out.reshape(angles.shape)
