"""The sinusoidal positional encoding of "Attention Is All You Need", correctly rounded.

``PE[pos, j] = sin(pos * f_k)`` for even ``j`` and ``cos(pos * f_k)`` for odd ``j``, with ``k = j // 2`` and
``f_k = base**(-2k/d_model)`` (an odd ``d_model`` ends with a sine column).  Rows are ``pos = 0 .. seq_len - 1``.

Accuracy contract, for every position below :data:`MAX_POSITIONS` (``2**32``), every ``d_model`` and every finite
``base > 1`` (taken as the exact value of its float64):

- every entry is the exact real value correctly rounded (round-half-even) to the output dtype, for float32 *and*
  float64 output; results are the same bits on every platform (no libm call is involved).

How (Ziv's strategy): each ``f_k / (2 pi)`` is split into 21-bit pieces so that ``pos * piece`` is exact in float64
for ``pos < 2**32`` and the angle reduces without error; a double-double kernel turns the reduced angle into sin and
cos with absolute error below ``2**-78`` (:func:`_kernel`).  Rows are then produced ``S`` at a time by the angle
addition ``sin(a + b) = sin a cos b + cos a sin b`` with ``pos = b + a``, ``b`` a multiple of ``S`` (kernel values
per block) and ``a < S`` (a cached kernel table), two products and a sum per entry in float64 for float32 output,
double-double for float64 output.  A proven error bound decides each entry's rounding
(:func:`~posenc_cli.encodings._exact.round_checked`); the rare undecided entries (near a rounding boundary, or of
tiny magnitude near a zero of sin/cos) are recomputed with :mod:`decimal` by
:func:`~posenc_cli.encodings._exact.exact_entries`.

Examples
--------
>>> pe = sinusoidal(4, 6)
>>> pe.shape, pe.dtype
((4, 6), dtype('float32'))
>>> pe[0].tolist()
[0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
>>> bool((sinusoidal_rows(2, 4, 6) == pe[2:4]).all())
True
"""

from __future__ import annotations

import decimal
import math
import numbers
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from posenc_cli.encodings._exact import exact_decided, exact_entries, pi_decimal, turn_chunks, turn_table
from posenc_cli.encodings.dtypes import ElementType
from posenc_cli.errors import SpecError

__all__ = ["MAX_D_MODEL", "MAX_POSITIONS", "check_params", "sinusoidal", "sinusoidal_rows"]

MAX_POSITIONS = 2**32  # positions 0 .. 2**32 - 1: pos * (21-bit piece) stays exact in float64
MAX_D_MODEL = 2**20  # a sanity limit: per-column constants cost a few microseconds each

_M = 2048  # the kernel's table: angle = 2 pi i / _M + delta with |delta| <= pi / _M
_BITS, _PIECES = 21, 3  # 53 - 21 = 32 bits of position
_TWO_PI_HI = float(2 * pi_decimal(40))
_TWO_PI_M = (_TWO_PI_HI / _M, float(2 * pi_decimal(40) - decimal.Decimal(_TWO_PI_HI)) / _M)  # double-double
_TWO_PI_M_1 = _TWO_PI_M[0] * 134217729.0 - (_TWO_PI_M[0] * 134217729.0 - _TWO_PI_M[0])  # Veltkamp halves of the
_TWO_PI_M_2 = _TWO_PI_M[0] - _TWO_PI_M_1  # high part, as _split below
_S = (-1 / 6, 1 / 120, -1 / 5040, 1 / 362880)  # sin d = d + d**3 * S(d**2)
_T = (1 / 24, -1 / 720, 1 / 40320)  # cos d - 1 = -d**2 / 2 + d**4 * T(d**2)
# Error bounds (derived in _kernel and _bound), each 2-3x above what the analysis gives.
_ERR32, _ERR64, _FLOOR = 2.0**-49, 2.0**-75, 2.0**-1060
_CHUNK = 1 << 15  # entries per work chunk: the float64 temporaries stay in L2
_KERNEL_BATCH = 1 << 15  # kernel evaluations per call (amortises NumPy's per-call overhead)
_CACHED_TABLE = 1 << 19  # offset tables up to this many entries are cached (4 MiB each); larger ones: rebuilt per call
_PARALLEL_MIN = 1 << 20  # entries from which two threads pay off


# --------------------------------------------------------------------------------------------------- validation
def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _count(value: object, name: str, minimum: int, maximum: int) -> int:
    """An integer (Python or NumPy, never bool) within ``[minimum, maximum]``, else :class:`SpecError`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive" if minimum > 0 else "a non-negative"
        raise SpecError(f"{name} must be {kind} integer, got {_show(value)}", param=name)
    if value > maximum:
        raise SpecError(f"{name} must be at most {maximum}, got {value}", param=name)
    return int(value)


def check_params(
    seq_len: int,
    d_model: int,
    base: float = 10000.0,
    dtype: npt.DTypeLike = "float32",
    *,
    scale: float | None = None,
    zero_point: int | None = None,
) -> tuple[int, int, float, ElementType]:
    """Validate the table parameters and return them normalised as ``(seq_len, d_model, base, dtype)``.

    Raises
    ------
    SpecError
        ``param`` names the culprit: ``seq_len`` (an integer in ``1 .. 2**32``; beyond, positions leave the
        accuracy guarantee), ``d_model`` (``1 .. 2**20``), ``base`` (a finite real number > 1), ``dtype`` (a name
        of :data:`~posenc_cli.encodings.dtypes.DTYPES`; float32/float64 also as a type or ``numpy.dtype``), or
        ``scale``/``zero_point`` (int8 only).

    Examples
    --------
    >>> check_params(8, 4, 10000, "float64")
    (8, 4, 10000.0, ElementType(name='float64', scale=None, zero_point=0))
    >>> check_params(-3, 4)
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: seq_len must be a positive integer, got -3
    """
    seq_len = _count(seq_len, "seq_len", 1, MAX_POSITIONS)
    d_model = _count(d_model, "d_model", 1, MAX_D_MODEL)
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    return seq_len, d_model, _check_base(base), element


def _check_base(base: object) -> float:
    value = math.nan
    if isinstance(base, numbers.Real) and not isinstance(base, (bool, np.bool_)):
        try:
            value = float(base)
        except OverflowError:
            pass
    if not (math.isfinite(value) and value > 1.0):
        raise SpecError(f"base must be a finite number greater than 1, got {_show(base)}", param="base")
    return value


# ------------------------------------------------------------------------------------------------- public API
def sinusoidal(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    dtype: npt.DTypeLike = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
) -> np.ndarray:
    """The full ``(seq_len, d_model)`` table, C-contiguous, every entry correctly rounded to ``dtype``.

    Parameters
    ----------
    seq_len : int
        Number of positions (rows), ``1 .. 2**32``.
    d_model : int
        Number of columns, ``1 .. 2**20``; odd values end with a sine column.
    base : float, default 10000.0
        Wavelength base, finite and greater than 1.
    dtype : {"float32", "float64", "float16", "bfloat16", "q15", "q7", "int8"}
        Output element type (:mod:`posenc_cli.encodings.dtypes`): the array's dtype is its storage type
        (bfloat16 as ``uint16`` bit patterns, q15/q7/int8 as integers).
    scale, zero_point : optional
        int8 only: the quantisation step and zero point.

    Raises
    ------
    SpecError
        For invalid parameters (see :func:`check_params`).

    Examples
    --------
    >>> sinusoidal(3, 2, dtype="float64")[:, 0].tolist()  # sin(0), sin(1), sin(2)
    [0.0, 0.8414709848078965, 0.9092974268256817]
    """
    seq_len, d_model, base, element = check_params(seq_len, d_model, base, dtype, scale=scale, zero_point=zero_point)
    return _typed_rows(0, seq_len, d_model, base, element)


def sinusoidal_rows(
    start: int,
    stop: int,
    d_model: int,
    *,
    base: float = 10000.0,
    dtype: npt.DTypeLike = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
) -> np.ndarray:
    """Rows ``start .. stop - 1`` of the table, bit-identical to ``sinusoidal(stop, ...)[start:stop]``.

    Work and memory are proportional to the block (plus per-column constants cached per ``(d_model, base)``), so
    writers can stream tables larger than memory.  ``0 <= start <= stop <= 2**32``; ``start == stop`` gives an
    empty ``(0, d_model)`` array.

    Examples
    --------
    >>> sinusoidal_rows(10**9, 10**9 + 1, 2, dtype="float64").tolist()  # [[sin(1e9), cos(1e9)]]
    [[0.5458434494486996, 0.8378871813639024]]
    """
    start = _count(start, "start", 0, MAX_POSITIONS)
    stop = _count(stop, "stop", 0, MAX_POSITIONS)
    if stop < start:
        raise SpecError(f"stop must be at least start ({start}), got {stop}", param="stop")
    _, d_model, base, element = check_params(1, d_model, base, dtype, scale=scale, zero_point=zero_point)
    return _typed_rows(start, stop, d_model, base, element)


def _typed_rows(start: int, stop: int, d_model: int, base: float, element: ElementType) -> np.ndarray:
    """Rows in ``element``'s storage: float32/float64 directly, the other types from the correctly rounded float64
    by :meth:`ElementType.convert`, with the entries it cannot prove settled by the exact path."""
    if element.name in ("float32", "float64"):
        out = np.empty((stop - start, d_model), element.storage)
        _fill(out, start, base)
        return out
    y = np.empty((stop - start, d_model), np.float64)
    _fill(y, start, base)
    out, undecided = element.convert(y)
    for r, c in zip(*np.nonzero(undecided), strict=True):
        out[r, c] = exact_decided(start + int(r), int(c), d_model, base, element.from_exact)
    return out


# ------------------------------------------------------------------------------------ double-double arithmetic
def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp: ``a == hi + lo`` exactly, both with at most 26 significant bits (so their products are exact)."""
    t = a * 134217729.0  # 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth: ``s + e == a + b`` exactly with ``s = fl(a + b)``, whatever the magnitudes."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _prod_err(a1: np.ndarray, a2: np.ndarray, b1: np.ndarray, b2: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Dekker: the exact ``a*b - p`` for ``p = fl(a*b)``, from the Veltkamp halves of ``a`` and ``b``."""
    err: np.ndarray = ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2
    return err


# --------------------------------------------------------------------------------------------------- the kernel
@lru_cache(maxsize=1)
def _table() -> np.ndarray:
    """Rows sin_hi, sin_lo, cos_hi, cos_lo of ``2 pi i / _M``, then the Veltkamp halves of sin_hi and cos_hi."""
    t = turn_table(_M)
    return np.vstack([t, *_split(t[0]), *_split(t[2])])


def _kernel(pos: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``sin``, ``cos`` of ``2 pi pos g_k / _M`` as double-doubles ``(s_hi, s_lo, c_hi, c_lo)``, shape ``(n, K)``.

    ``pos`` has shape ``(n, 1)`` (integers below ``2**32`` as float64), ``g`` the rows of :func:`turn_chunks`.
    Error below ``2**-78`` absolute; below ``2**-68`` relative for angles under 1 rad.  The budget, in radians:

    - reduction: ``pos * g_i`` and ``a - rint(a)`` are exact for the three 21-bit pieces; what is left is the
      float64 tail's representation error (``2**-84``), the rounding of ``pos * tail`` and of the sum of the
      low parts (``2**-84`` each); ``delta = (2 pi / _M) * v`` is formed in double-double (``2**-100``).
    - ``delta**3 * S(delta**2) <= 2**-30.6`` is evaluated in float64 (relative ``9 * 2**-53``): ``2**-80.5``;
      ``cos delta - 1`` is double-double; the truncated Taylor terms are below ``2**-100``.
    - recombination ``sin(t + d) = sin t + cos t sin d + sin t (cos d - 1)`` with double-double table values and
      exact Dekker products; the low-order sums carry terms up to ``2**-30`` (``2**-82`` of rounding).
    Total under ``2**-79.5``.  Angles under 1 rad keep the table index at most 326, where sines are at least
    ``sin(pi / _M) = 2**-9.35``, so relative errors stay below ``2**-68``.  Angles ``x < pi / _M`` stay at index 0,
    where no error is absolute: the reduction and ``delta`` are exact to ``2**-102`` relative and only the cubic
    term's ``9 * 2**-53`` adds ``1.5 * 2**-53 * x**2``.
    """
    a = pos * g[0]
    n = np.rint(a)
    v1 = a - n
    a = pos * g[1]
    r = np.rint(a)
    n += r
    v2 = a - r
    a = pos * g[2]
    r = np.rint(a)
    n += r
    h, e1 = _two_sum(v1, v2)
    h, e2 = _two_sum(h, a - r)
    r = np.rint(h)
    n += r
    vh, vl = _two_sum(h - r, e1 + e2 + pos * g[3])  # v in units of 1/_M turn, |v| <= 1/2 + 2**-22
    ch, cl = _TWO_PI_M
    p = ch * vh
    w1, w2 = _split(vh)
    rest = ((_TWO_PI_M_1 * w1 - p) + _TWO_PI_M_1 * w2 + _TWO_PI_M_2 * w1) + _TWO_PI_M_2 * w2 + (ch * vl + cl * vh)
    dh = p + rest  # |rest| <= 2**-51 |p|: fast two-sum
    dl = rest - (dh - p)
    tab = np.take(_table(), n.astype(np.int64) & (_M - 1), axis=1)
    sh, sl, cth, ctl, s1, s2, c1, c2 = tab
    x = dh * dh
    d1, d2 = _split(dh)
    xl = _prod_err(d1, d2, d1, d2, x) + 2 * dh * dl
    sin_lo = dl + dh * x * (_S[0] + x * (_S[1] + x * (_S[2] + x * _S[3])))  # sin d = dh + sin_lo
    rh = -0.5 * x  # cos d - 1 = rh + rl
    rl = -0.5 * xl + x * x * (_T[0] + x * (_T[1] + x * _T[2]))
    r1, r2 = _split(rh)
    out: list[np.ndarray] = []
    # sin(t + d) = a + b sin d + a (cos d - 1) with a = sin t, b = cos t; cos(t + d): a = cos t, b = -sin t
    for ah, al, a1, a2, bh, bl, b1, b2, sign in (
        (sh, sl, s1, s2, cth, ctl, c1, c2, 1.0),
        (cth, ctl, c1, c2, sh, sl, s1, s2, -1.0),
    ):
        pb = bh * dh
        eb = _prod_err(b1, b2, d1, d2, pb) + bh * sin_lo + bl * dh
        pa = ah * rh
        ea = _prod_err(a1, a2, r1, r2, pa) + ah * rl + al * rh
        s, t1 = _two_sum(ah, sign * pb)
        s, t2 = _two_sum(s, pa)
        out.extend(_two_sum(s, t1 + t2 + al + sign * eb + ea))
    return out[0], out[1], out[2], out[3]


# --------------------------------------------------------------------------------------------- blocks of rows
def _block_rows(n_rows: int, d_model: int) -> int:
    """``S``, rows per block: kernel work is ``K * (S + n_rows / S)``, memory ``S * d_model`` per table."""
    cached = max(1, min(128, _CACHED_TABLE // d_model))
    if n_rows <= 4 * cached:
        return cached
    return max(cached, min(math.isqrt(n_rows), (8 * _CACHED_TABLE) // d_model))


def _interleave(sin_part: np.ndarray, cos_part: np.ndarray, d_model: int) -> np.ndarray:
    """Columns ``0, 2, 4, ...`` from ``sin_part``, ``1, 3, ...`` from ``cos_part`` (both ``(n, K)``)."""
    out = np.empty((sin_part.shape[0], d_model))
    out[:, 0::2] = sin_part[:, : (d_model + 1) // 2]
    out[:, 1::2] = cos_part[:, : d_model // 2]
    return out


@lru_cache(maxsize=4)
def _constants(d_model: int, base: float) -> np.ndarray:
    return turn_chunks(d_model, base, _M, _BITS, _PIECES)


def _kernel_rows(pos: np.ndarray, d_model: int, base: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_kernel` for positions ``pos`` (1-D) and every frequency, in batches of ``_KERNEL_BATCH``."""
    g = _constants(d_model, base)
    step = max(1, _KERNEL_BATCH // g.shape[1])
    parts = [_kernel(pos[i : i + step, None].astype(np.float64), g) for i in range(0, len(pos), step)]
    if len(parts) == 1:
        return parts[0]
    sh, sl, ch, cl = (np.concatenate(p) for p in zip(*parts, strict=True))
    return sh, sl, ch, cl


def _offset_table(d_model: int, base: float, size: int, wide: bool) -> tuple[np.ndarray, ...]:
    """For ``a = 0 .. size-1``: ``X = [sin a f_k, cos a f_k]`` and ``Y = [cos a f_k, sin a f_k]`` per column pair.

    Then ``PE[b + a] = X[a] * U[b] + Y[a] * V[b]`` with ``U = [cos b f_k, cos b f_k]``, ``V = [sin, -sin]``.  Float32
    output needs the high parts only; float64 output (``wide``) the double-doubles and Veltkamp halves.  Tables up
    to ``_CACHED_TABLE`` entries are cached.
    """
    if size * d_model <= _CACHED_TABLE:
        return _cached_offset_table(d_model, base, size, wide)
    return _build_offset_table(d_model, base, size, wide)


def _build_offset_table(d_model: int, base: float, size: int, wide: bool) -> tuple[np.ndarray, ...]:
    sh, sl, ch, cl = _kernel_rows(np.arange(size), d_model, base)
    xh, yh = _interleave(sh, ch, d_model), _interleave(ch, sh, d_model)
    if not wide:
        return xh, yh
    xl, yl = _interleave(sl, cl, d_model), _interleave(cl, sl, d_model)
    return (xh, xl, *_split(xh), yh, yl, *_split(yh))


_cached_offset_table = lru_cache(maxsize=4)(_build_offset_table)


def _block_vectors(blocks: np.ndarray, d_model: int, base: float, wide: bool) -> tuple[np.ndarray, ...]:
    """``U``, ``V`` (shape ``(nq, 1, d_model)``) for block starts ``b`` (see :func:`_offset_table`)."""
    sh, sl, ch, cl = _kernel_rows(blocks, d_model, base)
    uh, vh = _interleave(ch, ch, d_model), _interleave(sh, -sh, d_model)
    parts = (
        (uh, vh)
        if not wide
        else (uh, _interleave(cl, cl, d_model), *_split(uh), vh, _interleave(sl, -sl, d_model), *_split(vh))
    )
    return tuple(p[:, None, :] for p in parts)


def _bound(d_model: int, base: float, pos_max: int, wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-column error bounds ``(absolute, relative)`` of the angle addition for positions up to ``pos_max``: the
    entry ``y`` of column ``j`` is within ``absolute[j] + relative[j] * |y|`` of the exact value.

    Float32 output, ``y = Xh*Uh + Yh*Vh`` in float64: the four factors carry at most ``2**-54 + 2**-78`` (rounding
    the kernel's double-double to its high part), so with ``|X| + |Y|``, ``|U| + |V| <= sqrt 2`` the products are
    off by at most ``2.9 * 2**-54`` plus ``2 * 2**-54`` of rounding, and the sum adds ``2**-53``: ``2**-51.2``; the
    float64 roundings of ``y -+ err`` in the check add ``2**-53``; so ``2**-49`` has a 3x margin.  Sine columns
    whose angles stay below 1 rad add no cancellation (all four factors are non-negative and relatively accurate),
    so there the bound scales with the largest value, ``x_max = pos_max * f_k``: ``2**-49 * x_max``.
    Float64 output computes ``y`` in double-double: factors within ``2**-78``, hence ``2**-76.4`` (``2**-75``
    used).  Sine columns with ``x_max <= 2**-10 < pi / _M`` stay at table index 0, where the kernel's relative error
    is at most ``2**-102 + 1.5 * 2**-53 * x**2``; the four factors and the double-double arithmetic then give
    ``2**-99 + 3 * 2**-53 * x_max**2`` relative to the entry (``2**-96 + 2**-49 * x_max**2`` used).  ``2**-1060``
    covers float64 underflow, and ``2**-104`` relative the rounding of the float64 test itself.
    """
    f = _constants(d_model, base)[-1]
    x_max = f * (pos_max * (1 + 2.0**-40))
    cos_part = np.full((1, f.size), (_ERR64 if wide else _ERR32) + _FLOOR)
    if not wide:
        e_sin = np.minimum(x_max, 1.0) * _ERR32 + _FLOOR
        return _interleave(e_sin[None], cos_part, d_model)[0], np.zeros(d_model)
    tiny = x_max <= 2.0**-10
    absolute = _interleave(np.where(tiny, _FLOOR, _ERR64 + _FLOOR)[None], cos_part, d_model)[0]
    rel_sin = np.where(tiny, 2.0**-96 + 2.0**-49 * x_max * x_max, 0.0)
    relative = _interleave(rel_sin[None], np.zeros((1, f.size)), d_model)[0] + 2.0**-104
    return absolute, relative


def _combine32(
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


def _combine64(
    out: np.ndarray, tab: tuple[np.ndarray, ...], vec: tuple[np.ndarray, ...], err: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Float64 rows into ``out``: double-double angle addition, then the correct-rounding test.

    ``yh + yl`` is within ``e = err[0] + err[1] * |yh|`` of the exact value and ``yh = fl(yh + yl)``; if
    ``|yl| + e`` is below half the gap from ``|yh|`` down to its float64 neighbour (the smaller of its two gaps),
    the exact value rounds to ``yh``.
    """
    xh, xl, x1, x2, yh_, yl_, y1, y2 = tab
    uh, ul, u1, u2, vh, vl, v1, v2 = vec
    p1 = xh * uh
    p2 = yh_ * vh
    e = _prod_err(x1, x2, u1, u2, p1) + _prod_err(y1, y2, v1, v2, p2)
    s, t = _two_sum(p1, p2)
    t += e + (xh * ul + xl * uh) + (yh_ * vl + yl_ * vh)
    hi, lo = _two_sum(s, t)
    out[...] = hi
    a = np.abs(hi)
    below = (a.view(np.int64) - 1).view(np.float64)  # nextafter(a, 0); NaN for a == 0, which stays undecided
    undecided: np.ndarray = ~(np.abs(lo) + (err[0] + a * err[1]) < (a - below) * 0.5)
    return undecided


def _segments(start: int, stop: int, size: int, rows: int) -> Iterator[tuple[int, int, int, int]]:
    """Cover rows ``start .. stop-1`` by ``(q, nq, a0, a1)``: rows ``q'*size + a0 .. q'*size + a1 - 1`` for
    ``q' = q .. q+nq-1``, about ``rows`` rows at a time (whole blocks grouped, long blocks cut)."""
    pos = start
    while pos < stop:
        q, a0 = divmod(pos, size)
        a1 = min(size, stop - q * size)
        if a0 == 0 and a1 == size and size <= rows:
            nq = min(rows // size, (stop - pos) // size)
            yield q, nq, 0, size
            pos += nq * size
        else:
            a1 = min(a1, a0 + rows)
            yield q, 1, a0, a1
            pos = q * size + a1


def _fill_serial(
    out: np.ndarray, start: int, base: float, size: int, tab: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``start ..`` into ``out`` (blocks of ``size`` rows, offset table ``tab``); returns the (row, column)
    indices, relative to ``out``, left undecided."""
    n, d_model = out.shape
    stop, wide = start + n, out.dtype == np.float64
    batch = max(1, _KERNEL_BATCH // d_model) * size  # rows per batch of block vectors
    bad_rows, bad_cols = [], []
    lo = start
    while lo < stop:
        hi = min(stop, (lo // size) * size + batch)
        q_first = lo // size
        vec = _block_vectors(np.arange(q_first, (hi - 1) // size + 1) * size, d_model, base, wide)
        for q, nq, a0, a1 in _segments(lo, hi, size, max(1, _CHUNK // d_model)):
            err = _bound(d_model, base, (q + nq - 1) * size + a1 - 1, wide)
            first = q * size + a0 - start
            view = out[first : first + nq * (a1 - a0)].reshape(nq, a1 - a0, d_model)
            v = tuple(x[q - q_first : q - q_first + nq] for x in vec)
            if d_model < 64:  # NumPy's inner loops would run over d_model only: broadcast U, V beforehand
                v = tuple(np.repeat(x, a1 - a0, axis=1) for x in v)
            if wide:
                bad = _combine64(view, tuple(t[a0:a1] for t in tab), v, err)
            else:
                bad = _combine32(view, tab[0][a0:a1], tab[1][a0:a1], v[0], v[1], err[0])
            if first + start == 0:  # sin 0 = 0 and cos 0 = 1 exactly (the bound cannot prove the sign of a zero)
                view[0, 0] = np.arange(d_model) % 2
                bad[0, 0] = False
            if bad.any():
                r, c = np.nonzero(bad.reshape(-1, d_model))
                bad_rows.append(r + first)
                bad_cols.append(c)
        lo = hi
    if not bad_rows:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    return np.concatenate(bad_rows), np.concatenate(bad_cols)


def _fill(out: np.ndarray, start: int, base: float) -> None:
    """Rows ``start .. start + len(out) - 1`` into ``out``: fast path (two threads when large), then exact path."""
    n, d_model = out.shape
    if n == 0:
        return
    size = _block_rows(n, d_model)
    tab = _offset_table(d_model, base, size, out.dtype == np.float64)  # once, before any thread
    mid = ((start + n // 2) // size) * size - start  # a block boundary near the middle
    if out.size >= _PARALLEL_MIN and (os.cpu_count() or 1) > 1 and 0 < mid < n:
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(_fill_serial, out[:mid], start, base, size, tab)
            r2, c2 = _fill_serial(out[mid:], start + mid, base, size, tab)
            r1, c1 = first.result()
        rows, cols = np.concatenate([r1, r2 + mid]), np.concatenate([c1, c2])
    else:
        rows, cols = _fill_serial(out, start, base, size, tab)
    if rows.size:
        out[rows, cols] = exact_entries(rows + start, cols, d_model, base, out.dtype)
