"""timm's pixel-band axial RoPE (``posenc axial -m timm-pixel``): ``timm.layers.RotaryEmbedding`` with its default
``in_pixels=True``, the ``(sin, cos)`` its ``get_embed(shape)`` gives over a ``height x width`` grid (timm 1.0).

With ``n = head_dim / 4`` bands, ``M = max_res`` (224 in timm) and ``B = M / 2``, the real-number table is::

    p_i     = -1 + 2 i / (s - 1)                   i < s, on each axis of s positions (torch.linspace(-1, 1, s);
                                                   one position: -1)
    b_k     = 1 + (B - 1) k / (n - 1)              linear_bands=True   (linspace(1, M/2, n); one band: 1)
            = 2 ** ((log2(M) - 1) k / (n - 1))     linear_bands=False  (2 ** linspace(0, log2(M) - 1, n)):
            = B ** (k / (n - 1))
    row (r, c) of the grid (row-major), half column j < 2n:
            angle = pi * p_r * b_j        j < n    (the height axis first: grid_indexing 'ij')
                  = pi * p_c * b_(j-n)    j >= n
    cos, sin: each half column twice side by side (``_rope_layout``: ``repeat_interleave(2)``)

timm's ``RotaryEmbedding(in_pixels=False)`` is another table: integer positions and ``temperature`` bands,
``posenc axial -m eva02`` (theta = temperature); that style's ``get_embed`` returns ``(sin, cos)`` apart, EVA-02's
``RotaryEmbeddingCat`` ``cat([sin, cos])``, the same values.

**Exact** (:func:`exact`): each entry ``cos``/``sin(pi * c)``, ``c = p * b``, rounded once. Where ``c`` is rational
(linear bands; log bands whose ``B**(k/(n-1))`` is rational; the centre position 0) it is reduced modulo 2 exactly
and Niven's values (``0``, ``+-1/2``, ``+-1``: ``6 c`` an integer) are written exactly; every other value is
irrational (algebraic for rational ``c``, transcendental for irrational ``c`` by Gelfond-Schneider) and never a
rounding boundary. A float64 approximation with a proven error bound rounds most float32 and float16 entries
(:func:`~posenc_cli.encodings._exact.round_checked`); the rest, and every entry of the other types, come from
:mod:`decimal` enclosures whose precision doubles until both ends round alike (Ziv).

**Framework** (:func:`framework`): timm's float32 operations on CPU as torch 2.13's AVX2 and AVX-512 kernels do
them: ``torch.linspace(start, end, s)`` in float32 is ``step = (end - start) / (s - 1)``, then ``start + step * i``
for ``i < s // 2`` and ``end - step * (s - 1 - i)`` for the rest, each product and sum **fused** (one rounding: the
kernels are built with FMA contraction; torch's no-FMA ``DEFAULT`` kernel, ``ATEN_CPU_CAPABILITY=default``, rounds
the product first and gives other positions). Linear bands ``linspace(1, M/2, n) * float32(pi)``; log bands
``2 ** linspace(0, float32(log(M)/log(2) - 1), n) * float32(pi)``, the two float64 logarithms of Python's
``math.log(M, 2)`` and float32 ``pow`` correctly rounded (glibc's float64 ``log`` is an ulp off at ``M = 9170``
alone among ``M <= 65536``, which float32 does not see; torch's float32 ``pow``, Sleef's vectorised one for whole
blocks of 32 bands on AVX-512 and 16 on AVX2 and glibc's ``powf`` for the rest, is within an ulp and differs at a
few bands, that band's columns then by up to its ulp times ``|p|``); the float32 products ``p * b``, then
``sin``/``cos`` correctly rounded
(:mod:`posenc_cli.encodings.float32`; torch's are within an ulp).

Examples
--------
>>> spec = resolve((2, 3), 8)
>>> spec.positions.tolist()
[[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
>>> [str(c) for c in axis_positions(3)], [str(b) for b in linear_bands(224, 2)]
(['-1', '0', '1'], ['1', '112'])
>>> float(exact(spec, "cos", ElementType.of("float64"))[4, 0])  # row (1, 1): p = 1 on the height axis, cos(pi) = -1
-1.0
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import float32 as f32ops
from posenc_cli.encodings._exact import pi_decimal, round_checked
from posenc_cli.encodings.axial_rope import MAX_HEAD_DIM, MAX_SIDE, MAX_TOKENS
from posenc_cli.encodings.sinusoid import show
from posenc_cli.errors import SpecError

__all__ = [
    "MAX_RES", "PixelSpec", "axis_positions", "exact", "framework", "framework_bands", "linear_bands", "linspace32",
    "log_bands_end", "resolve",
]  # fmt: skip

#: The largest ``max_res`` posenc takes (timm's default is 224): bands up to ``pi * 32768``.
MAX_RES = 1 << 16
_MAX_DIGITS = 4000
#: A band: its exact rational value, or ``(B, e)`` for the irrational ``B**e``.
Band = Fraction | tuple[Fraction, Fraction]


@dataclass(frozen=True)
class PixelSpec:
    """A checked ``timm-pixel`` table: the grid, ``head_dim`` (``4 n``), ``max_res`` and the band spacing."""

    height: int
    width: int
    head_dim: int
    max_res: int = 224
    linear: bool = False
    model: str = "timm-pixel"

    @property
    def positions(self) -> np.ndarray:
        """Each row's ``(row, column)`` on the grid, row-major, ``(height * width, 2)`` int64."""
        rows = np.repeat(np.arange(self.height, dtype=np.int64), self.width)
        return np.stack([rows, np.tile(np.arange(self.width, dtype=np.int64), self.height)], axis=-1)

    @property
    def bands(self) -> int:
        return self.head_dim // 4


def _int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise SpecError(f"{name} must be an integer from {low} to {high}, got {show(value)}", param=name)
    return int(value)


def resolve(grid: tuple[int, ...], head_dim: int, *, max_res: int = 224, linear: bool = False) -> PixelSpec:
    """Check the parameters (``SpecError`` naming the one that is wrong) and return the table's spec."""
    if len(grid) != 2:
        raise SpecError(f"timm-pixel takes a grid of height x width, got {grid!r}", param="grid")
    height, width = (_int(side, "grid", 1, MAX_SIDE) for side in grid)
    d = _int(head_dim, "head_dim", 4, MAX_HEAD_DIM)
    if d % 4:
        raise SpecError(
            f"head_dim must be a multiple of 4 (two axes of dim/4 bands, each a sin and cos pair), got {d}",
            param="head_dim",
        )
    res = _int(max_res, "max_res", 1, MAX_RES)
    if not isinstance(linear, (bool, np.bool_)):
        raise SpecError(f"linear_bands must be true or false, got {show(linear)}", param="linear_bands")
    if height * width > MAX_TOKENS:
        raise SpecError(f"the table would be {height * width} rows, more than {MAX_TOKENS}", param="grid")
    return PixelSpec(height, width, d, res, bool(linear))


# ------------------------------------------------------------------------------------------------- exact values
def axis_positions(side: int) -> list[Fraction]:
    """The real ``torch.linspace(-1, 1, side)``: ``-1 + 2 i / (side - 1)``; one position is ``-1``."""
    if side == 1:
        return [Fraction(-1)]
    return [Fraction(2 * i - (side - 1), side - 1) for i in range(side)]


def linear_bands(max_res: int, n: int) -> list[Fraction]:
    """The real ``linspace(1, max_res / 2, n)`` (without the factor pi); one band is 1."""
    if n == 1:
        return [Fraction(1)]
    top = Fraction(max_res, 2)
    return [1 + (top - 1) * Fraction(k, n - 1) for k in range(n)]


def _root(value: int, degree: int) -> int | None:
    """The integer ``degree``-th root of ``value >= 1``, or ``None`` when it is not a perfect power."""
    guess = int(round(float(value) ** (1.0 / degree)))
    for r in (guess - 1, guess, guess + 1):
        if r >= 1 and r**degree == value:
            return r
    return None


def _log_band(max_res: int, k: int, n: int) -> Band:
    """Band ``k`` of ``n`` log bands, ``B**e`` (``B = max_res / 2``, ``e = k / (n - 1)``): the exact rational where
    it is one (``B``'s numerator and denominator perfect powers of ``e``'s denominator), else ``(B, e)``."""
    e = Fraction(k, n - 1) if n > 1 else Fraction(0)
    base = Fraction(max_res, 2)
    top, bottom = _root(base.numerator, e.denominator), _root(base.denominator, e.denominator)
    if top is not None and bottom is not None:
        return Fraction(top, bottom) ** e.numerator
    return base, e


#: ``sin(pi * m / 6)`` for ``m`` modulo 12 where it is rational (Niven: the only rational sines of rational
#: multiples of pi), else ``None``.
_NIVEN = (0, Fraction(1, 2), None, 1, None, Fraction(1, 2), 0, Fraction(-1, 2), None, -1, None, Fraction(-1, 2))


def _niven(c: Fraction, want_cos: bool) -> Fraction | None:
    """``cos``/``sin(pi * c)`` exactly when it is rational, else ``None``."""
    six = 6 * c
    if six.denominator != 1:
        return None
    value = _NIVEN[(six.numerator + (3 if want_cos else 0)) % 12]
    return None if value is None else Fraction(value)


def _series(y: Decimal, want_sin: bool) -> tuple[Decimal, int]:
    """Taylor series of ``sin y`` or ``cos y`` at ``|y| <= pi/4`` in the current context, and its term count."""
    y2 = y * y
    term = y if want_sin else Decimal(1)
    total, i, count = term, (1 if want_sin else 0), 1
    tiny = Decimal(10) ** (-decimal.getcontext().prec - 3)
    while abs(term) > tiny:
        term = -term * y2 / ((i + 1) * (i + 2))
        total += term
        i += 2
        count += 1
    return total, count


def _enclosure(position: Fraction, band: Band, want_cos: bool, digits: int) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= trig(pi * position * b) <= hi``, about ``digits`` wide; ``band`` is ``b`` (a rational) or
    ``(B, e)`` for the irrational ``b = B**e``.

    Error budget, ``u = 10**(1-W)/2`` the unit roundoff at ``W = digits + 10`` digits: ``c = position * b`` is
    formed with an absolute error ``delta``: a rational ``c`` is reduced modulo 2 exactly and its decimal rounded
    once (``delta <= 2u``); an irrational one is ``exp(e * ln B)`` (``ln``, ``e``'s decimal, the product and ``exp``
    each correctly rounded: relative ``u (1 + 3.1 |a|)``, ``a = e ln B``) times the position's decimal (two more
    roundings), so ``delta <= u (4 + 4 |a|) |c|``, taken as ``u (6 + 4 ceil|a|) |c|``; its reduction modulo 2 and
    into ``t = r - q/2``, ``|t| <= 1/4``, is exact (``W + 8`` digits hold every digit). ``y = pi * t`` (pi's
    decimal and the product) is off by ``2.1 u |y| <= 2u``, the series at ``|y| <= pi/4`` by ``(4 count + 8) 1.5 u``
    (:func:`~posenc_cli.encodings._exact.enclosure`'s bound), and ``trig(pi x)`` is ``pi``-Lipschitz in ``x``."""
    width = digits + 10
    u = Fraction(1, 2 * 10 ** (width - 1))
    with decimal.localcontext() as ctx:
        ctx.prec = width
        ctx.rounding = decimal.ROUND_HALF_EVEN
        if isinstance(band, Fraction):
            c = (position * band) % 2
            r = Decimal(c.numerator) / Decimal(c.denominator)
            delta = 2 * u
        else:
            base, e = band
            a = Decimal(e.numerator) / Decimal(e.denominator) * (Decimal(base.numerator) / base.denominator).ln()
            cx = Decimal(position.numerator) / Decimal(position.denominator) * a.exp()
            delta = u * (6 + 4 * math.ceil(abs(float(a)))) * abs(Fraction(cx))
            ctx.prec = width + 8 + max(0, cx.adjusted())  # every digit of cx and of its reduction
            r = cx - 2 * (cx / 2).to_integral_value(rounding=decimal.ROUND_FLOOR)
        ctx.prec = width + 8
        q = int((2 * r + Decimal("0.5")).to_integral_value(rounding=decimal.ROUND_FLOOR))  # r in [q/2 - 1/4, q/2 + 1/4)
        t = r - Decimal(q) / 2
        ctx.prec = width
        y = pi_decimal(width) * t
        # sin(pi r) = sin y, cos y, -sin y, -cos y by q mod 4; cos(pi r) = cos y, -sin y, -cos y, sin y
        quadrant = (q + (1 if want_cos else 0)) % 4
        value, count = _series(y, want_sin=quadrant % 2 == 0)
        if quadrant >= 2:
            value = -value
    err = Fraction(314160, 100000) * delta + 2 * u + (4 * count + 8) * u * Fraction(3, 2)
    v = Fraction(value)
    return v - err, v + err


def _decided(position: Fraction, band: Band, want_cos: bool, element: ElementType) -> object:
    """``element.from_exact`` of the exact entry, by Ziv's loop (Niven's rational values at once)."""
    if isinstance(band, Fraction):
        known = _niven(position * band, want_cos)
        if known is not None:
            return element.from_exact(known)
    elif position == 0:
        return element.from_exact(Fraction(1 if want_cos else 0))
    digits = 30
    while digits <= _MAX_DIGITS:
        lo, hi = _enclosure(position, band, want_cos, digits)
        result = element.from_exact(lo)
        if element.from_exact(hi) == result:
            return result
        digits *= 2
    raise ArithmeticError(f"could not decide the timm-pixel entry at position {position}")


def _bands(spec: PixelSpec) -> list[Band]:
    n = spec.bands
    if spec.linear:
        return list(linear_bands(spec.max_res, n))
    return [_log_band(spec.max_res, k, n) for k in range(n)]


def _approximate(side: int, bands: list[Band], want_cos: bool) -> tuple[np.ndarray, np.ndarray]:
    """Float64 ``trig(pi * p * b)`` ``(side, len(bands))`` and a bound on each one's error. A rational ``c = p * b
    = a * num / (P * den)`` (``p = a / P``) is reduced modulo 2 in exact int64 arithmetic (``|a * num| < 2**44``)
    and divided once (within ``2**-52``); an irrational one is ``p * B**e`` from numpy's ``pow`` (trusted to
    ``2**-40`` relative, as :mod:`~posenc_cli.encodings.float32` trusts it; with ``pi`` and the rest within
    ``4 * 2**-40 |c|`` of ``pi * c``), reduced by ``fmod`` (exact). ``pi * r`` and numpy's ``sin``/``cos`` add
    ``2**-48`` at most."""
    big = max(side - 1, 1)
    a = np.arange(side, dtype=np.int64) * 2 - (side - 1) if side > 1 else np.array([-1], np.int64)
    p = a / big
    out = np.empty((side, len(bands)))
    err = np.empty_like(out)
    for k, band in enumerate(bands):
        if isinstance(band, Fraction):
            den = big * band.denominator
            r = np.mod(a * band.numerator, 2 * den) / den
            err[:, k] = 2.0**-48
        else:
            c = p * float(band[0]) ** float(band[1])
            r = np.fmod(c, 2.0)
            err[:, k] = np.abs(c) * 4 * 2.0**-40 + 2.0**-48
        out[:, k] = (np.cos if want_cos else np.sin)(np.pi * r)
    return out, err


def _axis_table(side: int, spec: PixelSpec, part: str, element: ElementType) -> np.ndarray:
    """The ``(side, n)`` values of one axis, in ``element``'s storage."""
    want_cos = part == "cos"
    positions, bands = axis_positions(side), _bands(spec)
    table = np.empty((side, len(bands)), element.storage)
    if element.name in ("float32", "float16"):
        approx, err = _approximate(side, bands, want_cos)
        rounded, undecided = round_checked(approx, err, element.storage)
        table[:] = rounded
    else:
        undecided = np.ones(table.shape, bool)
    for i, k in zip(*np.nonzero(undecided), strict=True):
        table[i, k] = _decided(positions[i], bands[k], want_cos, element)
    return table


def _assemble(spec: PixelSpec, h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rows ``[h[row] | w[column]]``, row-major, each column twice side by side."""
    rows = spec.positions
    half = np.concatenate([h[rows[:, 0]], w[rows[:, 1]]], axis=1)
    return np.ascontiguousarray(np.repeat(half, 2, axis=1))


def exact(spec: PixelSpec, part: str, element: ElementType) -> np.ndarray:
    """The ``(height * width, head_dim)`` ``cos`` or ``sin`` (``part``), every value the real one rounded once."""
    h = _axis_table(spec.height, spec, part, element)
    w = h if spec.width == spec.height else _axis_table(spec.width, spec, part, element)
    return _assemble(spec, h, w)


# --------------------------------------------------------------------------------------------- framework values
def linspace32(start: float, end: float, steps: int) -> np.ndarray:
    """torch's float32 ``linspace`` on CPU (AVX2, AVX-512): ``step = (end - start) / (steps - 1)``, then
    ``start + step * i`` below ``steps // 2`` and ``end - step * (steps - 1 - i)`` from there, each fused (one
    rounding). ``start``, ``end`` are taken as float32.

    >>> linspace32(-1.0, 1.0, 7)[3].item()  # 1 - float32(1/3) * 3, rounded once: not 0
    -2.9802322387695312e-08
    """
    s, e = np.float32(start), np.float32(end)
    if steps == 1:
        return np.array([s], np.float32)
    step = np.float32((e - s) / np.float32(steps - 1))
    i = np.arange(steps)
    low = i < steps // 2
    base = np.where(low, np.float64(s), np.float64(e))
    prod = np.where(low, i, -(steps - 1 - i)).astype(np.float64) * np.float64(step)  # exact: 24 + 17 bits
    total = base + prod
    back = total - base
    lost = (base - (total - back)) + (prod - back)  # TwoSum: base + prod == total + lost exactly
    out = total.astype(np.float32)
    near = out.astype(np.float64)
    other = np.nextafter(out, np.where(total > near, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
    far = other.astype(np.float64)
    # total rounds correctly unless it is a float32 midpoint; then the exact sum lies on ``lost``'s side of it
    midpoint = (total != near) & (total - near == far - total)
    take_other = midpoint & (lost != 0) & ((lost > 0) == (far > total))
    return np.where(take_other, other, out).astype(np.float32)


def log_bands_end(max_res: int) -> float:
    """timm's log bands' last exponent, Python's ``math.log(max_res, 2) - 1``, with its two float64 logarithms
    correctly rounded."""
    if max_res == 1:
        return -1.0
    return _ln64(max_res) / _ln64(2) - 1.0


def _ln64(value: int) -> float:
    """``ln(value)`` (an integer ``>= 2``: transcendental, never a float64 midpoint) correctly rounded to float64."""
    digits = 40
    while True:
        with decimal.localcontext() as ctx:
            ctx.prec = digits
            v = Decimal(value).ln()
            slack = v * Decimal(10) ** (2 - digits)
            lo, hi = float(v - slack), float(v + slack)
        if lo == hi:
            return lo
        digits *= 2


def framework_bands(spec: PixelSpec) -> np.ndarray:
    """timm's ``pixel_freq_bands`` in float32 (the module docstring): ``(n,)``."""
    n = spec.bands
    if spec.linear:
        bands = linspace32(1.0, spec.max_res / 2, n)
    else:
        exponents = linspace32(0.0, log_bands_end(spec.max_res), n)  # torch takes the end as float32
        bands = f32ops.pow_(np.full(n, np.float32(2)), exponents)
    return (bands * np.float32(math.pi)).astype(np.float32)


def framework(spec: PixelSpec, part: str) -> np.ndarray:
    """The float32 ``(height * width, head_dim)`` ``cos`` or ``sin`` as timm computes it (the module docstring)."""
    bands = framework_bands(spec)
    trig = f32ops.cos if part == "cos" else f32ops.sin
    tables = {}
    for side in {spec.height, spec.width}:
        angles = (linspace32(-1.0, 1.0, side)[:, None] * bands[None, :]).astype(np.float32)
        tables[side] = trig(angles)
    return _assemble(spec, tables[spec.height], tables[spec.width])
