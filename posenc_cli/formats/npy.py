"""NumPy ``.npy``: one array, NPY format version 1.0, little-endian, C order.

Spec: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html

Layout written::

    b"\\x93NUMPY" 0x01 0x00 <uint16 LE header length>
    "{'descr': '<f4', 'fortran_order': False, 'shape': (seq_len, d_model), }" + spaces + "\\n"
    raw little-endian values, row after row

The header is padded with spaces so that the data starts on a multiple of :data:`ALIGN` bytes. posenc builds the header
itself instead of calling ``numpy.lib.format``: numpy's padding rules changed between releases (extra room for shape
growth), and posenc promises the same bytes for the same table whatever numpy is installed. ``numpy.load`` with
``allow_pickle=False`` reads the file; so does every NPY reader, since this is the plainest form of the format.

Round trip: the array's values, dtype and shape. ``.npy`` carries no parameters: :func:`load` returns a table of kind
``"array"`` whose single array is named ``"pe"``.

Sidecar: a table whose element type ``.npy`` cannot name (bfloat16 stored as ``<u2`` bit patterns, q15, q7, int8
with its scale and zero point) also gets ``<stem>.json`` beside it: canonical JSON (sorted keys, two-space indent, a
final newline) ``{"dtype": ..., "generator": "posenc X.Y.Z", "kind": ..., "params": {...}, "storage": "<u2"}``.
:func:`load_sidecar` merges it back (``posenc_cli.load`` does when the file is there).
"""

from __future__ import annotations

import json
import math
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Table
from ._blocks import row_blocks
from .limits import Budget
from .options import WriteOptions

MAGIC = b"\x93NUMPY\x01\x00"
#: Data offset alignment: numpy's own choice (ARRAY_ALIGN), so memory-mapped loads are aligned for any dtype and
#: for 64-byte SIMD loads.
ALIGN = 64
#: The largest header posenc will read: far above any 2-D header, far below anything that hurts.
MAX_HEADER = 10_000


def header(shape: tuple[int, ...], dtype: np.dtype) -> bytes:
    """The complete NPY 1.0 preamble (magic, length, padded dict) for a C-order array.

    Examples
    --------
    >>> len(header((16, 8), np.dtype("<f4")))
    128
    """
    descr = np.dtype(dtype).newbyteorder("<").str
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple(int(n) for n in shape)!r}, }}"
    pad = -(len(MAGIC) + 2 + len(text) + 1) % ALIGN
    body = (text + " " * pad + "\n").encode("latin1")
    return MAGIC + len(body).to_bytes(2, "little") + body


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the table's single array to ``fp`` as NPY 1.0, block by block."""
    array = table.array
    dtype = array.dtype.newbyteorder("<")
    fp.write(header(array.shape, dtype))
    if array.ndim == 0:
        fp.write(np.ascontiguousarray(array, dtype).tobytes())
        return
    for _, block in row_blocks(array):
        fp.write(np.ascontiguousarray(block, dtype).tobytes())


#: Element types whose meaning the .npy dtype does not carry.
NEEDS_SIDECAR = ("bfloat16", "q15", "q7", "int8")


def needs_sidecar(table: Table) -> bool:
    """Whether ``table`` needs a ``.json`` sidecar to be understood (see the module docstring)."""
    return table.params.get("dtype") in NEEDS_SIDECAR


def dump_sidecar(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.json`` sidecar of an ``.npy``."""
    meta = {
        "dtype": table.params["dtype"],
        "generator": f"posenc {__version__}",
        "kind": table.kind,
        "params": dict(table.params),
        "storage": table.array.dtype.newbyteorder("<").str,
    }
    fp.write((json.dumps(meta, sort_keys=True, indent=2, allow_nan=False) + "\n").encode("utf-8"))


def load_sidecar(table: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """``table`` with the kind and parameters of its sidecar; ``FormatError`` when the sidecar is not one."""
    try:
        meta = json.loads(fp.read(1 << 20).decode("utf-8"))
        kind, params = str(meta["kind"]), dict(meta["params"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise FormatError(f"not a posenc .json sidecar: {exc}") from None
    if not all(isinstance(v, (int, float, str, bool)) for v in params.values()):
        raise FormatError("not a posenc .json sidecar: parameters must be numbers or strings")
    return Table(kind, table.arrays, params)


def _check_header_length(fp: BinaryIO, version: tuple[int, int]) -> None:
    """Refuse a header longer than :data:`MAX_HEADER` from its length field alone (then rewind to it)."""
    width = 2 if version == (1, 0) else 4
    field = fp.read(width)
    fp.seek(-len(field), 1)
    if len(field) == width:
        length = int.from_bytes(field, "little")
        if length > MAX_HEADER:
            raise ValueError(f"the header claims {length} bytes, more than the {MAX_HEADER} posenc reads")


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read an NPY file (any version numpy reads) without ever unpickling; ``FormatError`` when it is not one."""
    try:
        version = np.lib.format.read_magic(fp)
        _check_header_length(fp, version)  # numpy reads the claimed length before it checks it
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(fp, max_header_size=MAX_HEADER)
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise FormatError(f"not a valid .npy file: {exc}") from None
    if dtype.hasobject or dtype.kind not in "fiub":
        raise FormatError(f"a .npy table must hold numbers, this one holds dtype {dtype}")
    need = math.prod(shape) * dtype.itemsize
    start = fp.tell()
    have = fp.seek(0, 2) - start
    if have < need:
        # Checked before reading, so a header that claims terabytes costs nothing.
        raise FormatError(f"truncated .npy file: the header promises {need} bytes of data, found {have}")
    fp.seek(start)
    data = fp.read(need)
    array = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
    return Table("array", {"pe": array.astype(dtype.newbyteorder("="), order="C")})
