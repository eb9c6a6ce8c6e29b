"""Floats as the shortest text that reads back to the identical value, for the CSV and C writers.

The spelling: a contract, files must not change between releases or with the machine
-------------------------------------------------------------------------------------
Every value is written with the fewest significant decimal digits that read back to the identical float of its own
dtype, and always carries a ``.`` or an exponent, so that ``1.0`` never becomes ``1`` (an integer to pandas, an
invalid ``1f`` to a C compiler) and ``-0.0`` keeps its sign. Byte for byte:

- float64 values are spelled exactly as Python's ``repr(float(v))``.
- float32 values are spelled exactly as ``str(np.float32(v))`` of the installed NumPy with its default print
  options (Dragon4, "unique" mode):

  * Digits: the shortest digit string ``d1 d2 ... dn`` (``d1`` non-zero) that lies in the rounding interval of
    ``v``: between the midpoints to its two float32 neighbours, the midpoints themselves included only when
    ``v``'s significand is even (they read back to ``v`` under round-half-to-even, as C's ``strtof``, Python's
    ``float`` and NumPy read). Of the shortest candidates, the one nearest to ``v`` (an exact tie goes to the even
    last digit). At a power of two the interval is lopsided, the neighbour below being twice as close.
  * Notation: positional when ``v == 0`` or ``1e-4 <= |v| < P``, scientific otherwise; ``P`` is ``1e6`` with
    NumPy >= 2.3 and ``1e16`` before (the module asks the installed NumPy once, at import). Positional: the
    integer part (at least ``0``), ``.``, the fraction (at least one digit): ``0.0``, ``1.0``, ``0.84147096``,
    ``0.00012345``, ``999999.94``. Scientific: the first digit, ``.`` and the other digits if there are any, ``e``,
    the exponent's sign, at least two exponent digits: ``1e-05``, ``1e-04`` (``np.float32(1e-4)`` lies just below
    ``1e-4``), ``1.2345679e+08`` (NumPy >= 2.3), ``3.4028235e+38``, ``1e-45``.
  * Sign: ``-`` before negative values, ``-0.0`` included.

- NaN and infinities have no portable spelling in either format and are refused with ``FormatError``.

:func:`join_rows` lays out whole blocks (the writers' path); :func:`shortest` yields lists of strings per row.

How float32 text is made fast
-----------------------------
Formatting one value at a time costs about a microsecond in Python; the writers need a few tens of nanoseconds. For
float32 the digits and the text are computed for chunks of values with NumPy array operations:

1. Digits (:mod:`~posenc_cli.formats.text._digits`): the shortest digits from float64 arithmetic with a safety
   margin; the values within the margin, NumPy's Dragon4 one at a time.
2. Text (:mod:`~posenc_cli.formats.text._records`): each value's text right-aligned in a 16-byte record (two uint64
   words), built by table look-ups and byte shifts.
3. Bytes (:mod:`~posenc_cli.formats.text._emit`): the separators joined to the records, the records scattered into
   one buffer.

Blocks are cut into chunks of whole rows (or of one row) that worker threads format in parallel, NumPy releasing
the GIL; each thread reuses its scratch arrays from chunk to chunk. With NumPy < 2.3, blocks holding float32 values
of 1e6 or more (positional up to 1e16, too long for a record) are formatted one value at a time.

float64 values go through ``repr`` one at a time (up to about a microsecond each, for 17-digit values): the shortest
digits of a double cannot be decided with float64 arithmetic.

The compiled core
-----------------
Where posenc was built with its optional C extension ``posenc_cli._ctext`` (``posenc_cli/_core/text.c``), both
dtypes take it instead: one call formats a chunk of whole rows into the final bytes, separators included, with the
GIL released (chunks on the same worker threads), a few tens of nanoseconds a value for float32 and float64 alike.
Its digits are exact by construction (a 64- or 128-bit product with a table entry, decided exactly with big
integers in the rare case the product's error could matter), and its bytes are those of the pure path above, which
stays the reference. ``POSENC_CORE=pure`` keeps the pure path; ``POSENC_CORE=compiled`` makes a missing extension
an ``ImportError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import ModuleType

import numpy as np

from ..._native import native
from ...errors import FormatError
from ._emit import Tails, format_chunk
from ._records import fits16, positional_range32, spell32
from ._work import cpus, executor, give_back

__all__ = ["TEXT_DTYPES", "join_rows", "shortest"]

#: The float dtypes the text writers can spell exactly.
TEXT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: Values per chunk: enough to make NumPy's cost per call (about a microsecond, some 150 calls per chunk) small, few
#: enough for the arrays in use at a time to stay near a core's cache.
_CHUNK = 1 << 16
#: Blocks of at most this many values are formatted one value at a time (the array code has a fixed cost).
_FEW = 100

#: Worker threads for blocks of several chunks (1: everything in the calling thread).
_WORKERS = max(1, min(cpus(), 8))


def _compiled() -> ModuleType | None:
    """The compiled text core (:func:`posenc_cli._native.native`), or None for the pure path: not built, or
    ``POSENC_CORE=pure`` (read at each call); ``POSENC_CORE=compiled`` makes a missing core an error."""
    return native("_ctext")


def _join_compiled(core: ModuleType, block: np.ndarray, tails: list[bytes], head: bytes) -> bytes:
    """Both dtypes through the compiled core: chunks of whole rows, on worker threads if there are several."""
    x = np.ascontiguousarray(block)
    rows, cols = x.shape
    lo, hi = positional_range32()
    per = max(1, _CHUNK // cols)
    if rows <= per or _WORKERS == 1:
        return bytes(core.join(x, tails, head, lo, hi))
    texts = executor(_WORKERS).map(lambda r: core.join(x[r : r + per], tails, head, lo, hi), range(0, rows, per))
    return b"".join(texts)


def _join32(block: np.ndarray, tails: list[bytes], head: bytes, trim: int) -> bytes:
    """float32 through the array code, in chunks of whole rows (or of one row), on worker threads if there are
    several; ``trim`` bytes are left off the end."""
    rows, cols = block.shape
    x = np.ascontiguousarray(block).reshape(-1)
    if cols <= _CHUNK:  # chunks of whole rows, which share one tiled layout of the tails
        per = max(1, _CHUNK // cols)
        layout = Tails.get(tails, min(per, rows))
        spans = [(r * cols, min(r + per, rows) * cols, 0) for r in range(0, rows, per)]
    else:  # pieces of one row
        layout = Tails.get(tails, 1)
        spans = [
            (r * cols + c, r * cols + min(c + _CHUNK, cols), c) for r in range(rows) for c in range(0, cols, _CHUNK)
        ]

    def run(k: int) -> tuple[np.ndarray, int, int]:
        lo, hi, col = spans[k]
        return format_chunk(x[lo:hi], layout, col, head if k == 0 else b"")

    run_all: Callable[..., Iterator[tuple[np.ndarray, int, int]]] = map
    if len(spans) > 1 and _WORKERS > 1:
        run_all = executor(_WORKERS).map
    parts = list(run_all(run, range(len(spans))))
    buf, start, stop = parts[-1]
    parts[-1] = buf, start, stop - trim
    text = b"".join([buf[start:stop].data for buf, start, stop in parts])
    give_back([buf for buf, _, _ in parts], 4 * _WORKERS)
    return text


def _join64(block: np.ndarray, tails: list[bytes], head: bytes) -> bytes:
    """float64: ``repr`` of each value (Python's shortest round-trip digits), joined in Python."""
    texts = [t.decode("latin-1") for t in tails]
    lines = [head.decode("latin-1")]
    if len(set(texts[:-1])) <= 1:  # one separator within rows (CSV): str.join
        within, end = texts[0] if len(texts) > 1 else "", texts[-1]
        lines.extend(within.join(map(float.__repr__, row)) + end for row in block.tolist())
    else:
        cells = [""] * (2 * len(texts))
        cells[1::2] = texts
        for row in block.tolist():
            cells[::2] = map(float.__repr__, row)
            lines.append("".join(cells))
    return "".join(lines).encode("latin-1")


def _join_each(block: np.ndarray, tails: list[bytes], head: bytes) -> bytes:
    """float32, one value at a time (about two microseconds each): for small blocks and very long separators."""
    parts = [head]
    for row in block.tolist():
        parts.extend(spell32(value).encode("ascii") + tail for value, tail in zip(row, tails, strict=True))
    return b"".join(parts)


_NOT_FINITE = "text formats cannot hold NaN or infinite values"


def _check(block: np.ndarray, finite: bool = True) -> None:
    """Refuse what the text formats cannot hold; ``finite=False`` leaves NaN and infinities to the compiled core,
    which refuses them itself."""
    if not isinstance(block, np.ndarray) or block.dtype not in TEXT_DTYPES:
        dtype = getattr(block, "dtype", type(block).__name__)
        raise FormatError(f"text formats hold float32 or float64 values, got {dtype}")
    if block.ndim != 2:
        raise FormatError(f"text formats write 2-D blocks of values, got shape {block.shape}")
    if finite and block.size and not np.isfinite(block).all():
        raise FormatError(_NOT_FINITE)


def join_rows(block: np.ndarray, *, seps: Sequence[bytes], suffix: bytes = b"", row_start: bytes = b"") -> bytes:
    """The text of a 2-D float32/float64 ``block``, each value spelled as the module describes.

    The result is, for each row in order, ``row_start`` and then, for each column ``j``, the value's text,
    ``suffix`` and ``seps[j]``. Nothing else is added: the last separator ends the row (``b"\\n"`` in CSV). A block
    without rows gives ``b""``, one without columns ``row_start`` once per row.

    Parameters
    ----------
    block : numpy.ndarray
        2-D float32 or float64 array, all values finite, any memory layout.
    seps : sequence of bytes
        One separator per column: ``len(seps) == block.shape[1]``.
    suffix : bytes, optional
        Written right after every value (``b"f"`` for C float literals).
    row_start : bytes, optional
        Written before the first value of every row.

    Returns
    -------
    bytes

    Raises
    ------
    FormatError
        If ``block`` is not a 2-D float32/float64 array, or holds a NaN or an infinity.
    ValueError
        If ``len(seps)`` differs from the number of columns.

    Notes
    -----
    With the compiled core (see the module docstring) both dtypes take a few tens of nanoseconds a value, spread
    over worker threads for large blocks. On the pure path float32 blocks are formatted with vectorised NumPy code,
    a few tens of nanoseconds per value, spread over worker threads for large blocks (blocks of up to 100 values go
    one value at a time, as do blocks with separators of more than 16 bytes). float64 blocks go through ``repr``
    per value: up to about a microsecond each for the 17-digit values of a sinusoidal table.

    Examples
    --------
    CSV rows:

    >>> block = np.array([[0.0, 1.0, 0.84147096], [-0.0, 1e-05, 3.4028235e38]], np.float32)
    >>> join_rows(block, seps=[b",", b",", b"\\n"])
    b'0.0,1.0,0.84147096\\n-0.0,1e-05,3.4028235e+38\\n'

    A C initialiser, two values per line:

    >>> join_rows(block, seps=[b", ", b",\\n     ", b"},\\n"], suffix=b"f", row_start=b"    {")
    b'    {0.0f, 1.0f,\\n     0.84147096f},\\n    {-0.0f, 1e-05f,\\n     3.4028235e+38f},\\n'

    float64 values are spelled as Python's ``repr``:

    >>> join_rows(np.array([[0.1, 1e16]]), seps=[b" ", b"\\n"])
    b'0.1 1e+16\\n'
    """
    core = _compiled()
    _check(block, finite=core is None)
    rows, cols = int(block.shape[0]), int(block.shape[1])
    if len(seps) != cols:
        raise ValueError(f"need one separator per column: {cols} columns, {len(seps)} separators")
    if rows == 0 or cols == 0:
        return bytes(row_start) * rows
    tails = [bytes(suffix) + bytes(sep) for sep in seps]
    if core is not None:
        try:
            return _join_compiled(core, block, tails, bytes(row_start))
        except ValueError as exc:
            if str(exc) != _NOT_FINITE:
                raise
            raise FormatError(_NOT_FINITE) from None
    # Every record is a value and its tail; row_start goes after the last tail of each row, and once in front.
    tails[-1] += row_start
    if block.dtype == np.float32 and block.size > _FEW and max(map(len, tails)) <= 16 and fits16(block):
        return _join32(block, tails, row_start, len(row_start))
    join = _join64 if block.dtype == np.float64 else _join_each
    text = join(block, tails, row_start)
    return text[: len(text) - len(row_start)]


def shortest(block: np.ndarray) -> Iterator[list[str]]:
    """Yield, row by row, the shortest round-trip text of each value of a 2-D float32/float64 ``block``.

    Raises
    ------
    FormatError
        If the block holds a NaN or an infinity, or is of another dtype.

    Examples
    --------
    >>> list(shortest(np.array([[0.0, 1.0], [1e-05, -0.0]], np.float32)))
    [['0.0', '1.0'], ['1e-05', '-0.0']]
    """
    _check(block)
    rows, cols = block.shape
    if cols == 0:
        yield from ([] for _ in range(rows))
        return
    text = join_rows(block, seps=[b" "] * (cols - 1) + [b"\n"]).decode("ascii")
    for line in text.splitlines():
        yield line.split(" ")
