"""CSV (``.csv``): one line per position, one column per dimension.

Spec: RFC 4180 (https://www.rfc-editor.org/rfc/rfc4180), with the choices below.

Layout written::

    d0,d1,...,d{D-1}          header row (left out with --no-header)
    0.0,1.0,0.0,1.0,...       row for position 0
    ...

- LF line ends (every CSV reader accepts them; RFC 4180's CRLF only makes diffs noisy), a final LF, no index
  column, no quoting (nothing needs it), UTF-8/ASCII.
- Every value is the shortest decimal that reads back to the identical float of the table's dtype and always holds
  a ``.`` or an exponent, so pandas and friends infer float columns (``1.0``, never ``1``).
- CSV carries no parameters or dtype: the table's own dtype decides the digits (float32 tables use float32's
  shortest digits); :func:`load` returns float64 values, which cast back to the written float32 exactly.

Only 2-D float32/float64 arrays of a single-array table can be written.

Reading (the file may be hostile: memory stays bounded by the table it declares, whatever the file holds):

- UTF-8 text with LF or CRLF line ends; a UTF-8 byte order mark at the start is skipped (then the header detection
  below applies as usual, so the first row of a BOM-prefixed file is not taken for a header);
- lines starting with ``#`` and blank lines are skipped; the first other line is a header, skipped, when its first
  cell is not a number; every other line is a row of numbers as Python's ``float`` reads them, in ASCII;
- refused: rows of different widths, a row of more than :data:`~.limits.MAX_COLUMNS` columns, a line longer than
  :data:`MAX_LINE` bytes, NaN and infinities, cells that are not numbers, text that is not UTF-8.

Two passes over the file. The first counts rows and columns on the raw bytes of each line, one line in memory at a
time, counting separators before a line is ever split (a row of ten million columns is refused without ten million
strings). Then ``rows x columns x 8`` bytes are claimed from the read's :class:`~posenc_cli.formats.limits.Budget`,
one float64 array is allocated, and the second pass parses each line into its row. Memory: the table, plus one line
and its cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ..errors import FormatError, SpecError
from ..table import Table
from ._blocks import row_blocks
from ._spell import decimal, element_name
from .limits import MAX_COLUMNS, Budget
from .options import WriteOptions

#: The longest line posenc reads: :data:`~.limits.MAX_COLUMNS` cells of 64 bytes (a float64's shortest round-trip
#: decimal takes at most 24).
MAX_LINE = MAX_COLUMNS * 64
#: The UTF-8 byte order mark some editors and spreadsheets put first.
BOM = b"\xef\xbb\xbf"


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the table's single 2-D array as CSV text to ``fp``."""
    array = table.array
    if array.ndim != 2:  # a request CSV cannot hold: a usage error, like a missing --part
        raise SpecError(
            f"CSV holds 2-D tables and {next(iter(table.arrays))!r} has shape {array.shape}: pick a 2-D array with "
            "--part (part= in the API), or write .npy, .npz, .h5 or C",
            param="part",
        )
    element = element_name(table)
    if "scale" in table.params:  # what an int8 table means travels with it, in a comment readers skip
        quantisation = f"# dtype={element} scale={table.params['scale']!r} zero_point={table.params['zero_point']}\n"
        fp.write(quantisation.encode("ascii"))
    if options.header:
        fp.write((",".join(f"d{j}" for j in range(array.shape[1])) + "\n").encode("ascii"))
    spell = decimal(element)
    seps = [b","] * (array.shape[1] - 1) + [b"\n"]
    for _, block in row_blocks(array, 1 << 20):
        fp.write(spell(block, seps, b""))


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a CSV of numbers (with or without a ``d0,d1,...`` header) as float64; ``FormatError`` otherwise.

    Examples
    --------
    >>> import io
    >>> load(io.BytesIO(b"\\xef\\xbb\\xbf1.0,2.0\\n3.0,4.0\\n")).array.tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    budget = budget or Budget()
    start = fp.tell()
    rows, width = _shape(fp)
    budget.claim(rows * width * 8, f"a {rows} x {width} CSV table")
    values = np.empty((rows, width), np.float64)
    fp.seek(start)
    _parse(fp, values)
    return Table("array", {"pe": values})


def _lines(fp: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """``(line number, line without its line end)`` for each line of ``fp``, the BOM left out."""
    number = 0
    while line := fp.readline(MAX_LINE + 2):
        number += 1
        if number == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        line = line[:-1] if line.endswith(b"\n") else line
        line = line[:-1] if line.endswith(b"\r") else line
        if len(line) > MAX_LINE:
            raise FormatError(f"CSV line {number} is longer than the {MAX_LINE} bytes posenc reads")
        yield number, line


def _data_lines(fp: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """The lines of ``fp`` that hold values: comments, blank lines and a header left out."""
    header_possible = True
    for number, line in _lines(fp):
        if line.startswith(b"#") or not line.strip():
            _check_text(line, number)
            continue
        if header_possible:
            header_possible = False
            if not _is_numeric(line.split(b",", 1)[0]):
                _check_text(line, number)
                continue
        yield number, line


def _check_text(line: bytes, number: int) -> None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"CSV is not UTF-8 text: line {number}: {exc}") from None


def _shape(fp: BinaryIO) -> tuple[int, int]:
    """Rows and columns of the values, counted on raw bytes (see the module docstring)."""
    rows = width = 0
    for number, line in _data_lines(fp):
        count = line.count(b",") + 1
        if count > MAX_COLUMNS:
            raise FormatError(f"CSV line {number} has {count} columns, more than the {MAX_COLUMNS} posenc reads")
        if rows and count != width:
            raise FormatError(f"CSV row {rows + 1} has {count} values, the first row has {width} (line {number})")
        rows, width = rows + 1, count
    if not rows:
        raise FormatError("CSV holds no rows of values")
    return rows, width


def _parse(fp: BinaryIO, values: np.ndarray) -> None:
    """Fill ``values`` with the rows :func:`_shape` counted."""
    rows, width = values.shape
    row = 0
    for number, line in _data_lines(fp):
        if row == rows or line.count(b",") + 1 != width:
            raise FormatError("the CSV file changed while posenc read it")
        cells = line.split(b",")
        try:
            values[row] = [float(cell) for cell in cells]
        except ValueError:
            bad = next(cell for cell in cells if not _is_numeric(cell))
            raise FormatError(f"CSV row {row + 1} (line {number}): {bad[:40]!r} is not a number") from None
        if not np.isfinite(values[row]).all():
            raise FormatError(f"CSV holds NaN or infinite values (row {row + 1}, line {number})")
        row += 1
    if row != rows:
        raise FormatError("the CSV file changed while posenc read it")


def _is_numeric(cell: bytes) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
