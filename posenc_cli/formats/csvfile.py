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
- Float tables carry no parameters or dtype: the table's own dtype decides the digits (float32 tables use
  float32's shortest digits); :func:`load` returns float64 values, which cast back to the written float32 exactly.
- Quantised tables (the fixed-point types q31, q15, q7 and ``fixed<T>.<F>``, and affine int8) are written as their
  integer codes, and plain integer tables (int8 without a ``scale``, int16, int32, int64: the values themselves) as
  their integers, after a first line that says what they are, a comment other CSV readers skip
  (``pd.read_csv(path, comment="#")``)::

      # dtype=q15
      # dtype=fixed18.16
      # dtype=int8 scale=0.0078125 zero_point=-3
      # dtype=int16

  (``scale`` is Python's shortest ``repr`` of the float, ``zero_point`` an integer); :func:`load` reads such a file
  back as the integers with those parameters. The line is written when the table's ``dtype`` parameter names the
  array's element type (:func:`~posenc_cli.formats.text.spell.element_name`); an integer array of a table without one
  (a bare ``.npy`` read back) is written as its integers without it.

Only 2-D arrays of a single-array table can be written (a 3-D one is refused: pick a 2-D part, or write .npy, .npz,
.h5 or C).

Reading (the file may be hostile: memory stays bounded by the table it declares, whatever the file holds):

- UTF-8 text with LF or CRLF line ends; a UTF-8 byte order mark at the start is skipped (then the header detection
  below applies as usual, so the first row of a BOM-prefixed file is not taken for a header);
- lines starting with ``#`` and blank lines are skipped; the first other line is a header, skipped, when its first
  cell is not a number; every other line is a row of numbers as Python's ``float`` reads them, in ASCII;
- the quantisation line: a first line (after the byte order mark) that starts with ``#``, then ``dtype`` and ``=``
  (any case, spaces allowed around ``dtype``) claims to say what the values are, and is parsed strictly: ASCII,
  exactly ``# `` and then ``key=value`` fields separated by one space, each key once, ``dtype`` one of
  :data:`QUANTISED` or a valid ``fixed<T>.<F>``, and the other keys exactly those it takes (the fixed-point types,
  ``int16``, ``int32`` and ``int64`` none; ``int8`` either none, the plain integers, or both ``scale``, a finite
  decimal number greater than 0, and ``zero_point``, an integer in [-128, 127], affine int8). Anything else in such
  a line is refused, and so is such a line anywhere but first. With it, every value must be an integer
  (``[+-]digits``, nothing around it) in the range of the dtype (q15 and int16: [-32768, 32767]; q7 and int8: [-128,
  127]; int32, int64: theirs; a ``fixed<T>.<F>``: the ``T``-bit range, [-131072, 131071] for ``fixed18.16``, though
  an int32 stores it), and the table holds them (``int8`` to ``int64``) with the parameters ``dtype`` (and
  ``scale``, ``zero_point``); without it, float64 values and no parameters;
- refused: rows of different widths, a row of more than :data:`~.limits.MAX_COLUMNS` columns, a line longer than
  :data:`MAX_LINE` bytes, NaN and infinities, cells that are not numbers, text that is not UTF-8.

Two passes over the file. The first counts rows and columns on the raw bytes of each line, one line in memory at a
time, counting separators before a line is ever split (a row of ten million columns is refused without ten million
strings). Then ``rows x columns x item size`` bytes (8 for float64) are claimed from the read's
:class:`~posenc_cli.formats.limits.Budget`, one array is allocated, and the second pass parses each line into its
row. Memory: the table, plus one line and its cells.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ..dtypes import FIXED_SPELLING, ElementType, code_range, fixed_format
from ..errors import FormatError, SpecError
from ..table import Param, Table
from ._blocks import row_blocks
from .limits import MAX_COLUMNS, Budget
from .options import WriteOptions
from .text.spell import INTEGERS, decimal, element_name, is_affine

#: The longest line posenc reads: :data:`~.limits.MAX_COLUMNS` cells of 64 bytes (a float64's shortest round-trip
#: decimal takes at most 24).
MAX_LINE = MAX_COLUMNS * 64
#: The UTF-8 byte order mark some editors and spreadsheets put first.
BOM = b"\xef\xbb\xbf"

#: The element types CSV holds as integers behind a quantisation line: their storage and the keys the line takes
#: besides ``dtype`` (int8 takes these or none: the plain integers).
QUANTISED: dict[str, tuple[np.dtype, tuple[str, ...]]] = {
    "q31": (np.dtype(np.int32), ()),
    "q15": (np.dtype(np.int16), ()),
    "q7": (np.dtype(np.int8), ()),
    "int8": (np.dtype(np.int8), ("scale", "zero_point")),
    **{name: (dtype, ()) for name, dtype in INTEGERS.items() if name != "int8"},
}

#: A line that claims to be the quantisation line (and is then parsed strictly).
_CLAIMS = re.compile(rb"#\s*dtype\s*=", re.IGNORECASE)
_KEY_VALUE = re.compile(r"([a-z_]+)=(\S+)\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}\Z")
_CODES = re.compile(rb"[+-]?[0-9]{1,20}(?:,[+-]?[0-9]{1,20})*\Z")


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the table's single 2-D array as CSV text to ``fp``."""
    array = table.array
    if array.ndim != 2:  # a request CSV cannot hold: a usage error, like a missing --part
        raise SpecError(
            f"CSV holds 2-D tables and {next(iter(table.arrays))!r} has shape {array.shape}: pick a 2-D array with "
            "--part (part= in the API), or write .npy, .npz, .h5 or C",
            param="part",
        )
    element = element_name(table, next(iter(table.arrays)))
    quantisation = _quantisation_line(table, element)
    if quantisation is not None:  # what the codes mean travels with them, in a comment readers skip
        fp.write(quantisation.encode("ascii"))
    if options.header:
        fp.write((",".join(f"d{j}" for j in range(array.shape[1])) + "\n").encode("ascii"))
    spell = decimal(element)
    seps = [b","] * (array.shape[1] - 1) + [b"\n"]
    for _, block in row_blocks(array, 1 << 20):
        fp.write(spell(block, seps, b""))


def _quantisation_line(table: Table, element: str) -> str | None:
    """The first line of a quantised or plain integer table's CSV (see the module docstring), ``None`` for any other
    table."""
    if _quantised(element) is None or table.params.get("dtype") != element:
        return None
    if not (element == "int8" and is_affine(table.params)):
        return f"# dtype={element}\n"
    return f"# dtype={element} scale={table.params['scale']!r} zero_point={table.params.get('zero_point', 0)}\n"


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a CSV of numbers (with or without a ``d0,d1,...`` header) as float64, or posenc's quantised or integer
    CSV as its integers and parameters; ``FormatError`` otherwise.

    Examples
    --------
    >>> import io
    >>> load(io.BytesIO(b"\\xef\\xbb\\xbf1.0,2.0\\n3.0,4.0\\n")).array.tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> table = load(io.BytesIO(b"# dtype=int8 scale=0.5 zero_point=-3\\nd0,d1\\n-3,127\\n"))
    >>> table.array.dtype.name, table.array.tolist(), dict(table.params)
    ('int8', [[-3, 127]], {'dtype': 'int8', 'scale': 0.5, 'zero_point': -3})
    >>> table = load(io.BytesIO(b"# dtype=int32\\n-2147483648,7\\n"))
    >>> table.array.dtype.name, table.array.tolist(), dict(table.params)
    ('int32', [[-2147483648, 7]], {'dtype': 'int32'})
    """
    budget = budget or Budget()
    start = fp.tell()
    params = _quantisation(fp)
    fp.seek(start)
    rows, width = _shape(fp)
    dtype = _storage(str(params["dtype"])) if params else np.dtype(np.float64)
    codes = f" of {params['dtype']} {_what(params)}s" if params else ""
    budget.claim(rows * width * dtype.itemsize, f"a {rows} x {width} CSV table{codes}")
    values = np.empty((rows, width), dtype)
    fp.seek(start)
    _parse(fp, values, (_what(params), str(params["dtype"])) if params else None)
    return Table("array", {"pe": values}, params)


def _quantised(name: object) -> tuple[np.dtype, tuple[str, ...]] | None:
    """The storage and the extra keys of an element type CSV holds as integers (:data:`QUANTISED`, or any valid
    ``fixed<T>.<F>``: its storage, no keys); ``None`` for any other name."""
    if isinstance(name, str) and name in QUANTISED:
        return QUANTISED[name]
    try:
        return (ElementType(str(name)).storage, ()) if fixed_format(name) is not None else None
    except SpecError:
        return None


def _storage(name: str) -> np.dtype:
    known = _quantised(name)
    assert known is not None  # the quantisation line was read by _quantisation
    return known[0]


def _what(params: dict[str, Param]) -> str:
    """What each integer of a CSV with these parameters is: a ``code`` (quantised) or a ``value`` (plain)."""
    return "code" if fixed_format(params["dtype"]) is not None or is_affine(params) else "value"


def _quantisation(fp: BinaryIO) -> dict[str, Param]:
    """The parameters the quantisation line gives (``{}`` when the first line is not one); ``FormatError`` for a
    line that claims to be one and is not exactly what posenc writes."""
    first = next(_lines(fp), None)
    if first is None or not _CLAIMS.match(first[1]):
        return {}
    line = first[1]

    def refuse(why: str) -> FormatError:
        return FormatError(f"CSV line 1 {line[:120]!r} is not a quantisation line posenc reads: {why}")

    if not line.startswith(b"# ") or not line.isascii():
        raise refuse("it must be ASCII, '# ' then key=value fields")
    fields: dict[str, str] = {}
    for field in line[2:].decode("ascii").split(" "):
        match = _KEY_VALUE.match(field)
        if match is None:
            raise refuse(f"{field[:40]!r} is not key=value (one space between fields)")
        key, value = match.groups()
        if key in fields:
            raise refuse(f"{key} is given twice")
        fields[key] = value
    name = fields.pop("dtype", None)
    known = _quantised(name)
    if name is None or known is None:
        shown = "no dtype" if name is None else f"dtype {name[:40]!r}"
        raise refuse(f"{shown}; the line names {', '.join(QUANTISED)} or {FIXED_SPELLING}")
    wanted = known[1]
    if set(fields) != set(wanted) and not (name == "int8" and not fields):
        extra = sorted(set(fields) - set(wanted))
        told = f"the key {extra[0][:40]!r} is not one of its" if extra else "it lacks one of its"
        raise refuse(f"{told} keys ({name} takes {', '.join(wanted) or 'none besides dtype'})")
    params: dict[str, Param] = {"dtype": name}
    if name == "int8" and fields:
        scale, zero_point = fields["scale"], fields["zero_point"]
        if not _DECIMAL.match(scale) or not math.isfinite(float(scale)) or float(scale) <= 0:
            raise refuse(f"scale {scale[:40]!r} is not a finite decimal number greater than 0")
        if not _INTEGER.match(zero_point) or not -128 <= int(zero_point) <= 127:
            raise refuse(f"zero_point {zero_point[:40]!r} is not an integer in [-128, 127]")
        params.update(scale=float(scale), zero_point=int(zero_point))
    return params


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
            if number > 1 and _CLAIMS.match(line):
                raise FormatError(
                    f"CSV line {number} {line[:120]!r} is a quantisation line, which posenc reads only as the first "
                    "line"
                )
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


def _parse(fp: BinaryIO, values: np.ndarray, codes: tuple[str, str] | None) -> None:
    """Fill ``values`` with the rows :func:`_shape` counted (``codes``: what the integers are, ``("code", "q15")``)."""
    rows, width = values.shape
    row = 0
    for number, line in _data_lines(fp):
        if row == rows or line.count(b",") + 1 != width:
            raise FormatError("the CSV file changed while posenc read it")
        if codes is not None:
            _parse_codes(line, values, row, number, codes)
            row += 1
            continue
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


def _parse_codes(line: bytes, values: np.ndarray, row: int, number: int, codes: tuple[str, str]) -> None:
    """One row of the integers ``codes`` says (``("code", "q15")``, ``("value", "int32")``), each checked against the
    storage's range (Python integers: exact at any length)."""
    noun, name = codes
    where = f"CSV row {row + 1} (line {number})"
    cells = line.split(b",")
    if not _CODES.match(line):
        bad = next((cell for cell in cells if not _CODES.match(cell)), line)
        raise FormatError(f"{where}: {bad[:40]!r} is not an integer {noun} of {name}")
    ints = [int(cell) for cell in cells]
    least, most = code_range(name) or (int(np.iinfo(values.dtype).min), int(np.iinfo(values.dtype).max))
    low, high = min(ints), max(ints)
    if low < least or high > most:
        bad_value = low if low < least else high
        raise FormatError(f"{where}: {bad_value} is outside the {noun}s of {name}, [{least}, {most}]")
    values[row] = ints


def _is_numeric(cell: bytes) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
