"""Hugging Face ``.safetensors``: every array of a table and its parameters, readable by ``safetensors.safe_open``.

Spec: https://github.com/huggingface/safetensors#format (https://huggingface.co/docs/safetensors/).

Layout written::

    <uint64 LE N>
    N bytes of JSON, padded with spaces so that N is a multiple of 8:
    {"__metadata__":{"posenc":"<meta>"},"pe":{"data_offsets":[0,512],"dtype":"F32","shape":[16,8]}}
    the raw little-endian C-order values of each array, back to back, no gaps

The header is canonical JSON (sorted keys, no spaces, ASCII only). ``<meta>`` is the one metadata entry,
``"posenc"``: the canonical JSON string ``{"generator":"posenc X.Y.Z","kind":...,"params":{...}}`` (the content of
the ``.npz``'s ZIP comment). The data follows the table's order, except that arrays of wider elements come first
(a stable sort by element size; the reference writer also orders by alignment): with the header padded to 8 bytes,
every array then starts on a multiple of its element size, so a memory-mapped reader can use it in place. For a
table whose arrays all have one element size the order is exactly the table's; a table of several (the int16
``index`` and float32 ``bias`` of a relative-position table) reads back with the wider ones first. Arrays are
written in row blocks, so a table produced block by block streams into the file.

Element types (posenc dtype -> safetensors dtype): float32 ``F32``, float64 ``F64``, float16 ``F16``, bfloat16
``BF16`` (posenc holds its bit patterns as ``uint16``; a ``uint16`` array is ``BF16`` exactly when the table's
``dtype`` parameter is ``bfloat16``, else ``U16``), q15 ``I16``, q7 and int8 ``I8`` (their meaning, with int8's
``scale`` and ``zero_point``, is in the parameters), the plain integers int8, int16, int32 and int64 ``I8``,
``I16``, ``I32`` and ``I64``; each array of a table of several types as its own (a uint16 array is ``BF16`` only
where the ``dtype`` parameter, bfloat16, describes it). Arrays read from other files may also be ``BOOL``, ``U8``,
``U16``, ``U32`` or ``U64``; other types (the 8-bit floats, complex) are refused.

Round trip: arrays (values, dtypes, shapes, order as above), kind and parameters; not the axis names.

Reading: any valid file, whoever wrote it (``safetensors.torch.save_file`` of a learned position table, say). Without
``"posenc"`` metadata the table is of kind ``"array"``; other metadata is not kept. ``BF16`` tensors come back as
their ``uint16`` bit patterns when the table is a bfloat16 one: its ``"posenc"`` metadata says ``dtype`` bfloat16,
or, without it, every tensor is ``BF16`` (the parameters are then ``{"dtype": "bfloat16"}``, as an ``.npy``'s
sidecar would say). In a file that mixes ``BF16`` with other types, ``BF16`` tensors are widened to ``float32``, which
holds every bfloat16 value exactly: a table has one ``dtype`` parameter.

Hostile files: the reader checks everything the spec promises, and posenc's limits, before it reads any data, and
refuses with ``FormatError``:

- a header longer than the format's :data:`MAX_HEADER` or posenc's :data:`~.limits.MAX_METADATA` bytes, longer than
  the file, not starting with ``{``, not UTF-8 JSON, nesting deeper than :data:`~.limits.MAX_NESTING` levels
  (checked before parsing), holding a key twice (the spec forbids it; ``json`` would keep the last), holding
  ``NaN``, ``Infinity`` or a number too large for a double (none of them JSON: :func:`~.limits.read_json`), or more
  than :data:`~.limits.MAX_ARRAYS` tensors (the parse stops at the first object past the limit: a header of a
  million empty tensors costs no million objects);
- ``__metadata__`` that does not map names to strings, and ``"posenc"`` metadata that is not posenc's (see
  :func:`~posenc_cli.formats.npy.parse_meta`);
- a tensor whose dtype is not one of :data:`DTYPES`, whose shape is not a list of at most :data:`~.limits.MAX_DIMS`
  non-negative integers (no floats such as ``1e30``, no booleans) that numpy can hold, whose ``data_offsets`` are not
  two non-negative integers spanning exactly its bytes, or tensors that overlap, leave gaps, or do not end exactly
  at the end of the file.

The tensors' sizes (shape times item size, Python integers; three times that for a widened ``BF16`` tensor) are
claimed from the read's :class:`~posenc_cli.formats.limits.Budget` before any data is read; each tensor is then read
in pieces into memory allocated once (:func:`~posenc_cli.formats.npy.read_array`). :func:`stream` (``posenc
inspect`` and ``verify``) checks and claims the same and reads each tensor at its offset as it is used
(:func:`~posenc_cli.formats.npy.array_at`; a widened one widened a block at a time), so the memory is a block.

Writing, names: tensor keys are written as they are (the ASCII-only JSON escapes every control and non-ASCII
character). A key is a JSON string naming a tensor, never a path: unlike an ``.npz`` member nobody extracts it to a
file, and readers look tensors up by their exact names (``model.embed_positions.weight``), so mapping them would
break what the file is for. Only ``__metadata__`` is refused, the format reserves it.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..system.capacity import human
from ..table import Array, FileArray, Param, Table
from . import npy
from ._blocks import raw_bytes, row_blocks
from .limits import (
    MAX_ARRAYS,
    MAX_LISTED,
    MAX_METADATA,
    Budget,
    PairsHook,
    check_count,
    read_json,
    unique_keys,
)
from .options import WriteOptions

#: The metadata key that carries the table's kind and parameters.
META = "posenc"
#: The header key the format reserves for string-to-string metadata.
METADATA = "__metadata__"
#: The largest header posenc reads: the format's own limit (the reference reader refuses bigger ones).
MAX_HEADER = 100_000_000
#: Header padding: the data starts 8-byte aligned, so each array is aligned to its element size.
ALIGN = 8

#: Every safetensors dtype posenc reads, with its little-endian numpy storage (``BF16`` as its bit patterns).
DTYPES: dict[str, np.dtype] = {
    name: np.dtype(storage)
    for name, storage in (
        ("F64", "<f8"),
        ("I64", "<i8"),
        ("U64", "<u8"),
        ("F32", "<f4"),
        ("I32", "<i4"),
        ("U32", "<u4"),
        ("F16", "<f2"),
        ("BF16", "<u2"),
        ("I16", "<i2"),
        ("U16", "<u2"),
        ("I8", "|i1"),
        ("U8", "|u1"),
        ("BOOL", "|b1"),
    )
}
#: numpy dtype -> safetensors dtype for writing; ``uint16`` becomes ``BF16`` in a bfloat16 table.
_NAMES = {dtype: name for name, dtype in DTYPES.items() if name != "BF16"}


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _dtype_name(table: Table, key: str, array: Array) -> str:
    dtype = array.dtype.newbyteorder("<")
    if dtype == np.dtype("<u2") and table.params.get("dtype") == "bfloat16":
        return "BF16"
    if dtype not in _NAMES:
        raise FormatError(
            f"array {key!r} holds {array.dtype}, which posenc does not write to .safetensors; "
            "it writes bool, 8- to 64-bit integers, float16, float32, float64 and the uint16 bits of bfloat16 tables"
        )
    return _NAMES[dtype]


def header(table: Table) -> tuple[bytes, list[tuple[str, Array]]]:
    """The length prefix and padded JSON header of ``table``, and its arrays in the order their data follows.

    Examples
    --------
    >>> head, order = header(Table("array", {"x": np.zeros((2, 3), np.float32)}))
    >>> len(head) % 8, [key for key, _ in order]
    (0, ['x'])
    """
    order = sorted(table.arrays.items(), key=lambda item: -item[1].dtype.itemsize)
    meta = {"generator": f"posenc {__version__}", "kind": table.kind, "params": dict(table.params)}
    entries: dict[str, Any] = {METADATA: {META: _canonical(meta)}}
    offset = 0
    for key, array in order:
        if key == METADATA:
            raise FormatError(f"an array cannot be named {METADATA!r} in a .safetensors file: the format reserves it")
        size = array.size * array.dtype.itemsize
        entries[key] = {
            "dtype": _dtype_name(table, key, array),
            "shape": [int(n) for n in array.shape],
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = _canonical(entries).encode("ascii")
    text += b" " * (-len(text) % ALIGN)
    return len(text).to_bytes(8, "little") + text, order


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write every array of ``table`` (and its parameters) to ``fp`` as ``.safetensors``, block by block."""
    head, order = header(table)
    fp.write(head)
    for _, array in order:
        dtype = array.dtype.newbyteorder("<")
        if array.ndim == 0:
            fp.write(raw_bytes(array, dtype))
            continue
        for _, block in row_blocks(array):
            fp.write(raw_bytes(block, dtype))


def _strict_objects(tensors: int) -> PairsHook:
    """A ``json`` ``object_pairs_hook`` that refuses duplicate keys (the spec forbids them, ``json`` would keep the
    last) and stops the parse as soon as more objects are built than ``tensors`` tensors, ``__metadata__`` and the
    header take."""
    built = 0

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal built
        built += 1
        if built > tensors + 2:
            raise FormatError(f"the .safetensors header holds more than the {tensors} tensors posenc reads")
        return unique_keys(pairs)

    return hook


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read_header(fp: BinaryIO, size: int, tensors: int = MAX_ARRAYS) -> tuple[int, dict[str, Any]]:
    """The header's length and its JSON object (of at most ``tensors`` tensors), checked against the file's
    ``size``."""
    prefix = fp.read(8)
    if len(prefix) < 8:
        raise FormatError(f"not a .safetensors file: {len(prefix)} bytes, too short for the 8-byte header length")
    length = int.from_bytes(prefix, "little")
    if length > MAX_HEADER:
        raise FormatError(
            f"not a .safetensors file: its header length is {length} bytes, more than the format's {MAX_HEADER}"
        )
    if length > MAX_METADATA:
        raise FormatError(
            f"the .safetensors header takes {length} bytes, more than the {human(MAX_METADATA)} posenc reads"
        )
    if length > size - 8:
        raise FormatError(f"truncated .safetensors file: the header length is {length} bytes, found {size - 8}")
    text = fp.read(length)
    if not text.startswith(b"{"):
        raise FormatError("not a .safetensors file: its header does not start with '{'")
    # objects: the tensors, __metadata__ and the header itself
    parsed = read_json(text, ".safetensors header", _strict_objects(tensors))
    if not isinstance(parsed, dict):
        raise FormatError("not a .safetensors file: its header is not a JSON object")
    return length, parsed


def _posenc_meta(metadata: object) -> tuple[str, dict[str, Param]] | None:
    """The kind and parameters in the ``"posenc"`` metadata, ``None`` when there is none."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise FormatError(f"the .safetensors header's {METADATA!r} must map names to strings")
    if META not in metadata:
        return None
    try:
        kind, params, _ = npy.parse_meta(metadata[META].encode("utf-8", "surrogatepass"), "posenc metadata")
    except FormatError as exc:
        raise FormatError(f"the .safetensors metadata {META!r} is not posenc's: {exc}") from None
    return kind, params


#: One tensor of the header, checked: ``(begin, end, key, shape, dtype name)``, sortable by its place in the data.
Entry = tuple[int, int, str, tuple[int, ...], str]


def _entries(header: dict[str, Any], data_size: int, tensors_at_most: int = MAX_ARRAYS) -> list[Entry]:
    """The header's tensors in data order, after checking each against the spec and the ``data_size`` bytes."""
    check_count(len(header), tensors_at_most, "tensors")
    tensors: list[Entry] = []
    for key, info in header.items():
        if not isinstance(info, dict):
            raise FormatError(f"tensor {key!r}: expected an object with dtype, shape and data_offsets")
        name, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if name not in DTYPES:
            raise FormatError(f"tensor {key!r} has dtype {name!r}; posenc reads {', '.join(DTYPES)}")
        if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
            raise FormatError(f"tensor {key!r}: shape must be a list of non-negative integers, got {shape!r}")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(n) for n in offsets):
            raise FormatError(f"tensor {key!r}: data_offsets must be two non-negative integers, got {offsets!r}")
        need = math.prod(shape) * DTYPES[name].itemsize
        if offsets[1] - offsets[0] != need:
            raise FormatError(
                f"tensor {key!r}: {name} of shape {shape} needs {need} bytes, its data_offsets {offsets} "
                f"hold {offsets[1] - offsets[0]}"
            )
        npy.nbytes(shape, DTYPES[name].itemsize, f"tensor {key!r}")  # dimensions posenc and numpy can hold
        tensors.append((offsets[0], offsets[1], key, tuple(shape), name))
    if not tensors:
        raise FormatError("the .safetensors file holds no tensor")
    tensors.sort()
    # The tensors must tile the data exactly: checked before any data is read, a header that claims terabytes,
    # or many tensors over the same bytes, costs nothing.
    position = 0
    for begin, end, key, _, _ in tensors:
        if begin != position:
            problem = "overlaps the one before it" if begin < position else f"leaves {begin - position} bytes unused"
            raise FormatError(f"tensor {key!r} starts at byte {begin} of the data and {problem}; the spec forbids it")
        position = end
    if position > data_size:
        raise FormatError(
            f"truncated .safetensors file: the header promises {position} bytes of data, found {data_size}"
        )
    if position < data_size:
        raise FormatError(f"the .safetensors file has {data_size - position} bytes after its last tensor, not 0")
    return tensors


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every tensor and posenc's parameters; ``FormatError`` when ``fp`` is not a valid ``.safetensors`` file.

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"x": np.arange(3.0)}), buffer, WriteOptions())
    >>> _ = buffer.seek(0)
    >>> load(buffer).arrays["x"].tolist()
    [0.0, 1.0, 2.0]
    """
    with stream(fp, budget) as table:
        return Table(table.kind, {key: np.asarray(array) for key, array in table.arrays.items()}, table.params)


@contextlib.contextmanager
def stream(fp: BinaryIO, budget: Budget | None = None) -> Iterator[Table]:
    """The table of :func:`load`, checked and claimed as :func:`load` does, each tensor read at its offset in
    ``fp`` (which must stay open) as it is used.

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"x": np.arange(3.0)}), buffer, WriteOptions())
    >>> _ = buffer.seek(0)
    >>> with stream(buffer) as table:
    ...     table.arrays["x"].flat(2, 3).tolist()
    [2.0]
    """
    budget = budget or Budget()
    start = fp.tell()
    size = fp.seek(0, 2) - start
    fp.seek(start)
    length, header = _read_header(fp, size)
    found = _posenc_meta(header.pop(METADATA, None))
    tensors = _entries(header, size - 8 - length)
    bfloat16 = found is not None and found[1].get("dtype") == "bfloat16"
    if found is None and all(name == "BF16" for *_, name in tensors):
        found, bfloat16 = ("array", {"dtype": "bfloat16"}), True
    widened = {key for _, _, key, _, name in tensors if name == "BF16" and not bfloat16}
    for begin, end, key, _, _ in tensors:
        budget.claim((end - begin) * (3 if key in widened else 1), f"tensor {key!r}")
    arrays: dict[str, Array] = {}
    for begin, _, key, shape, name in tensors:
        what = f"tensor {key!r}"
        if not shape:
            fp.seek(start + 8 + length + begin)
            array: Array = npy.read_array(fp, shape, DTYPES[name], what)
        else:
            array = npy.array_at(fp, start + 8 + length + begin, shape, DTYPES[name], what)
        arrays[key] = _widening(array) if key in widened else array
    kind, params = found if found is not None else ("array", {})
    yield Table(kind, arrays, params)


def _widening(bits: Array) -> Array:
    """A ``BF16`` tensor as float32 (:func:`_widened`), a block at a time when it is read so."""
    if isinstance(bits, FileArray):
        read = bits.flat
        return FileArray(bits.shape, np.float32, lambda lo, hi: _widened(read(lo, hi)))
    return _widened(np.asarray(bits))


def names(fp: BinaryIO) -> list[str]:
    """The keys of every tensor of a checkpoint (of up to :data:`~.limits.MAX_LISTED`), in data order, after checking
    the header as :func:`load_part` does; no data is read."""
    start = fp.tell()
    size = fp.seek(0, 2) - start
    fp.seek(start)
    length, header = _read_header(fp, size, MAX_LISTED)
    _posenc_meta(header.pop(METADATA, None))
    return [entry[2] for entry in _entries(header, size - 8 - length, MAX_LISTED)]


def load_part(fp: BinaryIO, budget: Budget | None, key: str) -> Table:
    """Read the one tensor ``key`` of a checkpoint (of up to :data:`~.limits.MAX_LISTED` tensors; every entry of
    the header is checked as :func:`load` checks it, and no other tensor's data is read or claimed).

    The table is of kind ``"array"`` with that one array unless the file is posenc's (then its kind and parameters
    come too); a ``BF16`` tensor of a file that is not a bfloat16 table is widened to float32, exactly. Raises
    :class:`MissingTensor` (a ``FormatError`` that lists the file's tensors) when there is no ``key``.

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"a": np.arange(3.0), "b": np.ones(2, np.float32)}), buffer, WriteOptions())
    >>> _ = buffer.seek(0)
    >>> list(load_part(buffer, None, "b").arrays)
    ['b']
    """
    return _tensor(fp, _Listing.read(fp), key, budget or Budget())


def load_parts(
    fp: BinaryIO, keys: Iterable[str], budget: Callable[[], Budget]
) -> Iterator[tuple[str, Table | FormatError]]:
    """Each tensor of ``keys``, in turn, as :func:`load_part` reads it, the header read and checked once (a
    checkpoint of thousands of tensors costs one parse, not one per tensor): ``(key, table)``, or ``(key, error)``
    for a tensor that cannot be read (missing, over its budget), so that one bad tensor does not end the walk.
    ``budget()`` gives each tensor its own budget (a tensor is claimed, read, and let go before the next).

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"a": np.arange(3.0), "b": np.ones(2, np.float32)}), buffer, WriteOptions())
    >>> _ = buffer.seek(0)
    >>> [(key, type(got).__name__) for key, got in load_parts(buffer, ["b", "c"], Budget)]
    [('b', 'Table'), ('c', 'MissingTensor')]
    """
    listing = _Listing.read(fp)
    for key in keys:
        try:
            yield key, _tensor(fp, listing, key, budget())
        except FormatError as exc:
            yield key, exc


@dataclass(frozen=True)
class _Listing:
    """A checkpoint's header, read and checked: where the data starts, posenc's record and every tensor's entry."""

    data: int
    found: tuple[str, dict[str, Param]] | None
    tensors: dict[str, Entry]

    @classmethod
    def read(cls, fp: BinaryIO) -> _Listing:
        start = fp.tell()
        size = fp.seek(0, 2) - start
        fp.seek(start)
        length, header = _read_header(fp, size, MAX_LISTED)
        found = _posenc_meta(header.pop(METADATA, None))
        tensors = {entry[2]: entry for entry in _entries(header, size - 8 - length, MAX_LISTED)}
        return cls(start + 8 + length, found, tensors)


def _tensor(fp: BinaryIO, listing: _Listing, key: str, budget: Budget) -> Table:
    if key not in listing.tensors:
        raise MissingTensor(key, list(listing.tensors))
    begin, end, _, shape, name = listing.tensors[key]
    found = listing.found
    bfloat16 = found is not None and found[1].get("dtype") == "bfloat16"
    widen = name == "BF16" and not bfloat16
    budget.claim((end - begin) * (3 if widen else 1), f"tensor {key!r}")
    fp.seek(listing.data + begin)
    array = npy.read_array(fp, shape, DTYPES[name], f"tensor {key!r}")
    kind, params = found if found is not None else ("array", {})
    return Table(kind, {key: _widened(array) if widen else array}, params)


class MissingTensor(FormatError):
    """The tensor asked for is not in the file: ``keys`` are those it holds, in data order."""

    def __init__(self, key: str, keys: list[str]) -> None:
        super().__init__(f"the file has no tensor {key!r}")
        self.key = key
        self.keys = keys


def _widened(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns as float32: bfloat16 is the top half of a binary32, so the values are exact."""
    wide = bits.astype(np.uint32)
    wide <<= 16
    return wide.view(np.float32)
