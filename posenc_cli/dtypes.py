"""Output element types: what a table's values become, correctly rounded from the exact value.

A value every layer shares (encodings/ rounds to it, formats/ spells and reads it): it lives beside ``table.py``,
not in encodings/, so that formats/ never imports encodings/.

=============  =========================  ======================================================================
name           stored as (numpy)          value
=============  =========================  ======================================================================
``float32``    ``<f4``                    IEEE binary32, round-half-even of the exact value
``float64``    ``<f8``                    IEEE binary64, round-half-even of the exact value
``float16``    ``<f2``                    IEEE binary16, round-half-even of the exact value
``bfloat16``   ``<u2`` (bit patterns)     bfloat16 (the top half of a binary32), round-half-even of the exact
                                          value; numpy has no bfloat16, so the array holds the bit patterns
                                          (``(bits.astype('<u4') << 16).view('<f4')`` gives the values)
``q15``        ``<i2``                    CMSIS Q15: ``round(v * 2**15)`` saturated to ``[-32768, 32767]``, so
                                          1.0 becomes 0x7FFF; halves round away from zero (``arm_float_to_q15``)
``q7``         ``i1``                     CMSIS Q7: ``round(v * 2**7)`` saturated to ``[-128, 127]``
``q31``        ``<i4``                    CMSIS Q31: ``round(v * 2**31)`` saturated to ``[-2**31, 2**31 - 1]``
                                          (``arm_float_to_q31`` with rounding)
``fixedT.F``   narrowest of ``i1``,       signed fixed point of ``T`` bits (2 to 64), ``F`` of them fractional
               ``<i2``, ``<i4``, ``<i8``  (``0 <= F < T``): ``round(v * 2**F)`` saturated to ``[-2**(T-1),
                                          2**(T-1) - 1]``, halves away from zero; ``fixed16.14`` is stored in an
                                          int16, ``fixed18.16`` in an int32 whose values need only 18 bits.
                                          ``q7``, ``q15``, ``q31`` are ``fixed8.7``, ``fixed16.15``, ``fixed32.31``
                                          (the same values, the CMSIS names recorded)
``int8``       ``i1``                     affine int8 (TFLite): ``round(v / scale) + zero_point`` saturated to
                                          ``[-128, 127]``; needs ``scale`` (and ``zero_point``, default 0)
=============  =========================  ======================================================================

Saturation is never silent. The codes of a fixed-point type ``fixedT.F`` run from ``-2**(T-1)`` to ``2**(T-1) -
1``, the values ``-2**I`` to ``2**I - 2**-F`` (``I = T - 1 - F`` integer bits). The value ``+2**I`` (q15's +1.0, a
sinusoid's cos 0) has no code of its own: CMSIS writes it, and every value that rounds to it, as the largest code.
That convention stands, and int8 follows the same rule (a code ``round(v / scale) + zero_point`` of 128, one past
the largest, is written as 127: with scale 1/128 int8 is q7). Any other value whose rounded code is outside the
codes would be saturated, clipped (:meth:`ElementType.beyond` says which). The table makers refuse such a table
unless it is asked for with ``saturate`` (:mod:`posenc_cli.saturation`); the conversions here saturate as the
table above says.

Every conversion rounds the *exact* value once. The generators hand over the correctly rounded float64 ``y`` of
each entry; a coarser result is proven from it when possible and recomputed exactly otherwise:

- For float16, bfloat16 and the fixed-point types every rounding boundary (a midpoint between two neighbours, or a
  half-integer times a power of two) is itself a float64. If the exact value and its correctly rounded ``y`` fell on
  different sides of such a boundary, the boundary would be a float64 nearer to the exact value than ``y``:
  impossible. So rounding ``y`` is right except when ``y`` *is* a boundary, and exactly those entries go to the
  exact path. (A fixed-point boundary ``(k + 1/2) / 2**F`` is a float64 while ``|k| < 2**52``: codes of more than 53
  bits, in types wider than 53 bits, are decided on the exact path too, which is correct and much slower.)
- For int8 the boundaries ``(k + 1/2 - zero_point) * scale`` are not float64s in general: ``y / scale`` carries a
  bound on its error and undecided entries go to the exact path (Ziv's strategy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from posenc_cli.errors import SpecError

#: Every element type posenc writes, float types first; besides these, any ``fixed<total>.<frac>``
#: (:func:`fixed_format`).
DTYPES = ("float32", "float64", "float16", "bfloat16", "q31", "q15", "q7", "int8")
#: How the general fixed-point types are spelled, for messages and help.
FIXED_SPELLING = "fixed<total>.<frac>"
FLOATS = ("float32", "float64", "float16", "bfloat16")
#: The integer types of index tables (relative positions), narrowest first. ``int8`` here is the integers
#: themselves; the element type ``int8`` of :data:`DTYPES` (a float table quantised) always has a ``scale``.
INDEX_DTYPES = ("int8", "int16", "int32", "int64")

#: ``fixed<total>.<frac>``: a general signed fixed-point type (two's complement, ``total`` bits of which ``frac``
#: are fractional). ``q7``, ``q15`` and ``q31`` are CMSIS' names for ``fixed8.7``, ``fixed16.15`` and ``fixed32.31``.
_FIXED = re.compile(r"fixed([1-9][0-9]?)\.(0|[1-9][0-9]?)")
#: The widths a fixed-point type may have: from a sign bit and one more up to 64 bits (int64 storage).
FIXED_BITS = (2, 64)
_Q_NAMES = {"q7": (8, 7), "q15": (16, 15), "q31": (32, 31)}


def fixed_format(name: object) -> tuple[int, int] | None:
    """``(total bits, fractional bits)`` of a fixed-point element type name, ``None`` for any other name.

    ``SpecError`` for a ``fixed<T>.<F>`` whose widths are out of range (``2 <= T <= 64``, ``0 <= F < T``).

    Examples
    --------
    >>> fixed_format("q31"), fixed_format("fixed18.16"), fixed_format("float32")
    ((32, 31), (18, 16), None)
    """
    if not isinstance(name, str):
        return None
    if name in _Q_NAMES:
        return _Q_NAMES[name]
    match = _FIXED.fullmatch(name)
    if match is None:
        return None
    total, frac = int(match[1]), int(match[2])
    if not FIXED_BITS[0] <= total <= FIXED_BITS[1] or not frac < total:
        raise SpecError(
            f"a fixed-point type fixed<total>.<frac> needs {FIXED_BITS[0]} <= total <= {FIXED_BITS[1]} and "
            f"0 <= frac < total, got {name!r}",
            param="dtype",
        )
    return total, frac


def word_bits(name: str) -> int:
    """The width in bits of one value of element type ``name``: what a ROM word or a packed field holds.

    The storage type's width, except for a fixed-point type, whose total width may be narrower than the smallest
    integer that stores it (``fixed18.16`` is 18 bits, stored in an int32).

    Examples
    --------
    >>> word_bits("float32"), word_bits("bfloat16"), word_bits("q7"), word_bits("fixed18.16"), word_bits("int16")
    (32, 16, 8, 18, 16)
    """
    fixed = fixed_format(name)
    if fixed is not None:
        return fixed[0]
    return 8 * np.dtype(_STORAGE.get(name, name)).itemsize


#: The largest finite value of each float type.
_FLOAT_MAX = {
    "float32": float(np.finfo(np.float32).max),
    "float64": float(np.finfo(np.float64).max),
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}

_STORAGE = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f2",
    "bfloat16": "<u2",
    "q31": "<i4",
    "q15": "<i2",
    "q7": "i1",
    "int8": "i1",
}


def _storage_code(name: str) -> str | None:
    """The numpy type code an element type ``name`` is stored as (a fixed-point type: the narrowest of int8,
    int16, int32 and int64 that holds its total width); ``None`` for a name that is no element type."""
    if name in _STORAGE:
        return _STORAGE[name]
    fixed = fixed_format(name)
    if fixed is None:
        return None
    return {1: "i1", 2: "<i2", 4: "<i4", 8: "<i8"}[next(n for n in (1, 2, 4, 8) if 8 * n >= fixed[0])]


def code_range(name: str) -> tuple[int, int] | None:
    """The least and greatest stored code of an integer element type (a fixed-point type: its total width, which
    may be narrower than its storage; a plain integer type: its own range); ``None`` for a float type.

    Examples
    --------
    >>> code_range("fixed18.16"), code_range("q15"), code_range("int8"), code_range("float32")
    ((-131072, 131071), (-32768, 32767), (-128, 127), None)
    """
    fixed = fixed_format(name)
    if fixed is not None:
        return -(2 ** (fixed[0] - 1)), 2 ** (fixed[0] - 1) - 1
    code = _STORAGE.get(name, name if name in INDEX_DTYPES else None)
    if code is None or np.dtype(code).kind != "i":
        return None
    info = np.iinfo(np.dtype(code))
    return int(info.min), int(info.max)


def is_element_type(name: object) -> bool:
    """Whether ``name`` is an element type of a float table: one of :data:`DTYPES` or a valid ``fixed<T>.<F>``.

    Examples
    --------
    >>> is_element_type("q31"), is_element_type("fixed18.16"), is_element_type("int16"), is_element_type("fixed1.0")
    (True, True, False, False)
    """
    try:
        return isinstance(name, str) and _storage_code(name) is not None
    except SpecError:
        return False


@dataclass(frozen=True)
class ElementType:
    """An output element type with its quantisation parameters (only ``int8`` has free ones).

    Examples
    --------
    >>> ElementType.of("q15").storage
    dtype('int16')
    >>> ElementType.of("int8", scale=1 / 127).zero_point
    0
    """

    name: str
    scale: float | None = None
    zero_point: int = 0

    @classmethod
    def of(
        cls, name: object, *, scale: float | None = None, zero_point: int | None = None, scale_name: str = "scale"
    ) -> ElementType:
        """Validate and build; ``SpecError`` names the culprit (``dtype``, ``scale`` or ``zero_point``; the scale as
        the caller's surface spells it, ``scale_name``: the sinusoid engine's ``quant_scale``)."""
        if not isinstance(name, str) or not is_element_type(name):
            fixed_format(name)  # a fixed<T>.<F> of widths out of range: say which
            try:  # numpy spellings of the float types: np.float32, "f4", "<f8", dtype objects
                name = np.dtype(name).name if name is not None else name  # type: ignore[call-overload]
            except TypeError:
                pass
        if not is_element_type(name):
            raise SpecError(
                f"dtype must be one of {', '.join(DTYPES)} or {FIXED_SPELLING} (signed fixed point, for example "
                f"fixed16.14), got {name!r}",
                param="dtype",
            )
        assert isinstance(name, str)
        if name == "int8":
            if scale is None:
                raise SpecError(
                    f"dtype int8 needs a {scale_name}: the real value of one quantisation step", param=scale_name
                )
            if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
                raise SpecError(f"{scale_name} must be a finite number greater than 0, got {scale!r}", param=scale_name)
            zp = 0 if zero_point is None else zero_point
            if isinstance(zp, bool) or not isinstance(zp, (int, np.integer)) or not -128 <= zp <= 127:
                raise SpecError(f"zero_point must be an integer in [-128, 127], got {zp!r}", param="zero_point")
            return cls(name, float(scale), int(zp))
        if scale is not None or zero_point is not None:
            what = scale_name if scale is not None else "zero_point"
            raise SpecError(f"{what} applies to dtype int8 only, not {name}", param=what)
        return cls(name)

    @property
    def storage(self) -> np.dtype:
        """The numpy dtype of the stored array (native byte order)."""
        code = _storage_code(self.name)
        assert code is not None
        return np.dtype(code).newbyteorder("=")

    @property
    def fixed(self) -> tuple[int, int] | None:
        """``(total bits, fractional bits)`` of a fixed-point type (q7, q15, q31, fixed<T>.<F>), else ``None``."""
        return fixed_format(self.name)

    @property
    def is_float(self) -> bool:
        return self.name in FLOATS

    def convert(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Round correctly rounded float64 values ``y``; return ``(stored, undecided)``.

        ``undecided`` marks the entries whose result cannot be proven from ``y``; their ``stored`` value is
        provisional and must be replaced by :meth:`from_exact` of the exact value.
        """
        if self.name in ("float32", "float64"):
            return y.astype(self.storage), np.zeros(y.shape, bool)
        if self.name == "float16":
            out = y.astype(np.float16)
            return out, _is_midpoint(y, out)
        if self.name == "bfloat16":
            return _bfloat16_bits(y)
        if self.fixed is not None:
            return _fixed(y, *self.fixed, self.storage)
        assert self.scale is not None
        with np.errstate(over="ignore", invalid="ignore"):  # a tiny scale: inf saturates, and is never a tie
            return self._affine(y)

    def _affine(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self.scale is not None
        scaled = y / self.scale
        # |y/scale - exact/scale| <= (half ulp of y)/scale + the division's half ulp; taken twice over.
        err = (np.spacing(np.abs(y)) / self.scale + np.spacing(np.abs(scaled))) * 2
        frac = np.abs(scaled - np.trunc(scaled))
        undecided = np.abs(frac - 0.5) <= err
        return _saturate(_round_half_away(scaled) + self.zero_point, self.storage), undecided

    @property
    def is_integer(self) -> bool:
        """Whether values are stored as integer codes that saturate: the fixed-point types and int8."""
        return not self.is_float

    def span(self) -> tuple[float, float]:
        """The least and greatest value the type holds without saturating (float types: their finite range).

        A fixed-point type's greatest is ``+2**I`` (written as its largest code, CMSIS's convention); int8's are the
        real values of the codes -128 and 128 (128 written as 127, the same convention).

        Examples
        --------
        >>> ElementType.of("q15").span(), ElementType.of("fixed16.14").span()
        ((-1.0, 1.0), (-2.0, 2.0))
        >>> ElementType.of("int8", scale=0.5, zero_point=-28).span()
        (-50.0, 78.0)
        """
        if self.fixed is not None:
            whole = 2.0 ** (self.fixed[0] - 1 - self.fixed[1])
            return -whole, whole
        if self.scale is not None:
            return (-128 - self.zero_point) * self.scale, (128 - self.zero_point) * self.scale
        most = _FLOAT_MAX[self.name]
        return -most, most

    def beyond(self, y: npt.ArrayLike) -> np.ndarray:
        """Which of the float64 values ``y`` this type would saturate (clip): a boolean array of ``y``'s shape.

        A fixed-point type ``fixedT.F`` (q7, q15, q31 too): a value whose code ``round(v * 2**F)`` (halves away from
        zero) is above ``2**(T-1)`` or below ``-2**(T-1)``; the code ``2**(T-1)`` itself is ``+2**I``, which CMSIS
        writes as the largest code (the module docstring), and is not counted. int8 by the same rule: a code
        ``round(v / scale) + zero_point`` above 128 or below -128. Float types saturate nothing (an overflow to
        infinity is refused where it can happen); NaN is never counted (integer types refuse it elsewhere). The
        answer is exact for the values ``y`` as they are: a generated table is judged on its correctly rounded
        float64 values.

        Examples
        --------
        >>> ElementType.of("q15").beyond([1.0, 1.0000152, 1.0000153, -1.0000152, -1.0000153]).tolist()
        [False, False, True, False, True]
        >>> ElementType.of("int8", scale=1 / 128).beyond([1.0, 1.0039, 1.0040, -1.0039, -1.0040]).tolist()
        [False, False, True, False, True]
        """
        y = np.asarray(y, np.float64)
        if self.fixed is not None:
            total, frac = self.fixed
            top = 2.0 ** (total - 1)
            with np.errstate(over="ignore", invalid="ignore"):
                x = y * 2.0**frac  # exact, or an overflow to infinity (beyond either way)
                # x - top is exact where it matters (Sterbenz: x within [top/2, 2 top]) and far from 0.5 elsewhere.
                out: np.ndarray = (x - top >= 0.5) | (x + top <= -0.5)
            return out
        if self.scale is None:
            return np.zeros(y.shape, bool)
        high, low = 128.5 - self.zero_point, -128.5 - self.zero_point  # where codes 129 and -129 begin
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            scaled = y / self.scale  # within half an ulp of the exact quotient
            out = (scaled >= high) | (scaled <= low)
            near = (np.abs(scaled - high) <= 4 * np.spacing(high)) | (np.abs(scaled - low) <= 4 * np.spacing(-low))
        for index in zip(*np.nonzero(near), strict=True):  # within rounding of a boundary: decide exactly
            q = Fraction(float(y[index])) / Fraction(self.scale)
            out[index] = q >= Fraction(high) or q <= Fraction(low)
        return out

    def from_exact(self, q: Fraction) -> int | float:
        """The stored value (a float for float types, an integer otherwise) for the exact value ``q``."""
        if self.name in ("float32", "float64", "float16"):
            return float(_nearest(q, self.storage))
        if self.name == "bfloat16":
            return _nearest_bfloat16_bits(q)
        if self.fixed is not None:
            total, frac = self.fixed
            top: int = 2 ** (total - 1)
            code: int = _round_half_away_exact(q * Fraction(2) ** frac)
            return max(-top, min(top - 1, code))
        assert self.scale is not None
        return _saturate_int(_round_half_away_exact(q / Fraction(self.scale)) + self.zero_point, self.storage)


def element_of(params: Mapping[str, object], dtype: npt.DTypeLike) -> str:
    """The element type of an array stored as ``dtype`` in a table with ``params``: the ``dtype`` parameter when
    the array is stored as that type is, else the array's own NumPy name.

    One table may hold arrays of several types (a relative-position ``index`` of int16 and the ``bias`` of
    float32 gathered for it): the ``dtype`` parameter names the type of the arrays it decides.

    Examples
    --------
    >>> element_of({"dtype": "bfloat16"}, np.uint16), element_of({"dtype": "int16"}, np.float32)
    ('bfloat16', 'float32')
    >>> element_of({}, np.int32), element_of({"dtype": "int8", "scale": 0.5}, np.int8)
    ('int32', 'int8')
    """
    stored = np.dtype(dtype).newbyteorder("=")
    name = params.get("dtype")
    storage = _storage_code(str(name)) if is_element_type(name) else None
    if storage is None and name in INDEX_DTYPES:
        storage = str(name)
    if storage is not None and np.dtype(storage).newbyteorder("=") == stored:
        return str(name)
    return stored.name


def decode(stored: np.ndarray, params: Mapping[str, object]) -> np.ndarray:
    """Stored values as float64 real values, decoding the element type that ``params["dtype"]`` names.

    bfloat16 bit patterns (``<u2``) are widened to float32; q15 is ``code / 2**15``, q7 ``code / 2**7``, int8
    ``(code - zero_point) * scale`` (``params["scale"]``, ``params["zero_point"]``, default 0). Anything else,
    and any array whose storage does not match the named type (a table without a ``dtype`` parameter, a bare
    array), is its values as float64.

    Examples
    --------
    >>> decode(np.array([16384, -32768], np.int16), {"dtype": "q15"}).tolist()
    [0.5, -1.0]
    >>> decode(np.array([0x3F80], np.uint16), {"dtype": "bfloat16"}).tolist()
    [1.0]
    >>> decode(np.array([5, -3], np.int8), {"dtype": "int8", "scale": 0.5, "zero_point": 1}).tolist()
    [2.0, -2.0]
    """
    dtype, kind, size = params.get("dtype"), stored.dtype.kind, stored.dtype.itemsize
    if dtype == "bfloat16" and kind == "u" and size == 2:
        return np.asarray((stored.astype(np.uint32) << np.uint32(16)).view(np.float32), np.float64)
    fixed = fixed_format(dtype) if is_element_type(dtype) else None
    if fixed is not None and kind == "i" and size == ElementType(str(dtype)).storage.itemsize:
        real: np.ndarray = stored.astype(np.float64) / 2.0 ** fixed[1]  # exact below 2**53 codes
        return real
    scale, zero_point = params.get("scale"), params.get("zero_point", 0)
    if dtype == "int8" and kind == "i" and size == 1 and isinstance(scale, (int, float)):
        if isinstance(zero_point, (int, float)):
            real = (stored.astype(np.float64) - float(zero_point)) * float(scale)
            return real
    return np.asarray(stored, np.float64)


# ----------------------------------------------------------------------------------------------- array helpers
def _is_midpoint(y: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """Whether float64 ``y`` lies exactly half-way between ``rounded`` (its rounding to a narrower float type) and
    that type's next value towards ``y`` (the midpoint is exact in float64)."""
    back = rounded.astype(np.float64)
    towards = np.nextafter(rounded, np.where(y > back, np.inf, -np.inf).astype(rounded.dtype))
    midpoint: np.ndarray = (y != back) & (y == (back + towards.astype(np.float64)) / 2)
    return midpoint


def _round_half_away(x: np.ndarray) -> np.ndarray:
    rounded: np.ndarray = np.trunc(x + np.copysign(0.5, x))
    return rounded


def _fixed(y: np.ndarray, total: int, frac: int, storage: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Signed fixed point of ``total`` bits, ``frac`` fractional: ``round(y * 2**frac)``, halves away from zero,
    saturated to ``[-2**(total-1), 2**(total-1) - 1]``; ``(stored, undecided)``.

    ``y * 2**frac`` is exact (a power of two), and each rounding boundary ``(k + 1/2) / 2**frac`` is a float64 while
    ``2k + 1 < 2**53``: then only an exact tie is undecided (the argument of the module docstring). Past ``2**52``
    the boundaries are no float64s, so such entries go to the exact path too, unless they saturate either way.
    """
    scaled = y * 2.0**frac
    top = 2.0 ** (total - 1)
    undecided = np.abs(scaled - np.trunc(scaled)) == 0.5
    undecided |= (np.abs(scaled) >= 2.0**52) & (np.abs(scaled) < top + 1)
    rounded = np.clip(_round_half_away(scaled), -top, top)  # top itself stands for top - 1 (not a float64 at 64)
    high = rounded >= top
    out = np.where(high, 0, rounded).astype(storage)
    out[high] = (1 << (total - 1)) - 1
    return out, undecided


def _saturate(x: np.ndarray, storage: np.dtype) -> np.ndarray:
    info = np.iinfo(storage)
    saturated: np.ndarray = np.clip(x, info.min, info.max).astype(storage)
    return saturated


def _bfloat16_bits(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bfloat16 bit patterns of float64 ``y``, round-half-even, straight from the float64 bits (no double rounding
    through float32). Magnitudes below bfloat16's smallest normal (2**-126) are left undecided for the exact path."""
    bits = np.ascontiguousarray(y, np.float64).view(np.uint64)
    sign = (bits >> np.uint64(63)).astype(np.uint16) << np.uint16(15)
    mag = bits & np.uint64(0x7FFF_FFFF_FFFF_FFFF)
    # Keep 7 of the 52 fraction bits: add just under half of the dropped unit, plus the kept unit's parity (RNE).
    keep = (mag >> np.uint64(45)) & np.uint64(1)
    rounded = (mag + np.uint64((1 << 44) - 1) + keep) >> np.uint64(45)  # float64 exponent (11 bits) + 7 bits
    exponent = (rounded >> np.uint64(7)).astype(np.int64) - 1023 + 127
    out = (exponent.clip(0, 255).astype(np.uint16) << np.uint16(7)) | (rounded & np.uint64(0x7F)).astype(np.uint16)
    out |= sign
    tiny = np.abs(y) < 2.0**-126
    out[tiny & (y == 0)] = sign[tiny & (y == 0)]
    undecided = (tiny & (y != 0)) | (exponent >= 255) | _is_bfloat16_midpoint(mag)
    return out, undecided


def _is_bfloat16_midpoint(mag: np.ndarray) -> np.ndarray:
    midpoint: np.ndarray = (mag & np.uint64((1 << 45) - 1)) == np.uint64(1 << 44)
    return midpoint


# ------------------------------------------------------------------------------------------- exact (Fraction)
def bits_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer type of ``dtype``'s width: its bit patterns."""
    return np.dtype(f"u{dtype.itemsize}")


def _step(bits: int, up: bool, itemsize: int) -> int:
    """The bit pattern of the next representable value above (``up``) or below, for sign-magnitude binary floats."""
    sign = 1 << (8 * itemsize - 1)
    negative, magnitude = bool(bits & sign), bits & (sign - 1)
    if magnitude == 0:  # +-0: the neighbours are the smallest subnormals
        return 1 if up else sign | 1
    return bits + (-1 if up == negative else 1)


def nearest_bits(q: Fraction, dtype: npt.DTypeLike) -> int:
    """Bit pattern of ``q`` correctly rounded to ``dtype`` (round-half-even, zero takes the sign of ``q``)."""
    dt = np.dtype(dtype)
    start = np.array(float(q)).astype(dt).view(bits_dtype(dt)).item()  # within a few ulps of q
    best_bits, best_dist = -1, None
    for bits in (start, _step(start, True, dt.itemsize), _step(start, False, dt.itemsize)):
        value = float(np.array(bits, bits_dtype(dt)).view(dt).item())
        if not math.isfinite(value):
            continue
        dist = abs(Fraction(value) - q)
        if best_dist is None or dist < best_dist or (dist == best_dist and bits % 2 == 0):
            best_bits, best_dist = bits, dist
    value = float(np.array(best_bits, bits_dtype(dt)).view(dt).item())
    if value == 0.0 and q != 0:  # -0 and +0 are equally near a tiny q: keep q's sign
        best_bits = np.array(math.copysign(0.0, q), np.float64).astype(dt).view(bits_dtype(dt)).item()
    return best_bits


def _nearest(q: Fraction, dtype: np.dtype) -> np.floating:
    bits_type = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    nearest: np.floating = np.array(nearest_bits(q, dtype), bits_type).view(dtype)[()]  # type: ignore[assignment]
    return nearest


def _nearest_bfloat16_bits(q: Fraction) -> int:
    """The bfloat16 nearest to ``q`` (ties to even), from the float32 grid: bfloat16 values are float32 values."""
    f32 = int(np.array(_nearest(q, np.dtype("<f4")), np.float32).view(np.uint32))
    best, best_dist = 0, None
    for cand in {f32 >> 16, (f32 >> 16) + 1, max(0, (f32 >> 16) - 1)}:
        if (cand & 0x7F80) == 0x7F80:  # infinity or NaN patterns are never nearest to a table value
            continue
        value = Fraction(float(np.array(cand << 16, np.uint32).view(np.float32)))
        dist = abs(value - q)
        if best_dist is None or dist < best_dist or (dist == best_dist and cand % 2 == 0):
            best, best_dist = cand, dist
    return best


def _round_half_away_exact(q: Fraction) -> int:
    n = math.floor(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


def _saturate_int(n: int, storage: np.dtype) -> int:
    info = np.iinfo(storage)
    return max(info.min, min(info.max, n))
