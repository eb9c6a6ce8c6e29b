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

Sidecar: a table whose array's element type ``.npy`` cannot name (bfloat16 stored as ``<u2`` bit patterns, the
fixed-point types q31, q15, q7 and ``fixed<T>.<F>``, affine int8 with its scale and zero point; decided for the
array written, :func:`~posenc_cli.dtypes.element_of`: the int16 ``index`` of a table whose ``dtype`` is
int16 needs none, and neither do plain int8, the other integers and the floats) also gets ``<stem>.json`` beside it:
canonical JSON (sorted keys, two-space indent, a final newline) ``{"dtype": ..., "generator": "posenc X.Y.Z",
"kind": ..., "params": {...}, "storage": "<u2"}``.
:func:`load_sidecar` merges it back (``posenc_cli.load`` does when the file is there).

Reading (the file may be hostile; posenc parses the header itself, never with ``pickle`` or ``eval``):

- versions 1.0, 2.0 and 3.0 (a 2- or 4-byte header length; 3.0's header is UTF-8); any other version is refused;
- a header of at most :data:`MAX_HEADER` bytes that is exactly a Python dict literal with the keys ``descr``,
  ``fortran_order`` (``True`` or ``False``) and ``shape`` (a tuple of at most :data:`~.limits.MAX_DIMS` non-negative
  integers, not booleans, that numpy can hold), ending in a newline: a length field that lies short or long makes it
  something else, and is refused;
- ``descr`` one of :data:`READS` (booleans, integers, IEEE floats, either byte order); objects (pickles), strings,
  structured, complex and datetime types are refused;
- exactly the declared data after the header: fewer bytes is a truncated file, more is refused (trailing bytes).

The array's size (shape times item size, Python integers) is claimed from the read's
:class:`~posenc_cli.formats.limits.Budget` before it is allocated (twice for ``fortran_order``, copied to C order);
the data is then read :data:`CHUNK` bytes at a time into memory allocated once, so a file costs its declared size and
nothing more. The sidecar is read like posenc metadata everywhere (:func:`parse_meta`): at most
:data:`~.limits.MAX_METADATA` bytes of UTF-8 JSON nesting at most :data:`~.limits.MAX_NESTING` levels, read strictly
(:func:`~.limits.read_json`: no ``NaN`` or ``Infinity``, no key twice), an object with a string ``kind`` and
``params`` of finite numbers, 64-bit integers, strings and booleans; its ``storage``, when given, must be the array's.
The helpers here (:func:`read_header`, :func:`claim`, :func:`read_data`, :func:`read_array`, :func:`nbytes`) serve
the ``.npz`` and ``.safetensors`` readers too.

:func:`stream` (``posenc inspect`` and ``verify``) checks and claims the same, and allocates none of it: the array is
a :class:`~posenc_cli.table.FileArray` that reads the values it is asked for at their offset in the file
(:func:`array_at`, which the ``.safetensors`` and ``.h5`` readers use too), so the memory is a block of them. An
array in ``fortran_order`` cannot be read in C-order parts of bounded size (one row is spread over the whole file):
:func:`stream` reads it whole, as :func:`load` does.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Protocol

import numpy as np

from .._version import __version__
from ..dtypes import element_of, fixed_format
from ..errors import FormatError
from ..table import FileArray, Param, Table
from ._blocks import raw_bytes, row_blocks
from .limits import MAX_DIMS, MAX_METADATA, Budget, check_params, read_json
from .options import WriteOptions

MAGIC = b"\x93NUMPY\x01\x00"
#: Data offset alignment: numpy's own choice (ARRAY_ALIGN), so memory-mapped loads are aligned for any dtype and
#: for 64-byte SIMD loads.
ALIGN = 64
#: The largest header posenc will read: numpy's own default ``max_header_size``, far above any 2-D header.
MAX_HEADER = 10_000
#: NPY versions posenc reads, with the width of their header length field.
VERSIONS = {(1, 0): 2, (2, 0): 4, (3, 0): 4}
#: The element types posenc reads from a file, in numpy's ``descr`` spelling (any byte order).
READS = "b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8"
_DESCR = re.compile(r"[<>|=]?(b1|[iu][1248]|f[248])\Z")
#: Bytes read at a time: a compressed member inflates at most this much before posenc sees where it stands.
CHUNK = 1 << 20
#: numpy's own limit: the bytes of an array's non-zero dimensions must fit an ``intp``.
_MAX_NUMPY = int(np.iinfo(np.intp).max)


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
        fp.write(raw_bytes(array, dtype))
        return
    for _, block in row_blocks(array):
        fp.write(raw_bytes(block, dtype))


#: Element types whose meaning the .npy dtype does not carry (int8: the affine one, with a ``scale``).
NEEDS_SIDECAR = ("bfloat16", "q15", "q7", "int8")


def needs_sidecar(table: Table) -> bool:
    """Whether ``table`` (of one array) needs a ``.json`` sidecar to be understood (see the module docstring)."""
    element = element_of(table.params, next(iter(table.arrays.values())).dtype)
    if fixed_format(element) is not None:
        return True
    return element in NEEDS_SIDECAR and (element != "int8" or "scale" in table.params)


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


# ------------------------------------------------------------------------------------------------ posenc metadata
def parse_meta(data: bytes, what: str) -> tuple[str, dict[str, Param], dict[str, Any]]:
    """The ``kind``, ``params`` and whole object of posenc's JSON metadata ``data`` (an ``.npy`` sidecar, an
    ``.npz``'s record, a ``.safetensors`` ``"posenc"`` entry, a ROM image's metadata line); ``FormatError`` naming
    ``what`` otherwise.

    ``data`` is read by :func:`~.limits.read_json` (no ``NaN`` or ``Infinity``, no key twice, at most
    :data:`~.limits.MAX_METADATA` bytes, nesting at most :data:`~.limits.MAX_NESTING` levels); ``params`` must pass
    :func:`~.limits.check_params` (finite numbers, 64-bit integers, strings, booleans).

    Examples
    --------
    >>> parse_meta(b'{"kind": "rope", "params": {"seq_len": 4}}', "sidecar")[:2]
    ('rope', {'seq_len': 4})
    """
    meta = read_json(data, what)
    if not isinstance(meta, dict):
        raise FormatError(f"the {what} must be a JSON object, found {type(meta).__name__}")
    kind, params = meta.get("kind"), meta.get("params")
    if not isinstance(kind, str) or not isinstance(params, dict):
        raise FormatError(f"the {what} must hold a string 'kind' and an object 'params'")
    return kind, check_params(params, f"the {what}"), meta


def load_sidecar(table: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """``table`` with the kind and parameters of its sidecar; ``FormatError`` when the sidecar is not one."""
    kind, params, meta = parse_meta(fp.read(MAX_METADATA + 1), "posenc .json sidecar")
    storage = meta.get("storage")
    found = table.array.dtype.newbyteorder("<").str
    if storage is not None and storage != found:
        raise FormatError(f"the posenc .json sidecar describes {storage!r} values, the .npy holds {found!r}")
    return Table(kind, table.arrays, params)


# ------------------------------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class Header:
    """What an NPY header declares, checked: ``size`` is the bytes of the whole preamble (magic, length, dict)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    size: int

    @property
    def nbytes(self) -> int:
        """The bytes of data that must follow the header."""
        return math.prod(self.shape) * self.dtype.itemsize


def nbytes(shape: Sequence[object], itemsize: int, what: str) -> int:
    """The bytes of an array of ``shape`` (Python integers: no overflow); ``FormatError`` naming ``what`` unless the
    shape has at most :data:`~.limits.MAX_DIMS` non-negative integer (not boolean) dimensions numpy can hold.

    Examples
    --------
    >>> nbytes([16, 8], 4, "array 'pe'")
    512
    """
    if len(shape) > MAX_DIMS:
        raise FormatError(f"{what} has {len(shape)} dimensions, more than the {MAX_DIMS} posenc reads")
    dims = [n for n in shape if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if len(dims) != len(shape):
        raise FormatError(f"{what}: a shape must hold non-negative integers, got {list(shape)!r}")
    if math.prod(n for n in dims if n) * itemsize > _MAX_NUMPY:
        raise FormatError(f"{what}: shape {tuple(dims)} is larger than numpy can hold")
    return math.prod(dims) * itemsize


class Reader(Protocol):
    """What the readers here read from: a file, a ZIP member (:mod:`~posenc_cli.formats.npz`), anything whose
    ``read(n)`` gives the next ``n`` bytes (fewer only where the data ends)."""

    def read(self, n: int, /) -> bytes: ...


def _read_exact(fp: Reader, size: int, what: str) -> bytes:
    data = fp.read(size)
    if len(data) != size:
        raise FormatError(f"truncated .npy file: it ends inside the {what}")
    return data


def read_header(fp: Reader) -> Header:
    """Read and check an NPY preamble from ``fp`` (no seeking: ``fp`` may be a ZIP member); ``FormatError`` unless
    it is one posenc reads (see the module docstring). ``fp`` is left at the first byte of data."""
    magic = fp.read(6)
    if magic != MAGIC[:6]:
        raise FormatError(f"not a valid .npy file: it starts with {magic[:8]!r}, not the NPY magic {MAGIC[:6]!r}")
    major, minor = _read_exact(fp, 2, "version")
    width = VERSIONS.get((major, minor))
    if width is None:
        raise FormatError(f"not a valid .npy file: NPY format version {major}.{minor}; posenc reads 1.0, 2.0 and 3.0")
    length = int.from_bytes(_read_exact(fp, width, "header length"), "little")
    if length > MAX_HEADER:
        raise FormatError(
            f"not a valid .npy file: the header claims {length} bytes, more than the {MAX_HEADER} posenc reads"
        )
    fields = _header_fields(_read_exact(fp, length, "header"), "utf-8" if major == 3 else "latin1")
    shape, fortran = fields["shape"], fields["fortran_order"]
    dtype = _dtype(fields["descr"])
    if not isinstance(shape, tuple):
        raise FormatError(f"not a valid .npy file: its shape must be a tuple, got {shape!r}")
    if not isinstance(fortran, bool):
        raise FormatError(f"not a valid .npy file: fortran_order must be True or False, got {fortran!r}")
    nbytes(shape, dtype.itemsize, "the .npy array")
    return Header(shape, dtype, fortran, 6 + 2 + width + length)


def _header_fields(raw: bytes, encoding: str) -> dict[str, object]:
    """The header's dict, exactly ``descr``, ``fortran_order`` and ``shape``, parsed as a literal (never evaluated)."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        raise FormatError("not a valid .npy file: its version 3.0 header is not UTF-8") from None
    if not text.endswith("\n"):
        raise FormatError(
            f"not a valid .npy file: its header does not end with a newline (does its length field, {len(raw)}, lie?)"
        )
    try:
        fields = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise FormatError("not a valid .npy file: its header is not a Python dict literal") from None
    if not isinstance(fields, dict) or set(fields) != {"descr", "fortran_order", "shape"}:
        keys = sorted(map(repr, fields)) if isinstance(fields, dict) else type(fields).__name__
        raise FormatError(f"not a valid .npy file: its header must hold descr, fortran_order and shape, found {keys}")
    return fields


def _dtype(descr: object) -> np.dtype:
    if isinstance(descr, str) and _DESCR.match(descr):
        return np.dtype(descr)
    if isinstance(descr, str) and descr.lstrip("<>|=") == "O":
        name = "object"
    else:
        name = ("structured " if isinstance(descr, list) else "") + repr(descr)[:80]
    raise FormatError(f"a .npy table must hold numbers ({READS}), this one holds dtype {name}")


def read_array(fp: Reader, shape: tuple[int, ...], dtype: np.dtype, what: str) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` filled from the next bytes of ``fp`` and returned in native byte order.

    The memory is allocated once and filled :data:`CHUNK` bytes at a time (claim it from the budget first);
    ``FormatError`` naming ``what`` when ``fp`` ends early.
    """
    return fill(np.empty(shape, dtype), fp.read, what)


def fill(out: np.ndarray, read: Callable[[int], bytes], what: str) -> np.ndarray:
    """``out`` (C-contiguous) filled from ``read(n)``, which returns at most ``n`` bytes, :data:`CHUNK` at a time,
    then in native byte order; ``FormatError`` naming ``what`` when ``read`` ends early."""
    flat = out.reshape(-1).view(np.uint8).data
    done = 0
    while done < len(flat):
        piece = read(min(CHUNK, len(flat) - done))
        if not piece:
            raise FormatError(f"truncated: {what} needs {len(flat)} bytes of data, found {done}")
        flat[done : done + len(piece)] = piece
        done += len(piece)
    if not out.dtype.isnative:
        out = out.byteswap(inplace=True).view(out.dtype.newbyteorder("="))
    return out


def array_at(fp: IO[bytes], offset: int, shape: tuple[int, ...], dtype: np.dtype, what: str) -> FileArray:
    """The C-order array of ``shape`` and ``dtype`` whose bytes start at byte ``offset`` of ``fp`` (a seekable file
    whose size the caller has checked), as a :class:`~posenc_cli.table.FileArray`: each read seeks to the values it
    wants and reads those, so several arrays (and h5py) may share ``fp``.

    Examples
    --------
    >>> import io
    >>> stored = array_at(io.BytesIO(b"xx" + np.arange(4, dtype=">i2").tobytes()), 2, (2, 2), np.dtype(">i2"), "a")
    >>> stored.flat(1, 4).tolist(), stored.dtype.str == np.dtype("=i2").str
    ([1, 2, 3], True)
    """
    itemsize = dtype.itemsize

    def flat(start: int, stop: int) -> np.ndarray:
        fp.seek(offset + start * itemsize)
        return fill(np.empty(max(0, stop - start), dtype), fp.read, what)

    return FileArray(shape, dtype.newbyteorder("="), flat)


def claim(budget: Budget, head: Header, what: str) -> None:
    """Claim from ``budget`` the memory :func:`read_data` takes for the array ``head`` declares."""
    if head.fortran_order:
        budget.claim(2 * head.nbytes, f"{what} (Fortran order, copied to C order)")
    else:
        budget.claim(head.nbytes, what)


def read_data(fp: Reader, head: Header, what: str) -> np.ndarray:
    """The array ``head`` declares, read from ``fp`` in C order (:func:`claim` its memory first)."""
    if head.fortran_order:
        return np.ascontiguousarray(read_array(fp, head.shape[::-1], head.dtype, what).T)
    return read_array(fp, head.shape, head.dtype, what)


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read an NPY file (see the module docstring for what is read and refused); ``FormatError`` when it is not one.

    Examples
    --------
    >>> import io
    >>> data = header((2,), np.dtype("<f4")) + np.ones(2, "<f4").tobytes()
    >>> load(io.BytesIO(data)).array.tolist()
    [1.0, 1.0]
    """
    head, start = _checked(fp, budget or Budget())
    return Table("array", {"pe": read_data(fp, head, "array 'pe'")})


@contextlib.contextmanager
def stream(fp: BinaryIO, budget: Budget | None = None) -> Iterator[Table]:
    """The table of :func:`load`, checked and claimed as :func:`load` does, its array read from ``fp`` (which must
    stay open) a block at a time as it is used: a :class:`~posenc_cli.table.FileArray` (read whole in
    ``fortran_order``: see the module docstring).

    Examples
    --------
    >>> import io
    >>> data = header((2,), np.dtype("<f4")) + np.ones(2, "<f4").tobytes()
    >>> with stream(io.BytesIO(data)) as table:
    ...     table.array.flat(1, 2).tolist()
    [1.0]
    """
    head, start = _checked(fp, budget or Budget())
    if head.fortran_order or not head.shape:
        yield Table("array", {"pe": read_data(fp, head, "array 'pe'")})
        return
    yield Table("array", {"pe": array_at(fp, start, head.shape, head.dtype, "array 'pe'")})


def _checked(fp: BinaryIO, budget: Budget) -> tuple[Header, int]:
    """The header of the .npy in ``fp``, checked against the file's size and claimed from ``budget``, and where
    its data starts (``fp`` is left there)."""
    head = read_header(fp)
    start = fp.tell()
    have = fp.seek(0, 2) - start
    if have < head.nbytes:  # checked before reading, so a header that claims terabytes costs nothing
        raise FormatError(f"truncated .npy file: the header promises {head.nbytes} bytes of data, found {have}")
    if have > head.nbytes:
        raise FormatError(f"the .npy file has {have - head.nbytes} bytes after the {head.nbytes} its header declares")
    claim(budget, head, "array 'pe'")
    fp.seek(start)
    return head, start
