"""The sinusoidal positional encoding of "Attention Is All You Need", correctly rounded.

``PE[pos, j] = sin(pos * f_k)`` for even ``j`` and ``cos(pos * f_k)`` for odd ``j``, with ``k = j // 2`` and
``f_k = base**(-2k/d_model)`` (an odd ``d_model`` ends with a sine column).  Rows are ``pos = 0 .. seq_len - 1``.

Accuracy contract, for every position below :data:`MAX_POSITIONS` (``2**32``), every ``d_model`` and every finite
``base > 1`` (taken as the exact value of its float64):

- every entry is the exact real value correctly rounded (round-half-even) to the output dtype, for float32 *and*
  float64 output; results are the same bits on every platform (no libm call is involved).

This is the general engine of :mod:`posenc_cli.encodings.sinusoid` (see there how: angle addition per block of
rows, a proven error bound, a Ziv check and an exact :mod:`decimal` path) for the paper's interleaved columns,
``denom = d_model / 2``, positions ``0, 1, 2, ...`` and amplitude 1.

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

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings._columns import paper_columns
from posenc_cli.encodings._engine import typed_rows
from posenc_cli.encodings._exact import exact_entries, paper
from posenc_cli.encodings.sinusoid import check_base, count
from posenc_cli.errors import SpecError

__all__ = ["MAX_D_MODEL", "MAX_POSITIONS", "check_params", "sinusoidal", "sinusoidal_rows"]

MAX_POSITIONS = 2**32  # positions 0 .. 2**32 - 1: pos * (21-bit piece) stays exact in float64
MAX_D_MODEL = 2**20  # a sanity limit: per-column constants cost a few microseconds each


# --------------------------------------------------------------------------------------------------- validation
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
        of :data:`~posenc_cli.dtypes.DTYPES`; float32/float64 also as a type or ``numpy.dtype``), or
        ``scale``/``zero_point`` (int8 only).

    Examples
    --------
    >>> check_params(8, 4, 10000, "float64")
    (8, 4, 10000.0, ElementType(name='float64', scale=None, zero_point=0))
    >>> check_params(-3, 4)
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: seq_len must be a positive integer, got -3
    """
    seq_len = count(seq_len, "seq_len", 1, MAX_POSITIONS)
    d_model = count(d_model, "d_model", 1, MAX_D_MODEL)
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    return seq_len, d_model, check_base(base), element


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
        Output element type (:mod:`posenc_cli.dtypes`): the array's dtype is its storage type
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
    start = count(start, "start", 0, MAX_POSITIONS)
    stop = count(stop, "stop", 0, MAX_POSITIONS)
    if stop < start:
        raise SpecError(f"stop must be at least start ({start}), got {stop}", param="stop")
    _, d_model, base, element = check_params(1, d_model, base, dtype, scale=scale, zero_point=zero_point)
    return _typed_rows(start, stop, d_model, base, element)


def paper_rows(d_model: int, base: float, element: ElementType) -> Callable[[int, int], np.ndarray]:
    """``rows(lo, hi)``: blocks of the paper's table for parameters already checked (:func:`check_params`), each
    bit-identical to :func:`sinusoidal_rows` of the same rows; nothing is checked per block."""
    return functools.partial(_typed_rows, d_model=d_model, base=base, element=element)


def _typed_rows(start: int, stop: int, d_model: int, base: float, element: ElementType) -> np.ndarray:
    """Rows in ``element``'s storage (:func:`~posenc_cli.encodings._engine.typed_rows`); float32/float64 entries left
    undecided by the fast path go through :func:`exact_entries` (looked up here at call time)."""

    def exact(rows: np.ndarray, cols: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return exact_entries(rows, cols, d_model, base, dtype)

    return typed_rows(start, stop, paper_columns(d_model), paper(d_model, base), element, exact)
