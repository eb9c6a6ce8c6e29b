"""``arithmetic="framework"`` for the grid kinds: the relative-position buckets, SwinV2's coordinates and the 2-D
sincos table as the code each kind follows computes them, operation by operation.

As in :mod:`posenc_cli.encodings.framework`: ``+ - * /`` are IEEE operations in the framework's type (numpy's, bit
for bit), a Python number the code combines with a float32 tensor is rounded to float32 first (torch's CPU kernels
take a wrapped Python scalar in the tensor's type), and each elementary function is **correctly rounded** in that
type (:func:`log` and :func:`log2` here; a platform's own ``log`` may differ by an ulp).

- ``t5`` (transformers ``models/t5/modeling_t5.py`` ``T5Attention._relative_position_bucket``): with ``e = n // 2``
  the bucket of ``a >= e`` is ``e + trunc(f32(f32(log(f32(a) / f32(e))) / f32(ln(D / e))) * f32(n - e))``, then
  ``min(.., n - 1)``: ``relative_position.float() / max_exact``, ``torch.log``, a division by the Python float
  ``math.log(max_distance / max_exact)`` and a product with the int ``num_buckets - max_exact``, then
  ``.to(torch.long)`` (truncation).
- ``deberta`` (transformers ``models/deberta_v2/modeling_deberta_v2.py`` ``make_log_bucket_position``): the bucket
  of ``|r| > m = b // 2`` is ``sign(r) * (ceil(log(f32(|r|) / f32(m)) / log(f32((P - 1) / m)) * f32(m - 1)) + m)``:
  ``abs_pos / mid`` is a true division of an int64 tensor (float32), ``torch.tensor((max_position - 1) / mid)`` a
  Python float rounded to a float32 tensor, both logarithms float32.
- ``shaw`` has no floating point: its framework index is its exact one.
- ``swinv2`` (transformers ``models/swinv2/modeling_swinv2.py`` ``Swinv2SelfAttention.create_coords_table_and_index``
  and timm ``swin_transformer_v2.WindowAttention``): ``f32(c) / f32(P)`` (``P`` the pretrained or own side minus
  one), ``* 8`` (exact), ``+ 1.0``, ``log2``, the sign, ``/ math.log2(8)`` (3.0): every step float32.
- ``sincos2d`` (transformers ``models/vit_mae/modeling_vit_mae.py`` ``build_2d_sinusoidal_position_embedding``,
  MAE's numpy ``get_2d_sincos_pos_embed``, diffusers ``get_2d_sincos_pos_embed``): float64 throughout,
  ``omega = k / q``, ``1.0 / base**omega``, the product ``position * omega``, ``sin`` and ``cos``, then one rounding
  to float32 (``.to(dtype)``, ``.float()``). Each float64 function is correctly rounded here, and the final float32
  value is ``f32(f64(sin(x)))``: decided from numpy's float64 value where no float32 rounding boundary is near, else
  from an exact enclosure rounded to float64 and then to float32 (the double rounding the framework does).

Examples
--------
>>> log(np.float32([1.0, 2.0])).tolist()
[0.0, 0.6931471824645996]
>>> log2(np.float32([8.0, 3.0])).tolist()
[3.0, 1.5849624872207642]
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..dtypes import ElementType, nearest_bits
from . import float64
from ._exact import round_checked
from .framework import to_element

__all__ = ["deberta_buckets", "log", "log2", "sincos2d", "swinv2_coords", "t5_buckets"]

#: The relative error trusted of numpy's float64 ``log``, ``log2``, ``sin``, ``cos``, ``pow`` (within ``2**-50``).
TRUSTED = 2.0**-40
_MAX_DIGITS = 2000
_LN2_DIGITS: dict[int, Decimal] = {}


def _f32(values: npt.ArrayLike) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float32)


def _rounded(
    approx: np.ndarray, exact: Callable[[int, int], tuple[Fraction, Fraction]], dtype: npt.DTypeLike, err: float
) -> np.ndarray:
    """``approx`` (float64, relative error within ``err``) correctly rounded to ``dtype``; an undecided entry ``i``
    from enclosures ``exact(i, digits)`` of its exact value, the digits doubling until both ends round alike."""
    out, undecided = round_checked(approx, np.abs(approx) * err + 2.0**-1000, dtype)
    out = np.asarray(out, dtype).reshape(-1)
    for i in np.flatnonzero(undecided.reshape(-1)).tolist():
        digits = 40
        while True:
            lo, hi = exact(i, digits)
            bits = nearest_bits(lo, dtype)
            if bits == nearest_bits(hi, dtype):
                out[i] = np.array(bits, out.view(f"u{out.itemsize}").dtype).view(dtype)
                break
            digits *= 2
            if digits > _MAX_DIGITS:  # pragma: no cover - only an exact value on a boundary, decided before
                raise ArithmeticError(f"could not round entry {i}")
    return out.reshape(approx.shape)


def _ln(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """``ln(x)`` within a relative ``10**(4 - digits)`` (Decimal's ``ln`` is correctly rounded to ``digits``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = digits + 10
        d = Decimal(x.numerator) / Decimal(x.denominator)
        ctx.prec = digits
        v = Fraction(d.ln())
    err = abs(v) * Fraction(1, 10 ** (digits - 4)) + Fraction(1, 10 ** (2 * digits))
    return v - err, v + err


def log(x: npt.ArrayLike) -> np.ndarray:
    """``ln x`` of positive float32 ``x``, correctly rounded to float32 (``ln 1 = 0``; other results are
    transcendental, so the enclosures always decide)."""
    a = np.asarray(x, np.float32)
    flat = a.reshape(-1)
    approx = np.log(a.astype(np.float64))

    def exact(i: int, digits: int) -> tuple[Fraction, Fraction]:
        q = Fraction(float(flat[i]))
        return (Fraction(0), Fraction(0)) if q == 1 else _ln(q, digits)

    return _rounded(approx, exact, np.float32, TRUSTED)


def log2(x: npt.ArrayLike) -> np.ndarray:
    """``log2 x`` of positive float32 ``x``, correctly rounded to float32 (exact for powers of two; the others are
    irrational)."""
    a = np.asarray(x, np.float32)
    flat = a.reshape(-1)
    approx = np.log2(a.astype(np.float64))

    def exact(i: int, digits: int) -> tuple[Fraction, Fraction]:
        q = Fraction(float(flat[i]))
        if q.numerator & (q.numerator - 1) == 0 and q.denominator & (q.denominator - 1) == 0:
            v = Fraction(q.numerator.bit_length() - q.denominator.bit_length())
            return v, v
        lo, hi = _ln(q, digits)
        l2lo, l2hi = _ln(Fraction(2), digits)
        ends = (lo / l2lo, lo / l2hi, hi / l2lo, hi / l2hi)
        return min(ends), max(ends)

    return _rounded(approx, exact, np.float32, TRUSTED)


# ------------------------------------------------------------------------------------------- relative buckets
def t5_buckets(
    a: np.ndarray, n: int, max_distance: int, ln: Callable[[np.ndarray], np.ndarray] | None = None
) -> np.ndarray:
    """T5's bucket of each distance ``a >= 0`` (int64) among ``n`` buckets, as transformers' float32 code gives it.

    ``ln`` is the float32 logarithm (default: :func:`log`, correctly rounded); a platform's own ``torch.log`` values
    given here reproduce that platform's buckets."""
    e = n // 2
    out = np.array(a, np.int64, copy=True)
    large = out >= e
    if large.any():
        ratio = _f32(out[large]) / np.float32(e)
        value = (ln or log)(ratio) / np.float32(math.log(max_distance / e)) * np.float32(n - e)
        out[large] = np.minimum(e + np.trunc(value).astype(np.int64), n - 1)
    return out


def deberta_buckets(
    r: np.ndarray, buckets: int, max_distance: int, ln: Callable[[np.ndarray], np.ndarray] | None = None
) -> np.ndarray:
    """``make_log_bucket_position`` of the relative positions ``r`` (int64), as transformers' float32 code gives
    it (then ``.to(torch.long)``, exact: the values are integers). ``ln`` as for :func:`t5_buckets`."""
    m = buckets // 2
    out = np.array(r, np.int64, copy=True)
    a = np.abs(out)
    large = a > m
    if large.any():
        ratio = _f32(a[large]) / np.float32(m)
        denominator = (ln or log)(_f32([(max_distance - 1) / m]))[0]
        value = np.ceil((ln or log)(ratio) / denominator * np.float32(m - 1)) + np.float32(m)
        out[large] = np.sign(out[large]) * value.astype(np.int64)
    return out


# ----------------------------------------------------------------------------------------------------- SwinV2
def _swinv2_axis(side: int, p: int) -> np.ndarray:
    c = np.arange(-(side - 1), side, dtype=np.float32) / np.float32(p) * np.float32(8)
    magnitude = log2(np.abs(c) + np.float32(1.0))
    out: np.ndarray = (np.sign(c) * magnitude) / np.float32(3.0)
    return out


def swinv2_coords(height: int, width: int, pretrained: tuple[int, int] | None = None) -> np.ndarray:
    """SwinV2's ``(2H - 1, 2W - 1, 2)`` coordinates as its float32 code computes them (checked sides: the divisor
    ``P`` is at least 1)."""
    ph, pw = (pretrained[0] - 1, pretrained[1] - 1) if pretrained else (height - 1, width - 1)
    out = np.empty((2 * height - 1, 2 * width - 1, 2), np.float32)
    out[:, :, 0] = _swinv2_axis(height, ph)[:, None]
    out[:, :, 1] = _swinv2_axis(width, pw)[None, :]
    return out


# ---------------------------------------------------------------------------------------------------- sincos2d


def sincos2d(
    height: int, width: int, d_model: int, *, cls_token: bool, base: float, element: ElementType
) -> np.ndarray:
    """The 2-D sincos table (MAE's layout, :mod:`posenc_cli.encodings.sincos2d`) as the float64 code computes it
    and rounds to float32, in ``element``'s storage (other types round those float32 values)."""
    q = d_model // 4
    omega = np.arange(q, dtype=np.float64) / np.float64(q)
    omega = np.float64(1.0) / float64.pow_(base, omega)

    def axis(n: int) -> np.ndarray:
        angles = np.arange(n, dtype=np.float64)[:, None] * omega[None, :]
        return np.concatenate([float64.trig_to_float32(angles, False), float64.trig_to_float32(angles, True)], axis=1)

    xs, ys = axis(width), axis(height)
    first = 1 if cls_token else 0
    table = np.zeros((first + height * width, d_model), np.float32)
    grid = table[first:].reshape(height, width, d_model)
    grid[:, :, : 2 * q] = xs[None, :, :]
    grid[:, :, 2 * q :] = ys[:, None, :]
    return to_element(table, element)
