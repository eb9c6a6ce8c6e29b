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
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from ..errors import FormatError, SpecError
from ..table import Table
from ._blocks import row_blocks
from ._spell import decimal, element_name
from .limits import Budget
from .options import WriteOptions

#: The largest CSV posenc will parse, in bytes: protects ``load`` from exhausting memory on hostile input (tables
#: this large belong in .npy or .h5).
MAX_LOAD_BYTES = 1 << 31


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
    """Read a CSV of numbers (with or without a ``d0,d1,...`` header) as float64; ``FormatError`` otherwise."""
    data = fp.read(MAX_LOAD_BYTES + 1)
    if len(data) > MAX_LOAD_BYTES:
        raise FormatError(f"CSV file larger than {MAX_LOAD_BYTES} bytes; use .npy or .h5 for tables this big")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"CSV is not UTF-8 text: {exc}") from None
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    if lines and lines[0].strip() and not _is_numeric(lines[0].split(",")[0]):
        lines = lines[1:]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise FormatError("CSV holds no rows of values")
    width = lines[0].count(",") + 1
    values = np.empty((len(lines), width), np.float64)
    for i, line in enumerate(lines):
        cells = line.split(",")
        if len(cells) != width:
            raise FormatError(f"CSV row {i + 1} has {len(cells)} values, the first row has {width}")
        try:
            values[i] = [float(cell) for cell in cells]
        except ValueError as exc:
            raise FormatError(f"CSV row {i + 1}: {exc}") from None
    if not np.isfinite(values).all():
        raise FormatError("CSV holds NaN or infinite values")
    return Table("array", {"pe": values})


def _is_numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
