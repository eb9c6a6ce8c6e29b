"""DETR's normalised 2-D sine position embedding (HF transformers ``DetrSinePositionEmbedding``), every entry
correctly rounded, and the float32 values its code computes.

For a feature map of ``height x width`` cells, a pixel mask ``m`` (1 = a real pixel, 0 = padding: DETR's
``pixel_mask`` downsampled to the feature map; all ones without padding) and ``n = num_pos_feats = d_model / 2``::

    y[i, j] = m[0, j] + ... + m[i, j]              x[i, j] = m[i, 0] + ... + m[i, j]      (cumulative sums)
    normalize:  y[i, j] = (y[i, j] - o) / (y[H-1, j] + eps) * scale,  x likewise over the row's last x
    dim_t[c] = temperature ** (2 * (c // 2) / n)                                                c = 0 .. n-1
    pe[i * width + j] = [ sin(y/dim_t[0]), cos(y/dim_t[1]), sin(y/dim_t[2]), ... |  the same of x ]

with ``eps = 1e-6``, ``scale`` 2*pi unless given, and ``o = 0`` (DETR, Conditional DETR, MaskFormer,
Mask2Former, Table Transformer) or ``o = 0.5`` (Deformable DETR's ``DeformableDetrSinePositionEmbedding``,
``variant="deformable"``; it changes only normalised tables). The rows are DETR's ``pos.flatten(2).transpose(1, 2)``
of one image, the sequence its encoder adds; the framework's ``(2n, H, W)`` tensor is ``pe.T.reshape(2n, H, W)``.

**The exact table** (:func:`exact`) is the value of that formula with real numbers: ``eps`` the decimal ``10**-6``
(the constant as the source writes it), ``scale`` the real ``2*pi`` by default (a given ``scale`` is the exact value
of its float64), each entry rounded once. A float64 approximation with a proven error bound rounds most entries
(:func:`~posenc_cli.encodings._exact.round_checked`); the rest, and every entry of a type it does not cover, come
from :mod:`decimal` enclosures whose precision doubles until both ends round alike (Ziv). That ends: the angle is
nonzero times an algebraic number (times pi by default) and its sine and cosine are then transcendental
(Lindemann-Weierstrass, Gelfond-Schneider) or, where the angle is a rational multiple of pi with the odd
denominators ``(last * 10**6 + 1)`` gives, irrational algebraic (Niven): never a rounding boundary. The one
exception is a padded row or column (total 0) of Deformable DETR: ``(0 - 0.5) / 10**-6 * 2*pi = -10**6 * pi``,
whose sine is exactly 0 (written +0.0) and cosine exactly 1, both decided by the loop.

**The framework's table** (:func:`framework`) is that code's float32 sequence: the float32 cumulative sums (exact
integers), ``last + float32(1e-6)`` and the division and ``* float32(scale)`` in float32, ``dim_t`` as
``pow(10000, (2 * floor(c / 2)) / n)`` in float32, ``y / dim_t``, then ``sin`` and ``cos``, the elementary
functions correctly rounded (:mod:`posenc_cli.encodings.float32`).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import float32 as f
from posenc_cli.encodings._exact import enclosure, pi_decimal, round_checked
from posenc_cli.errors import SpecError

__all__ = ["EPS", "MAX_SIDE", "OFFSETS", "check", "exact", "framework", "sums"]

#: The cells per side posenc takes, as every grid kind (DETR's feature maps are an image side / 32, Deformable
#: DETR's finest / 8); the table's memory is checked before anything is made. A mask file's sides stop at 4096 (a
#: 32k-pixel image): it is refused past them before it is read whole.
MAX_SIDE = 1 << 16
#: DETR's ``eps``, the decimal the source writes.
EPS = Fraction(1, 10**6)
#: The offset subtracted before normalising, by variant.
OFFSETS = {"detr": Fraction(0), "deformable": Fraction(1, 2)}
_MAX_DIGITS = 2000


def check(height: object, width: object, d_model: object) -> tuple[int, int, int]:
    """Validate; ``SpecError`` names ``grid`` or ``d_model``."""
    for value in (height, width):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SIDE:
            raise SpecError(f"grid sides must be integers from 1 to {MAX_SIDE}, got {value!r}", param="grid")
    if isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)) or d_model < 4 or d_model % 4:
        raise SpecError(
            "d_model must be a positive multiple of 4 (2 * num_pos_feats, and DETR pairs each sine with a cosine), "
            f"got {d_model!r}",
            param="d_model",
        )
    if d_model > 1 << 16:
        raise SpecError(f"d_model must be at most {1 << 16}, got {d_model!r}", param="d_model")
    return int(height), int(width), int(d_model)  # type: ignore[call-overload]


def sums(height: int, width: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(y, y_last, x, x_last)``: the int64 cumulative sums of the mask down the columns and along the rows, and
    each cell's column total and row total (the divisors of normalisation)."""
    m = np.ones((height, width), np.int64) if mask is None else mask.astype(np.int64)
    y, x = np.cumsum(m, axis=0), np.cumsum(m, axis=1)
    return y, np.broadcast_to(y[-1:, :], y.shape), x, np.broadcast_to(x[:, -1:], x.shape)


def _reduce_and_sum(x: Decimal, want_cos: bool, digits: int) -> tuple[Fraction, Fraction, Fraction]:
    """``(v, |x|, series error)``: ``v`` approximates ``sin x`` or ``cos x`` for a decimal ``x`` taken as exact,
    reduced by ``n * pi/2`` at ``digits + 12`` digits (error ``4 * 10**(-digits-11) * (|x| + 1)`` when ``n != 0``,
    counted here) and summed by Taylor series at ``|r| <= pi/4`` (error ``(4 * terms + 8) * u * 1.5 * (|r| or 1)``,
    ``u`` the unit roundoff at ``digits``: the bounds of :func:`~posenc_cli.encodings._exact.enclosure`)."""
    with decimal.localcontext() as ctx:
        ctx.prec = digits + 12
        half_pi = pi_decimal(digits + 12) / 2
        n = int((x / half_pi).to_integral_value())
        r = x - n * half_pi if n else x
        ctx.prec = digits
        quadrant = (n + (1 if want_cos else 0)) % 4
        sine = quadrant % 2 == 0
        r2 = r * r
        term = r if sine else Decimal(1)
        total, i, count = term, (1 if sine else 0), 1
        tiny = abs(term).scaleb(-digits - 2)
        while abs(term) > tiny:
            term = -term * r2 / ((i + 1) * (i + 2))
            total += term
            i += 2
            count += 1
        if quadrant >= 2:
            total = -total
    u = Fraction(1, 2 * 10 ** (digits - 1))
    err = (4 * count + 8) * u * Fraction(3, 2) * (abs(Fraction(r)) if sine else 1)
    if n:
        err += 4 * Fraction(1, 10 ** (digits + 11)) * (abs(Fraction(x)) + 1)
    return Fraction(total), abs(Fraction(x)), err


def _scaled_enclosure(
    ratio: Fraction, k: int, want_cos: bool, temperature: float, half_n: int, scale: Fraction | None, digits: int
) -> tuple[Fraction, Fraction]:
    """``lo <= trig(ratio * scale * temperature**(-k / half_n)) <= hi`` (``scale`` None: the real 2*pi;
    ``ratio > 0``), about ``digits`` wide.

    Each of ``ln(temperature)``, ``k / half_n``, their product ``a``, ``exp(-a)``, 2*pi (or the scale's exact
    decimal, then one product), the ratio's quotient and the two products is rounded once at ``digits``: the angle's
    relative error is below ``u * (8 + 4 * ceil|a|)`` (``exp`` of an argument off by ``3u|a|``), taken as
    ``u * (10 + 4 * ceil|a|)``."""
    u = Fraction(1, 2 * 10 ** (digits - 1))
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = decimal.ROUND_HALF_EVEN
        a = Decimal(k) / Decimal(half_n) * Decimal(temperature).ln()
        freq = (-a).exp()
        s = 2 * pi_decimal(digits) if scale is None else Decimal(scale.numerator) / Decimal(scale.denominator)
        x = Decimal(ratio.numerator) / Decimal(ratio.denominator) * s * freq
    v, size, err = _reduce_and_sum(x, want_cos, digits)
    err += u * (10 + 4 * math.ceil(abs(k / half_n * math.log(temperature)))) * size
    return v - err, v + err


def _entry(
    position: Fraction,
    k: int,
    want_cos: bool,
    *,
    normalize: bool,
    temperature: float,
    half_n: int,
    scale: Fraction | None,
    decide: Callable[[Fraction], object],
) -> object:
    """``decide`` of the exact entry at ``position`` (the cumulative sum, or its normalised ratio without the
    scale), by Ziv's loop."""
    if position == 0:
        return decide(Fraction(1 if want_cos else 0))
    sign = -1 if position < 0 and not want_cos else 1  # sin is odd, cos even
    digits = 30
    while digits <= _MAX_DIGITS:
        if normalize:
            lo, hi = _scaled_enclosure(abs(position), k, want_cos, temperature, half_n, scale, digits)
        else:
            lo, hi = enclosure(abs(position), k, want_cos, temperature, Fraction(half_n), digits)
        lo, hi = sorted((sign * lo, sign * hi))
        result = decide(lo)
        if decide(hi) == result:
            # an enclosure about 0 (the exact sin(-10**6 * pi) = 0 of a padded row of Deformable DETR): +0.0
            return decide(Fraction(0)) if lo < 0 < hi else result
        digits *= 2
    raise ArithmeticError(f"could not decide the DETR entry at {position}, k={k}")


def _positions(
    cum: np.ndarray, last: np.ndarray, normalize: bool, offset: Fraction
) -> tuple[list[Fraction], np.ndarray]:
    """The distinct exact positions of an axis (cumulative sums, or the normalised ratios before ``* scale``) and
    each cell's index into them."""
    pairs = np.stack([cum.reshape(-1), last.reshape(-1)], axis=1) if normalize else cum.reshape(-1, 1)
    unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
    if normalize:
        values = [(Fraction(int(c)) - offset) / (Fraction(int(t)) + EPS) for c, t in unique.tolist()]
    else:
        values = [Fraction(int(row[0])) for row in unique.tolist()]
    return values, inverse.reshape(-1)


def exact(
    height: int,
    width: int,
    d_model: int,
    *,
    mask: np.ndarray | None = None,
    normalize: bool = True,
    scale: float | None = None,
    temperature: float = 10000.0,
    variant: str = "detr",
    element: ElementType,
) -> np.ndarray:
    """The ``(height * width, d_model)`` table, every entry the exact value rounded once to ``element``.

    Examples
    --------
    >>> t = exact(2, 3, 4, normalize=False, element=ElementType.of("float64"))
    >>> np.allclose(t[5], [np.sin(2.0), np.cos(2.0), np.sin(3.0), np.cos(3.0)], rtol=2**-52, atol=0)  # libm: 1 ulp
    True
    """
    n = d_model // 2
    half_n = n // 2
    y, y_last, x, x_last = sums(height, width, mask)
    offset = OFFSETS[variant]
    q_scale = None if scale is None else Fraction(scale)
    out = np.empty((height * width, d_model), element.storage)
    for half, (cum, last) in enumerate(((y, y_last), (x, x_last))):
        values, inverse = _positions(cum, last, normalize, offset)
        block = np.empty((len(values), n), element.storage)
        ks = np.arange(n) // 2
        fast = element.name in ("float32", "float16")
        if fast:  # float64 angles within 2**-48 relative, numpy's sin/cos within an ulp: proven roundings
            ratio = np.array([float(v) for v in values])[:, None]
            angle = ratio * (2 * math.pi if normalize and scale is None else (scale if normalize else 1.0))
            angle = angle * np.power(float(temperature), -ks / half_n)[None, :]
            approx = np.where(np.arange(n) % 2 == 1, np.cos(angle), np.sin(angle))
            rounded, undecided = round_checked(approx, np.abs(angle) * 2.0**-47 + 2.0**-50, element.storage)
            block[:] = rounded
        else:
            undecided = np.ones(block.shape, bool)
        for p, c in zip(*np.nonzero(undecided), strict=True):
            block[p, c] = _entry(
                values[p], int(ks[c]), bool(c % 2), normalize=normalize, temperature=temperature, half_n=half_n,
                scale=q_scale, decide=element.from_exact,
            )  # fmt: skip
        out[:, half * n : (half + 1) * n] = block[inverse]
    return out


def framework(
    height: int,
    width: int,
    d_model: int,
    *,
    mask: np.ndarray | None = None,
    normalize: bool = True,
    scale: float | None = None,
    temperature: float = 10000.0,
    variant: str = "detr",
) -> np.ndarray:
    """The float32 ``(height * width, d_model)`` table ``DetrSinePositionEmbedding`` computes (the module docstring
    gives its operations).

    Examples
    --------
    >>> row = framework(1, 2, 4, normalize=False)[1]  # cell (0, 1): y = 1, x = 2
    >>> row.tolist() == [np.float32(v) for v in (np.sin(1), np.cos(1), np.sin(2), np.cos(2))]
    True
    """
    n = d_model // 2
    y, y_last, x, x_last = sums(height, width, mask)
    c = np.arange(n, dtype=np.float32)
    exponent = (np.float32(2) * np.floor(c / np.float32(2))) / np.float32(n)
    dim_t = f.pow_(np.float32(temperature), exponent)
    eps32 = f.f32(1e-6)
    columns = []
    for cum, last in ((y, y_last), (x, x_last)):
        embed = cum.astype(np.float32)
        if normalize:
            # float32 last + float32 eps: the exact sum of two float32 fits a float64; one rounding
            denominator = f.f32(last.astype(np.float64) + np.float64(eps32))
            numerator = embed - np.float32(float(OFFSETS[variant]))
            embed = (numerator / denominator) * f.f32(2 * math.pi if scale is None else scale)
        angles = embed.reshape(-1)[:, None] / dim_t[None, :]
        values = np.empty(angles.shape, np.float32)
        values[:, 0::2] = f.sin(angles[:, 0::2])
        values[:, 1::2] = f.cos(angles[:, 1::2])
        columns.append(values)
    return np.concatenate(columns, axis=1)
