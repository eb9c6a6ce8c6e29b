"""Every framework's sinusoidal table, correctly rounded: one general definition, per-column layouts.

The entry of row ``r`` (``0 <= r < 2**32``) and column ``c`` is the exact real number ::

    value(r, c) = scale * trig_c(position(r) * f_k(c))      (0 for a zero column)
    position(r) = start + step * r
    f_k         = m_k * base ** (-k / denom)                 (m_k = 1 unless ``mults`` are given)

rounded once to the output element type (round-half-even for the float types; the rules of
:mod:`~posenc_cli.dtypes` for the others).  ``start``, ``step``, ``scale`` and ``base`` are the exact
values of their float64s, ``denom`` a positive rational, and each column ``(k, "sin")``, ``(k, "cos")`` or ``None``.
Every layout in circulation is a column list: the paper interleaves ``(j // 2, "sin" if j % 2 == 0 else "cos")``
with ``denom = d/2``; tensor2tensor/fairseq put ``h = d // 2`` sines then ``h`` cosines with ``denom = h - 1`` (a
trailing ``None`` for odd ``d``); OpenAI diffusion cosines first with ``denom = h``; Marian ``ceil(d/2)`` sines then
``floor(d/2)`` cosines with ``denom = d/2``.

Domain (checked, :class:`~posenc_cli.errors.SpecError` names the parameter): ``|start| < 2**32`` and every requested
row's ``|position| < 2**32`` (divided by the largest frequency multiplier ``m_k`` when ``mults`` are given); ``0 <=
first_row <= stop_row <= 2**32``; ``base`` finite and ``> 1``; ``scale`` finite, nonzero, and for
float16/bfloat16/float32 output at most the type's largest finite value in magnitude (so no entry overflows); ``0 <=
k < 2**32``; at most ``2**20`` columns. Negative positions, fractional starts and steps (0.5, 1e-3, the float64
nearest to 1/3: its exact value counts) and a zero step are all in the domain.

Accuracy: every entry, float64 included, is correctly rounded, and the same bits on every platform (no libm call).
How (Ziv's strategy; the modules named hold the proofs):

- :mod:`~posenc_cli.encodings._kernel`: per column, the turns per row ``step * f_k / (2 pi)`` split into 21-bit
  pieces (so ``r * piece`` is exact for ``r < 2**32``) and the phase ``start * f_k / (2 pi)`` reduced to a
  double-double, both from exact integer arithmetic on 193-bit mantissas; a double-double kernel then gives sin and
  cos of ``position(r) * f_k`` within ``2**-78`` for ``|r * step| < 2**33`` (which the domain guarantees).
- :mod:`~posenc_cli.encodings._engine`: angle addition per block of rows (the phase goes into the block vectors);
  the amplitude multiplies the block vectors (float32 output: ``fl(scale * U)``, whose extra rounding the bound
  absorbs; float64 output: the mantissa of ``scale`` as a double-double product, its power of two applied exactly
  at the end).  Positions crossing zero are computed as two one-signed tables, so small sines keep relative bounds.
- :mod:`~posenc_cli.encodings._combine`: a proven error bound per entry (absolute, ``2**-49 |scale|`` for float32
  output and ``2**-75 |scale|`` for float64; relative for small one-signed sines) decides its rounding or flags it;
- :mod:`~posenc_cli.encodings._exact`: flagged entries are recomputed with :mod:`decimal` (an enclosure narrowed
  until it rounds one way; it terminates because every nonzero entry is transcendental).

Examples
--------
>>> from fractions import Fraction
>>> cols = [(0, "sin"), (1, "sin"), (0, "cos"), (1, "cos"), None]           # t2t-style halves, odd d = 5
>>> t = sinusoid_rows(0, 3, cols, denom=Fraction(1), start=0.5, dtype="float64")
>>> t[1].tolist()  # position 1.5: sin 1.5, sin 1.5e-4, cos 1.5, cos 1.5e-4, 0
[0.9974949866040544, 0.0001499999994375, 0.0707372016677029, 0.9999999887500001, 0.0]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings._columns import Columns
from posenc_cli.encodings._engine import typed_rows
from posenc_cli.encodings._exact import Sinusoid
from posenc_cli.errors import SpecError

__all__ = [
    "MAX_COLUMNS",
    "MAX_POSITION",
    "MAX_ROWS",
    "Columns",
    "check_sinusoid",
    "sinusoid_columns",
    "sinusoid_rows",
]

MAX_ROWS = 2**32  # row indices 0 .. 2**32 - 1: row * (21-bit piece) stays exact in float64
MAX_POSITION = 2**32  # |start| and |position| below this: angles below 2**32 rad, |row * step| below 2**33
MAX_COLUMNS = 2**20  # a sanity limit: per-column constants cost a few microseconds each
MAX_K = 2**32 - 1
_FINITE_MAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0, "bfloat16": 3.3895313892515355e38}

ColumnSpec = Sequence[tuple[int, str] | None] | Columns


# --------------------------------------------------------------------------------------------------- validation
def show(value: object) -> str:
    """A value as an error message writes it: a string quoted, a number as a person would have typed it (a fraction
    as the float nearest it, never a hundred digits over a hundred more), an integer too long to read by its size
    (Python will not even write one of over 4300 digits), a sequence by its first items.

    >>> show("x"), show(0.5), show(Fraction(1, 3)), show(Fraction(1, 10**300)), show(10**400), show((2, 3))
    ("'x'", '0.5', '1/3', '1e-300', 'an integer of 401 digits', '(2, 3)')
    """
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Fraction) and value.denominator == 1:
        value = value.numerator
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        number = int(value)
        if abs(number) < 10**30:
            return str(number)
        digits = int(math.log10(abs(number))) + 1  # str() refuses past 4300 digits; the logarithm does not
        return f"{'an' if number > 0 else 'a negative'} integer of {digits} digits"
    if isinstance(value, Fraction):
        if len(str(value)) <= 40:  # 1/3: the fraction itself is what was given
            return str(value)
        try:
            return repr(float(value))
        except OverflowError:
            return f"{'' if value > 0 else '-'}a number beyond 1e308"
    if isinstance(value, (list, tuple)):
        items = [show(v) for v in value[:8]] + (["..."] if len(value) > 8 else [])
        inside = ", ".join(items) + ("," if isinstance(value, tuple) and len(value) == 1 else "")
        return f"[{inside}]" if isinstance(value, list) else f"({inside})"
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _approximately(value: Fraction) -> str:
    """An exact rational (a position) as the float64 nearest it, or as beyond every float64."""
    try:
        return repr(float(value))
    except OverflowError:
        return "beyond 1e308" if value > 0 else "below -1e308"


def count(value: object, name: str, minimum: int, maximum: int) -> int:
    """An integer (Python or NumPy, never bool) within ``[minimum, maximum]``, else :class:`SpecError`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive" if minimum > 0 else "a non-negative"
        raise SpecError(f"{name} must be {kind} integer, got {show(value)}", param=name)
    if value > maximum:
        raise SpecError(f"{name} must be at most {maximum}, got {show(value)}", param=name)
    return int(value)


def check_base(base: object, name: str = "base") -> float:
    """A wavelength base, a finite number greater than 1; a ``SpecError`` names it ``name`` (RoPE's ``theta``)."""
    value = math.nan
    if isinstance(base, numbers.Real) and not isinstance(base, (bool, np.bool_)):
        try:
            value = float(base)
        except OverflowError:
            pass
    if not (math.isfinite(value) and value > 1.0):
        raise SpecError(f"{name} must be a finite number greater than 1, got {show(base)}", param=name)
    return value


def _real(value: object, name: str) -> float:
    """A finite real number that is exactly a float64 (ints, floats, NumPy scalars, exact Fractions)."""
    out = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        try:
            out = float(value)
        except OverflowError:
            pass
    if not math.isfinite(out):
        raise SpecError(f"{name} must be a finite number, got {show(value)}", param=name)
    if isinstance(value, numbers.Rational) and Fraction(out) != value:
        raise SpecError(f"{name} must be exactly a float64 value, got {show(value)}", param=name)
    return out


def _denom(value: object) -> Fraction:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Rational, float, np.floating)):
        raise SpecError(f"denom must be a positive rational number, got {show(value)}", param="denom")
    finite = not isinstance(value, (float, np.floating)) or math.isfinite(value)
    q = Fraction(value) if finite else Fraction(0)  # type: ignore[arg-type]
    if q <= 0:
        raise SpecError(f"denom must be a positive rational number, got {show(value)}", param="denom")
    return q


def sinusoid_columns(columns: ColumnSpec) -> Columns:
    """Validate a column description: per column ``(k, "sin")``, ``(k, "cos")`` (``0 <= k < 2**32``) or ``None``.

    The result can be passed as ``columns`` again (no re-validation: cheaper when streaming many row blocks).

    >>> sinusoid_columns([(0, "sin"), (0, "cos"), None])
    Columns(3 columns, 1 frequencies)
    """
    if isinstance(columns, Columns):
        return columns
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence) or not 1 <= len(columns) <= MAX_COLUMNS:
        what = f"{len(columns)} columns" if isinstance(columns, Sequence) else show(columns)
        raise SpecError(f"columns must be a sequence of 1 .. {MAX_COLUMNS} columns, got {what}", param="columns")
    ks, kinds = np.zeros(len(columns), np.int64), np.full(len(columns), Columns.ZERO, np.int8)
    for i, column in enumerate(columns):
        if column is None:
            continue
        ok = isinstance(column, tuple) and len(column) == 2 and column[1] in ("sin", "cos")
        k = column[0] if ok else None
        if not ok or isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 0 <= k <= MAX_K:
            raise SpecError(
                f"columns[{i}] must be None or a pair (k, 'sin' or 'cos') with 0 <= k < 2**32, got {show(column)}",
                param="columns",
            )
        ks[i], kinds[i] = k, Columns.SIN if column[1] == "sin" else Columns.COS
    return Columns(ks, kinds)


def _element(dtype: npt.DTypeLike, quant_scale: float | None, zero_point: int | None) -> ElementType:
    return ElementType.of(dtype, scale=quant_scale, zero_point=zero_point, scale_name="quant_scale")


def check_sinusoid(
    first_row: int,
    stop_row: int,
    columns: ColumnSpec,
    *,
    denom: numbers.Rational | float,
    base: float = 10000.0,
    start: float = 0.0,
    step: float = 1.0,
    scale: float = 1.0,
    dtype: npt.DTypeLike = "float32",
    quant_scale: float | None = None,
    zero_point: int | None = None,
    mults: Sequence[numbers.Rational | float] | None = None,
    names: Mapping[str, str] | None = None,
) -> tuple[int, int, Columns, Sinusoid, ElementType]:
    """Validate :func:`sinusoid_rows`'s parameters; return ``(first_row, stop_row, columns, spec, element)``.

    Raises :class:`SpecError` whose ``param`` names the culprit (``first_row``, ``stop_row``, ``columns``,
    ``denom``, ``base``, ``start``, ``step``, ``scale``, ``dtype``, ``quant_scale``, ``zero_point``, ``mults``),
    as the caller's surface spells it: ``names`` maps a parameter here to the caller's own name for what it comes
    from (a preset's ``{"scale": "amplitude"}``; the rows' end ``stop_row`` is a table's ``seq_len``).
    """
    called = dict(names or {})

    def name(param: str) -> str:
        return called.get(param, param)

    first = count(first_row, "first_row", 0, MAX_ROWS)
    stop = count(stop_row, "stop_row", 0, MAX_ROWS)
    if stop < first:
        raise SpecError(f"stop_row must be at least first_row ({first}), got {stop}", param="stop_row")
    cols = sinusoid_columns(columns)
    q, b = _denom(denom), check_base(base)
    x0, dx, s = _real(start, "start"), _real(step, "step"), _real(scale, name("scale"))
    element = _element(dtype, quant_scale, zero_point)
    m = _mults(mults, cols, name("mults"))
    top = max(m) if m else Fraction(1)  # the kernel's domain is the angle's: |position * m_k| < 2**32 (f_k <= 1)
    limit, what = Fraction(MAX_POSITION) / top, "2**32" if top <= 1 else f"2**32 / {float(top):.17g}"
    if not abs(x0) < limit:
        raise SpecError(f"start must be below {what} in magnitude, got {show(start)}", param="start")
    last = Fraction(x0) + Fraction(dx) * (stop - 1)  # |position| is convex in the row: start and last suffice
    if stop > first and not abs(last) < limit:
        raise SpecError(
            f"positions must stay below {what} in magnitude: row {stop - 1} is at start + step * {stop - 1} = "
            f"{_approximately(last)}",
            param=name("stop_row"),
        )
    if s == 0 or abs(s) > _FINITE_MAX.get(element.name, math.inf):
        most = f" and at most {_FINITE_MAX[element.name]:.8g} in magnitude for {element.name}" if s else ""
        raise SpecError(f"{name('scale')} must be nonzero{most}, got {show(scale)}", param=name("scale"))
    return first, stop, cols, Sinusoid(b, q, x0, dx, s, m), element


def _mults(
    mults: Sequence[numbers.Rational | float] | None, cols: Columns, param: str = "mults"
) -> tuple[Fraction, ...] | None:
    """Per frequency index ``k``: an exact rational ``2**-64 <= m_k <= 2**32`` (floats taken exactly); a
    ``SpecError`` names ``param``, what the caller's surface calls them."""
    if mults is None:
        return None
    top = int(cols.ks.max()) if len(cols.ks) else 0
    if isinstance(mults, (str, bytes)) or not isinstance(mults, Sequence) or len(mults) <= top:
        raise SpecError(f"mults must be a sequence with an entry for every k up to {top}", param=param)
    out = []
    for i, m in enumerate(mults):
        ok = isinstance(m, (numbers.Rational, float, np.floating)) and not isinstance(m, (bool, np.bool_))
        q = Fraction(m) if ok and math.isfinite(m) else Fraction(-1)
        if not Fraction(1, 2**64) <= q <= 2**32:
            raise SpecError(f"mults[{i}] must be a number in [2**-64, 2**32], got {show(m)}", param=param)
        out.append(q)
    return tuple(out) if any(q != 1 for q in out) else None


# ------------------------------------------------------------------------------------------------- public API
def sinusoid_rows(
    first_row: int,
    stop_row: int,
    columns: ColumnSpec,
    *,
    denom: numbers.Rational | float,
    base: float = 10000.0,
    start: float = 0.0,
    step: float = 1.0,
    scale: float = 1.0,
    dtype: npt.DTypeLike = "float32",
    quant_scale: float | None = None,
    zero_point: int | None = None,
    mults: Sequence[numbers.Rational | float] | None = None,
) -> np.ndarray:
    """Rows ``first_row .. stop_row - 1`` of the table defined in the module docstring, shape
    ``(stop_row - first_row, len(columns))``, C-contiguous, every entry correctly rounded.

    Parameters
    ----------
    first_row, stop_row : int
        Row indices, ``0 <= first_row <= stop_row <= 2**32``; row ``r`` is at ``start + step * r``.  Any block of
        rows is bit-identical to the same rows of a larger block (writers stream tables larger than memory).
    columns : sequence of ``(k, "sin" | "cos")`` or ``None``, or :class:`Columns`
        Per column: the frequency index ``k`` (``f_k = base**(-k/denom)``) and the function, or a zero column.
    denom : positive rational (int, :class:`~fractions.Fraction`, or float taken exactly)
        The frequency denominator: ``d_model/2`` for the paper, ``h - 1`` for tensor2tensor/fairseq, ``h`` for
        OpenAI diffusion (``h = d_model // 2``).
    base : float, default 10000.0
        Wavelength base (``max_period``, ``theta``), finite and greater than 1.
    start, step : float
        Positions ``start + step * r`` (offsets, strides, fractional timesteps); exact float64 values.
    scale : float, default 1.0
        The amplitude multiplying every entry (exact float64 value, nonzero).
    dtype : {"float32", "float64", "float16", "bfloat16", "q15", "q7", "int8"}
        Output element type (:mod:`posenc_cli.dtypes`); ``quant_scale`` and ``zero_point`` are int8's
        quantisation step and zero point.
    mults : sequence of rationals or floats, optional
        Per frequency index ``k``, an exact multiplier ``m_k`` of the frequency, ``2**-64 <= m_k <= 2**32``: column
        ``(k, trig)`` is ``scale * trig(position * m_k * base**(-k/denom))`` (RoPE's scaled frequencies,
        tensor2tensor's ``min_timescale``); positions must then keep ``|position * m_k| < 2**32``.

    Examples
    --------
    >>> sinusoid_rows(0, 2, [(0, "cos"), (0, "sin")], denom=1, scale=-2.0, dtype="float64").tolist()
    [[-2.0, 0.0], [-1.0806046117362795, -1.682941969615793]]
    """
    first, stop, cols, spec, element = check_sinusoid(
        first_row,
        stop_row,
        columns,
        denom=denom,
        base=base,
        start=start,
        step=step,
        scale=scale,
        dtype=dtype,
        quant_scale=quant_scale,
        zero_point=zero_point,
        mults=mults,
    )
    return typed_rows(first, stop, cols, spec, element)


def prepare_rows(
    stop_row: int,
    columns: ColumnSpec,
    *,
    denom: numbers.Rational | float,
    base: float = 10000.0,
    start: float = 0.0,
    step: float = 1.0,
    scale: float = 1.0,
    dtype: npt.DTypeLike = "float32",
    quant_scale: float | None = None,
    zero_point: int | None = None,
    mults: Sequence[numbers.Rational | float] | None = None,
    names: Mapping[str, str] | None = None,
) -> Callable[[int, int], np.ndarray]:
    """Check :func:`sinusoid_rows`'s parameters once, for rows ``0 .. stop_row - 1``, and return ``rows(lo, hi)``
    that computes any block ``0 <= lo <= hi <= stop_row`` of them without checking again: bit-identical to
    ``sinusoid_rows(lo, hi, ...)``. A writer asks for thousands of blocks; the parameters are the same for each.
    A block outside ``0 .. stop_row`` is a caller's bug and raises ``ValueError``."""
    _, stop, cols, spec, element = check_sinusoid(
        0, stop_row, columns, denom=denom, base=base, start=start, step=step, scale=scale, dtype=dtype,
        quant_scale=quant_scale, zero_point=zero_point, mults=mults, names=names,
    )  # fmt: skip

    def rows(lo: int, hi: int) -> np.ndarray:
        if not 0 <= lo <= hi <= stop:
            raise ValueError(f"rows {lo}..{hi} are outside the prepared 0..{stop}")
        return typed_rows(lo, hi, cols, spec, element)

    return rows
