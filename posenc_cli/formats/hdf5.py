"""HDF5 (``.h5``, ``.hdf5``): one dataset per array, parameters as attributes.

Spec: https://docs.hdfgroup.org/hdf5/develop/_f_m_t3.html (written through h5py, read by any HDF5 tool).

Layout written:

- A single-array table becomes one dataset at the root, named by the table's name (``--name``; by default the
  output file's stem), shape ``(seq_len, d_model)``, row-major, contiguous, the table's dtype (``<f4``/``<f8``).
- A table with several arrays writes one dataset per array, at the root, or inside the group ``options.group`` (the
  CLI's ``--name``) when one is given. Each is named by :func:`~posenc_cli.formats.identifiers.member_names` of its
  key: ``cos``, ``sin``, ``inv_freq`` stay as they are, a key read from a hostile file (``../x``, ``a/b``) is mapped
  (``x``, ``a_b``), so no dataset name is an HDF5 path (a ``/`` would make groups).
- Attributes on every dataset: ``kind``, ``generator`` (``"posenc X.Y.Z"``) and every parameter of the table
  (``seq_len``, ``d_model``, ``base``, ``dtype``, ``layout`` for a sinusoidal table), in sorted order. Strings are
  stored as UTF-8 variable-length strings, integers as int64, floats as float64, booleans as uint8 0/1. A parameter
  HDF5 cannot store as it is (an empty name, a NUL character, text that is not Unicode) is refused.

Reproducible: no timestamps (h5py's ``track_times`` stays off), attributes in sorted order, the library's
``earliest`` file format (readable by HDF5 1.8 and later tools, including Debian's ``h5dump``), no compression filter
(LZF is unreadable to h5dump, and positional tables barely compress). Rows are written in slabs, so a table that is
produced block by block never has to be whole in memory.

Read (every file may be hostile, see :mod:`~posenc_cli.formats.limits`); everything is checked before any data is
read, and anything else is refused with one line naming the dataset, link or attribute:

- Where: every dataset at the root, or in the root's only group when the root holds nothing else; at most
  :data:`~posenc_cli.formats.limits.MAX_ARRAYS` entries in either. Only hard links are read: a soft link or an
  external link there is refused, never followed (so a link loop costs nothing, and no other file is opened).
- Values: integers of 8 to 64 bits and IEEE floats of 16, 32 or 64 bits, in either byte order (returned in native
  order), with a scalar or simple dataspace of at most :data:`~posenc_cli.formats.limits.MAX_DIMS` dimensions (a
  zero-length one is an empty array). Refused: a null dataspace, and strings, compound, enum (h5py's booleans too),
  variable-length, reference, opaque, array, bit-field and time types, or numbers with a bit layout numpy does not
  hold exactly.
- Storage: contiguous, compact or chunked, held in the file itself. A dataset stored in external files or virtual
  (mapped from other datasets or files) is refused.
- Chunked data is decoded by posenc, not by HDF5's filter pipeline (which inflates a chunk as far as its stream
  goes, whatever the chunk's declared size, and may load filter plugins): only the filters of :data:`FILTERS`
  (deflate, shuffle, fletcher32, whose checksum is checked); chunks of at most :data:`MAX_CHUNK` bytes, at most
  :data:`MAX_CHUNKS` of them, each stored inside the file and inflated no further than its declared size. Chunks
  never written read as the fill value.
- Memory: the declared size (shape x item size) of every dataset is claimed from the
  :class:`~posenc_cli.formats.limits.Budget` before any data is read, and the data goes straight into arrays of that
  size, with a few chunks of working memory at most.
- Attributes: at most :data:`~posenc_cli.formats.limits.MAX_ATTRIBUTES` per dataset, each one value (a scalar or a
  single element): an integer, a float, or UTF-8 text of at most :data:`MAX_TEXT` bytes; their type, shape and size
  are checked before their value is read. ``kind`` must be text; ``generator`` is ignored; every other attribute is a
  parameter.
- Variable-length strings (how posenc and h5py write text) are checked from the file's bytes before libhdf5 reads
  them, because libhdf5 allocates what a string's stored length claims before it finds the claim false (4 GiB for
  two flipped bytes) and walks a global heap collection forever when an object in it has size 0: each string's
  reference is found in the dataset's object header (version 1 or 2) and must claim at most :data:`MAX_TEXT` bytes,
  in a collection of at most :data:`MAX_HEAP` bytes whose objects fit it. A variable-length string kept elsewhere
  (dense or shared attribute storage: more than 8 attributes in HDF5's newer file format) is refused.
- Names of links and attributes: UTF-8 of at most :data:`MAX_TEXT` bytes. Names and strings are data, returned as
  they are (whoever prints or writes them escapes or maps them).

Errors from h5py and libhdf5 on a corrupt file become ``FormatError`` naming the dataset when there is one.

Round trip: arrays, dtypes, shapes, kind and parameters.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Param, Table
from ._blocks import row_blocks
from .identifiers import member_names
from .limits import MAX_ARRAYS, MAX_ATTRIBUTES, MAX_DIMS, Budget, check_count, human
from .options import WriteOptions

#: The HDF5 filters posenc decodes (by filter id); a dataset through any other filter is refused.
FILTERS = {1: "deflate (gzip)", 2: "shuffle", 3: "fletcher32"}
_DEFLATE, _SHUFFLE, _FLETCHER32 = 1, 2, 3
#: The largest chunk, uncompressed: a chunk is decoded whole to read any part of it (h5py's chunks are at most 1 MiB).
MAX_CHUNK = 16 << 20
#: The most chunks (written or not) of one dataset: each costs a look-up in the file's chunk index.
MAX_CHUNKS = 1 << 18
#: The longest name or text attribute posenc reads, in UTF-8 bytes.
MAX_TEXT = 4096
#: The largest global heap collection (where HDF5 keeps variable-length strings) posenc checks before libhdf5 reads
#: a string from it; HDF5 makes them 4 KiB, or as large as one object needs.
MAX_HEAP = 16 << 20

#: What a dataset of each HDF5 type class holds (``H5T_class_t``, stable since HDF5 1.8), for messages.
_CLASSES = (
    "integers", "floats", "times", "strings", "bit fields", "opaque bytes", "compound records", "references",
    "enum values (h5py's booleans among them)", "variable-length sequences", "arrays", "complex numbers",
)  # fmt: skip
#: What h5py and libhdf5 raise on a file they cannot read.
_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError, zlib.error)


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write ``table`` to the binary file object ``fp`` (which must be readable, writable and seekable)."""
    import h5py  # heavy: imported only when an .h5 is written

    single = len(table.arrays) == 1
    names = [options.name] if single else member_names(list(table.arrays))
    attrs: dict[str, Param] = {"generator": f"posenc {__version__}", "kind": table.kind, **table.params}
    for key, value in attrs.items():
        _check_storable(key, value)
    with h5py.File(fp, "w", libver="earliest", track_order=False) as f:
        parent = f.create_group(options.group, track_order=False) if options.group and not single else f
        for name, array in zip(names, table.arrays.values(), strict=True):
            ds = parent.create_dataset(name, shape=array.shape, dtype=array.dtype.newbyteorder("<"), track_times=False)
            for attr in sorted(attrs):
                ds.attrs[attr] = _attr_value(attrs[attr])
            if array.ndim == 0:
                ds[()] = array
                continue
            for lo, block in row_blocks(array):
                ds[lo : lo + len(block)] = block


def _check_storable(key: str, value: Param) -> None:
    for text, what in ((key, "name"), (value, "value")):
        if not isinstance(text, str):
            continue
        if (what == "name" and not text) or "\0" in text or not _encodable(text):
            raise FormatError(
                f"parameter {key!r} cannot be an HDF5 attribute: its {what} is empty, holds a NUL character "
                "or is not Unicode text"
            )


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _attr_value(value: Param) -> Any:
    if isinstance(value, bool):
        return np.uint8(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    return str(value)


@dataclass(frozen=True)
class _Dataset:
    """A dataset checked for reading, none of its data read yet."""

    key: str
    path: str
    node: Any  # h5py.Dataset
    shape: tuple[int, ...]
    dtype: np.dtype[Any]  # as stored: the file's byte order
    chunk: tuple[int, ...] | None
    filters: tuple[tuple[int, tuple[int, ...]], ...]


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every dataset at the root of an HDF5 file (the rules are in the module docstring); ``FormatError`` when
    it is not a table posenc reads, before any memory past ``budget`` is taken."""
    import h5py

    budget = budget or Budget()
    file_size = fp.seek(0, 2)
    fp.seek(0)
    with _reading("not a readable HDF5 file"), h5py.File(fp, "r") as f:
        group, where, names = _table_group(f)
        datasets = [_check(group, raw, key, where + key, budget) for key, raw in names]
        kind, params = _kind_and_params(datasets, fp, f, file_size)
        arrays = {d.key: _read(d, file_size) for d in datasets}
    return Table(kind, arrays, params)


@contextlib.contextmanager
def _reading(what: str) -> Iterator[None]:
    """Turn what h5py or libhdf5 raise into one ``FormatError`` line starting with ``what``."""
    try:
        yield
    except FormatError:
        raise
    except _ERRORS as exc:
        raise FormatError(f"{what}: {' '.join(str(exc).split()) or type(exc).__name__}") from None


def _table_group(f: Any) -> tuple[Any, str, list[tuple[str, bytes]]]:
    """The group whose datasets make the table, its path, and their names (as text and as stored)."""
    from h5py import h5o

    entries = _entries(f, "/")
    datasets = [(key, raw) for key, raw, kind in entries if kind == h5o.TYPE_DATASET]
    groups = [(key, raw) for key, raw, kind in entries if kind == h5o.TYPE_GROUP]
    if not datasets and len(groups) == 1:
        key, raw = groups[0]
        group = f[raw]
        datasets = [(k, r) for k, r, kind in _entries(group, f"/{key}/") if kind == h5o.TYPE_DATASET]
        return group, f"/{key}/", _some(datasets)
    return f, "/", _some(datasets)


def _some(datasets: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    if not datasets:
        raise FormatError("the HDF5 file holds no dataset at its root")
    return datasets


def _entries(group: Any, where: str) -> list[tuple[str, bytes, int]]:
    """Every entry of ``group``: its name, its stored name and its object type; links other than hard ones are
    refused before anything is opened through them."""
    from h5py import h5l, h5o

    check_count(len(group), MAX_ARRAYS, f"entries in the HDF5 group {where!r}")
    entries = []
    for raw in group.id:
        path = where + _text(raw, f"a name in the HDF5 group {where!r}")
        link = group.id.links.get_info(raw).type
        if link == h5l.TYPE_SOFT:
            target = _shown(group.id.links.get_val(raw))
            raise FormatError(f"{path!r} is a soft link to {target!r}; posenc follows no link, it reads datasets only")
        if link == h5l.TYPE_EXTERNAL:
            file, node = (_shown(part) for part in group.id.links.get_val(raw))
            raise FormatError(
                f"{path!r} is an external link to {node!r} in the file {file!r}; posenc never reads another file"
            )
        if link != h5l.TYPE_HARD:
            raise FormatError(f"{path!r} is a user-defined HDF5 link (type {link}); posenc follows no link")
        entries.append((path[len(where) :], bytes(raw), int(h5o.get_info(group.id, raw).type)))
    return entries


def _text(raw: bytes, what: str) -> str:
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{what} is not UTF-8 text: {_shown(raw)!r}") from None
    if len(raw) > MAX_TEXT:
        raise FormatError(f"{what} is {len(raw)} bytes long, more than the {MAX_TEXT} posenc reads")
    return text


def _shown(raw: bytes, limit: int = 200) -> str:
    """Up to ``limit`` characters of a name from the file, for a message (``repr`` escapes it)."""
    return bytes(raw[:limit]).decode("utf-8", "backslashreplace") + ("..." if len(raw) > limit else "")


def _check(group: Any, raw: bytes, key: str, path: str, budget: Budget) -> _Dataset:
    """Everything about one dataset except its data: storage, filters, shape, type; its size claimed."""
    import h5py

    with _reading(f"dataset {path!r} is unreadable"):
        node = h5py.Dataset(h5py.h5d.open(group.id, raw))
        plist = node.id.get_create_plist()
        chunk = _storage(plist, path)
        filters = _filters(plist, path)
        shape = _shape(node.id.get_space(), path)
        dtype = _number_dtype(node.id.get_type(), f"dataset {path!r}")
        dims = " x ".join(map(str, shape)) or "scalar"
        budget.claim(math.prod(shape) * dtype.itemsize, f"dataset {path!r} ({dims} {dtype.name})")
        if chunk is not None:
            _check_chunks(shape, chunk, dtype, path)
        return _Dataset(key, path, node, shape, dtype, chunk, filters)


def _storage(plist: Any, path: str) -> tuple[int, ...] | None:
    """The chunk shape of a chunked dataset, ``None`` for contiguous or compact ones; anything else refused."""
    from h5py import h5d

    layout = plist.get_layout()
    if layout == h5d.VIRTUAL:
        raise FormatError(
            f"dataset {path!r} is a virtual dataset: its values live in other datasets or files, and posenc reads "
            "only data stored in the file itself"
        )
    if plist.get_external_count():
        name = _shown(plist.get_external(0)[0])
        raise FormatError(
            f"dataset {path!r} keeps its values in the external file {name!r}; posenc reads only data stored in the "
            "HDF5 file itself"
        )
    if layout not in (h5d.CONTIGUOUS, h5d.COMPACT, h5d.CHUNKED):
        raise FormatError(f"dataset {path!r} has HDF5 storage layout {layout}, not contiguous, compact or chunked")
    return tuple(int(n) for n in plist.get_chunk()) if layout == h5d.CHUNKED else None


def _filters(plist: Any, path: str) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The filter pipeline (id and parameters of each filter, in the order they were applied when writing)."""
    pipeline = []
    for index in range(plist.get_nfilters()):
        code, _flags, values, name = plist.get_filter(index)
        if code not in FILTERS:
            allowed = ", ".join(FILTERS.values())
            raise FormatError(
                f"dataset {path!r} is stored through HDF5 filter {code} ({_shown(name)!r}); posenc decodes only "
                f"{allowed}"
            )
        pipeline.append((int(code), tuple(int(v) for v in values)))
    return tuple(pipeline)


def _shape(space: Any, path: str) -> tuple[int, ...]:
    from h5py import h5s

    kind = space.get_simple_extent_type()
    if kind == h5s.SCALAR:
        return ()
    if kind != h5s.SIMPLE:
        raise FormatError(f"dataset {path!r} has a null dataspace (no shape and no values), not an array")
    rank = space.get_simple_extent_ndims()
    if rank > MAX_DIMS:
        raise FormatError(f"dataset {path!r} has {rank} dimensions, more than the {MAX_DIMS} posenc reads")
    return tuple(int(n) for n in space.get_simple_extent_dims())


def _number_dtype(tid: Any, what: str) -> np.dtype[Any]:
    """The numpy dtype (in the file's byte order) that holds the HDF5 number type ``tid`` exactly."""
    from h5py import h5t

    cls, size = tid.get_class(), tid.get_size()
    if cls == h5t.INTEGER and size in (1, 2, 4, 8):
        code = "i" if tid.get_sign() == h5t.SGN_2 else "u"
    elif cls == h5t.FLOAT and size in (2, 4, 8):
        code = "f"
    else:
        holds = _CLASSES[cls] if 0 <= cls < len(_CLASSES) else f"values of HDF5 type class {cls}"
        bits = f"{size * 8}-bit " if cls in (h5t.INTEGER, h5t.FLOAT) else ""
        raise FormatError(f"{what} holds {bits}{holds}, not 8- to 64-bit integers or 16- to 64-bit floats")
    dtype = np.dtype(f"{'>' if tid.get_order() == h5t.ORDER_BE else '<'}{code}{size}")
    exact = h5t.py_create(dtype).copy()
    exact.set_order(tid.get_order())  # one-byte types carry an order too, of no meaning
    if not tid.equal(exact):
        raise FormatError(f"{what} holds {size * 8}-bit numbers with a bit layout other than {dtype.name}'s")
    return dtype


def _check_chunks(shape: tuple[int, ...], chunk: tuple[int, ...], dtype: np.dtype[Any], path: str) -> None:
    if len(chunk) != len(shape) or min(chunk, default=1) < 1:
        raise FormatError(f"dataset {path!r} has chunks of shape {chunk} for its shape {shape}")
    nbytes = math.prod(chunk) * dtype.itemsize
    if nbytes > MAX_CHUNK:
        raise FormatError(
            f"dataset {path!r} has chunks of {human(nbytes)}, more than the {human(MAX_CHUNK)} posenc reads"
        )
    count = math.prod(-(-n // c) for n, c in zip(shape, chunk, strict=True))
    if count > MAX_CHUNKS:
        raise FormatError(f"dataset {path!r} is cut into {count} chunks, more than the {MAX_CHUNKS} posenc reads")


@dataclass(frozen=True)
class _Attribute:
    """An attribute checked for reading, its value not read yet."""

    dataset: _Dataset
    raw: bytes  # its name as stored
    name: str
    variable: bool  # a variable-length string, kept in a global heap collection


def _kind_and_params(datasets: list[_Dataset], fp: BinaryIO, f: Any, file_size: int) -> tuple[str, dict[str, Param]]:
    attributes = [attr for d in datasets for attr in _attributes(d)]
    if any(attr.variable for attr in attributes):
        geometry = _geometry(fp, f, file_size)
        for d in datasets:
            with _reading(f"the object header of dataset {d.path!r} is unreadable"):
                _check_text_references(geometry, d, {a.raw for a in attributes if a.dataset is d and a.variable})
    kind, params = "array", {}
    for attr in attributes:
        what = f"attribute {attr.name!r} of dataset {attr.dataset.path!r}"
        with _reading(f"{what} is unreadable"):
            value = _param(attr.dataset.node.attrs[attr.raw], what)
        if attr.name == "kind":
            if not isinstance(value, str):
                raise FormatError(f"{what} is {value!r}, not text")
            kind = value
        elif attr.name != "generator":
            params[attr.name] = value
    return kind, params


def _attributes(d: _Dataset) -> list[_Attribute]:
    """Every attribute of ``d``, each checked to be one number or one short string."""
    from h5py import h5a

    with _reading(f"the attributes of dataset {d.path!r} are unreadable"):
        count = h5a.get_num_attrs(d.node.id)
        check_count(count, MAX_ATTRIBUTES, f"attributes on dataset {d.path!r}")
        attributes = []
        for index in range(count):
            attr = h5a.open(d.node.id, index=index)
            name = _text(attr.name, f"an attribute name of dataset {d.path!r}")
            variable = _check_attribute(attr, f"attribute {name!r} of dataset {d.path!r}")
            attributes.append(_Attribute(d, bytes(attr.name), name, variable))
        return attributes


def _check_attribute(attr: Any, what: str) -> bool:
    """Refuse, before its value is read, an attribute that is not one number or one short string; ``True`` for a
    variable-length string."""
    from h5py import h5s, h5t

    space = attr.get_space()
    if space.get_simple_extent_type() == h5s.NULL or space.get_simple_extent_npoints() != 1:
        raise FormatError(f"{what} is not a single value (its shape is {attr.shape}); posenc reads numbers and text")
    tid = attr.get_type()
    cls, size = tid.get_class(), tid.get_size()
    if cls == h5t.STRING:
        if tid.is_variable_str():
            return True
        if size > MAX_TEXT:
            raise FormatError(f"{what} is {size} bytes of text, more than the {MAX_TEXT} posenc reads")
    elif cls not in (h5t.INTEGER, h5t.FLOAT) or size > 8:
        holds = _CLASSES[cls] if 0 <= cls < len(_CLASSES) else f"HDF5 type class {cls}"
        raise FormatError(f"{what} holds {size * 8}-bit {holds}, not a number or text")
    return False


def _param(value: Any, what: str) -> Param:
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0]
    if isinstance(value, bytes):
        return _text(value, what)
    if isinstance(value, str):
        if not _encodable(value):  # h5py decodes text that is not UTF-8 with lone surrogates
            raise FormatError(f"{what} is not UTF-8 text: {value.encode('utf-8', 'surrogateescape')[:200]!r}")
        return _text(value.encode("utf-8"), what)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise FormatError(f"{what} holds {type(value).__name__}, not a number or text")


def _read(d: _Dataset, file_size: int) -> np.ndarray:
    """The values of a checked dataset, read into an array of its declared size."""
    from h5py import h5s

    native = d.dtype.newbyteorder("=")
    with _reading(f"dataset {d.path!r} is unreadable"):
        if d.chunk is None:
            out = np.empty(d.shape, native)
            if out.size:
                d.node.id.read(h5s.ALL, h5s.ALL, out)  # no filters: HDF5 converts the byte order in bounded strips
            return out
        fill = _fill_value(d.node.id.get_create_plist(), native)
        zero = fill.tobytes() == bytes(fill.nbytes)  # not -0.0
        out = np.zeros(d.shape, native) if zero else np.full(d.shape, fill, native)  # zeros: pages not yet touched
        _read_chunks(d, out, file_size)
    return out


def _fill_value(plist: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """What a chunk never written holds."""
    from h5py import h5d

    fill = np.zeros((), dtype)
    if plist.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED:
        plist.get_fill_value(fill)
    return fill


def _read_chunks(d: _Dataset, out: np.ndarray, file_size: int) -> None:
    assert d.chunk is not None
    dsid, chunk = d.node.id, d.chunk
    nbytes = math.prod(chunk) * d.dtype.itemsize
    for offset in itertools.product(*(range(0, n, c) for n, c in zip(d.shape, chunk, strict=True))):
        where = f"chunk {offset} of dataset {d.path!r}"
        info = dsid.get_chunk_info_by_coord(offset)
        if info.byte_offset is None:
            continue  # never written: the fill value
        # Deflate adds 0.03% and a few bytes to data it cannot compress, fletcher32 four.
        if info.size > nbytes + nbytes // 64 + 1024 or info.byte_offset + info.size > file_size:
            raise FormatError(
                f"{where} claims {info.size} stored bytes at offset {info.byte_offset}, for {nbytes} bytes of data "
                f"in a file of {file_size}"
            )
        mask, raw = dsid.read_direct_chunk(offset)
        data = _decode(bytes(raw), int(mask), d, nbytes, where)
        block = np.frombuffer(data, d.dtype).reshape(chunk)
        region = tuple(slice(o, min(o + c, n)) for o, c, n in zip(offset, chunk, d.shape, strict=True))
        out[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]


def _decode(data: bytes, mask: int, d: _Dataset, nbytes: int, where: str) -> bytes:
    """Undo the filters of ``d`` on one stored chunk (the last applied first; bit ``i`` of ``mask`` set: the
    chunk skipped filter ``i``)."""
    for index in reversed(range(len(d.filters))):
        if mask >> index & 1:
            continue
        code, values = d.filters[index]
        if code == _FLETCHER32:
            data = _checked_fletcher32(data, where)
        elif code == _SHUFFLE:
            data = _unshuffle(data, values[0] if values else d.dtype.itemsize)
        elif code == _DEFLATE:
            data = _inflate(data, nbytes + 4 * len(d.filters), where)
    if len(data) != nbytes:
        raise FormatError(f"{where} holds {len(data)} bytes of data, not the {nbytes} of its chunk shape")
    return data


def _inflate(data: bytes, limit: int, where: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise FormatError(f"{where} is not deflate data: {exc}") from None
    if len(out) > limit:
        raise FormatError(f"{where} inflates past its declared size ({human(limit)}): a decompression bomb")
    if not inflater.eof:
        raise FormatError(f"{where} ends inside its deflate stream: the file is truncated or corrupt")
    return out


def _unshuffle(data: bytes, size: int) -> bytes:
    """HDF5's shuffle undone: byte ``k`` of every element was stored in plane ``k``; a tail shorter than one
    element of every plane was stored as it is."""
    count = len(data) // size if size > 1 else 0
    if count == 0:
        return data
    planes = np.frombuffer(data, np.uint8, count * size).reshape(size, count)
    return planes.T.tobytes() + data[count * size :]


def _checked_fletcher32(data: bytes, where: str) -> bytes:
    """``data`` without its trailing Fletcher-32 checksum, which must match (HDF5's: big-endian 16-bit words, the
    checksum stored little-endian; HDF5 before 1.6.3 stored it with the bytes of each half swapped)."""
    if len(data) < 4:
        raise FormatError(f"{where} is too short to hold its fletcher32 checksum")
    body, stored = data[:-4], data[-4:]
    low, high = _fletcher32(body)
    for candidate in (stored, bytes((stored[1], stored[0], stored[3], stored[2]))):
        value = int.from_bytes(candidate, "little")
        if (value & 0xFFFF) % 0xFFFF == low and (value >> 16) % 0xFFFF == high:
            return body
    raise FormatError(f"{where} fails its fletcher32 checksum: the data is corrupt")


def _fletcher32(body: bytes) -> tuple[int, int]:
    """Fletcher-32's two sums, modulo 65535, of ``body`` read as big-endian 16-bit words (an odd tail byte padded)."""
    words = np.frombuffer(body + b"\0" * (len(body) % 2), ">u2")
    count, block = len(words), 1 << 20
    low = high = 0
    for lo in range(0, count, block):
        part = words[lo : lo + block].astype(np.int64)
        weights = (count - lo - np.arange(len(part), dtype=np.int64)) % 0xFFFF  # word i counts count - i times
        low += int(part.sum())
        high += int((part * weights).sum())
    return low % 0xFFFF, high % 0xFFFF


# ------------------------------------------------------------------------------------------------- variable-length text
# libhdf5 reads a variable-length string by allocating (and zeroing) as many bytes as the string's stored length
# says, then reading it from its global heap collection, where it finds a false length too late (a few flipped bits
# cost 4 GiB); and it finds an object in a collection by walking all of them by their sizes, forever when one is 0.
# So before libhdf5 reads any such string, posenc finds its stored reference in the dataset's object header and
# checks both, from the file's bytes.

_CONTINUATION, _ATTRIBUTE = 0x10, 0x0C  # object header message types


@dataclass
class _Geometry:
    """Where HDF5's structures are in the file, for the few posenc checks itself."""

    fp: BinaryIO
    base: int  # the superblock's offset (after a user block): addresses count from it
    addr_size: int
    length_size: int
    file_size: int
    heaps: set[int] = field(default_factory=set)  # collections checked
    heap_bytes: int = 0

    def read(self, address: int, size: int, what: str) -> bytes:
        start = self.base + address
        if start + size > self.file_size:
            raise FormatError(f"{what} ({size} bytes at byte {start}) lies past the end of the file")
        self.fp.seek(start)
        return self.fp.read(size)


def _geometry(fp: BinaryIO, f: Any, file_size: int) -> _Geometry:
    plist = f.id.get_create_plist()
    addr_size, length_size = plist.get_sizes()
    return _Geometry(fp, int(plist.get_userblock()), int(addr_size), int(length_size), file_size)


def _check_text_references(g: _Geometry, d: _Dataset, names: set[bytes]) -> None:
    """Check the variable-length string attributes ``names`` of ``d``: each found in its object header, claiming at
    most :data:`MAX_TEXT` bytes, in a collection libhdf5 can walk; ``FormatError`` otherwise."""
    from h5py import h5o

    if not names:
        return
    info = h5o.get_info(d.node.id)
    found = set()
    for name, data in _attribute_messages(g, int(info.addr), int(info.hdr.nchunks), d.path):
        if name not in names:
            continue
        found.add(name)
        what = f"attribute {_shown(name)!r} of dataset {d.path!r}"
        if len(data) < 8 + g.addr_size:
            raise FormatError(f"{what} is cut short in its object header")
        length = int.from_bytes(data[:4], "little")
        if length > MAX_TEXT:
            raise FormatError(f"{what} claims {length} bytes of text, more than the {MAX_TEXT} posenc reads")
        collection = int.from_bytes(data[4 : 4 + g.addr_size], "little")
        if collection and collection not in g.heaps:
            _check_heap(g, collection)
    for name in sorted(names - found):
        raise FormatError(
            f"attribute {_shown(name)!r} of dataset {d.path!r} is variable-length text kept outside the dataset's "
            "object header (dense or shared attribute storage), where posenc cannot check it before reading it"
        )


def _attribute_messages(g: _Geometry, address: int, chunks: int, path: str) -> Iterator[tuple[bytes, bytes]]:
    """The name and stored value of every attribute message kept in the object header at ``address``."""
    for kind, flags, body in _header_messages(g, address, chunks, f"the object header of dataset {path!r}"):
        if kind != _ATTRIBUTE or flags & 0x02:  # flag 0x02: a shared message, stored elsewhere
            continue
        version = body[0] if body else 0
        if version not in (1, 2, 3) or len(body) < 9:
            raise FormatError(f"an attribute of dataset {path!r} has a message of version {version} or is cut short")
        sizes = [int.from_bytes(body[i : i + 2], "little") for i in (2, 4, 6)]  # name, datatype, dataspace
        start = 9 if version == 3 else 8
        padded = [-(-n // 8) * 8 for n in sizes] if version == 1 else sizes  # version 1 pads each to 8 bytes
        yield body[start : start + sizes[0]].split(b"\0", 1)[0], body[start + sum(padded) :]


def _header_messages(g: _Geometry, address: int, chunks: int, what: str) -> list[tuple[int, int, bytes]]:
    """Every message (type, flags, body) of an object header, in every chunk libhdf5 found (``chunks``)."""
    (start, size), v2, order = _first_chunk(g, address, what)
    pending, messages, seen = [(start, size)], [], 0
    while pending:
        seen += 1
        if seen > chunks:
            raise FormatError(f"{what} continues past the {chunks} chunks libhdf5 read")
        block = g.read(*pending.pop(0), what)
        for kind, flags, body in _walk(block, v2, order, what):
            messages.append((kind, flags, body))
            if kind == _CONTINUATION:
                target = int.from_bytes(body[: g.addr_size], "little")
                length = int.from_bytes(body[g.addr_size : g.addr_size + g.length_size], "little")
                if v2 and g.read(target, 4, what) != b"OCHK":
                    raise FormatError(f"{what} continues at address {target}, where no continuation chunk is")
                pending.append((target + 4, length - 8) if v2 else (target, length))  # v2: signature, checksum
    if seen != chunks:
        raise FormatError(f"{what} has {seen} chunks where libhdf5 read {chunks}")
    return messages


def _first_chunk(g: _Geometry, address: int, what: str) -> tuple[tuple[int, int], bool, int]:
    """Where the messages of an object header's first chunk are, whether it is version 2, and the size of the
    creation order field in its message headers."""
    head = g.read(address, 6, what)
    if head[:4] == b"OHDR" and head[4] == 2:
        flags = head[5]
        at = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)  # times; attribute phase change
        width = 1 << (flags & 0x03)
        size = int.from_bytes(g.read(address + at, width, what), "little")
        return (address + at + width, size), True, 2 if flags & 0x04 else 0
    if head[0] != 1:
        raise FormatError(f"{what} has version {head[0]}, not 1 or 2")
    size = int.from_bytes(g.read(address + 8, 4, what), "little")
    return (address + 16, size), False, 0


def _walk(block: bytes, v2: bool, order: int, what: str) -> Iterator[tuple[int, int, bytes]]:
    """The messages of one chunk: version 1 headers are type (2 bytes), size (2), flags (1) and 3 reserved bytes;
    version 2 type (1), size (2), flags (1) and the creation order; a shorter tail is a gap."""
    header = 4 + order if v2 else 8
    at = 0
    while at + header <= len(block):
        kind = block[at] if v2 else int.from_bytes(block[at : at + 2], "little")
        size = int.from_bytes(block[at + 1 : at + 3] if v2 else block[at + 2 : at + 4], "little")
        flags = block[at + 3 if v2 else at + 4]
        if at + header + size > len(block):
            raise FormatError(f"{what} holds a message of {size} bytes that runs past its chunk")
        yield kind, flags, block[at + header : at + header + size]
        at += header + size


def _check_heap(g: _Geometry, collection: int) -> None:
    """Refuse a global heap collection that libhdf5 would walk forever, or past its end."""
    what = f"the global heap collection at address {collection}"
    head = g.read(collection, 8 + g.length_size, what)
    if head[:5] != b"GCOL\x01":
        raise FormatError(f"{what} is not a global heap collection (version 1)")
    size = int.from_bytes(head[8:], "little")
    g.heap_bytes += size
    if size > MAX_HEAP or g.heap_bytes > g.file_size:
        raise FormatError(
            f"{what} claims {size} bytes, more than the {human(MAX_HEAP)} posenc checks or overlapping others"
        )
    heap = g.read(collection, size, what)
    header = 8 + g.length_size  # an object's: index (2), references (2), reserved (4), size
    at, count = 8 + g.length_size, 0
    while at + header <= size:  # a tail too short for an object header is free space
        index = int.from_bytes(heap[at : at + 2], "little")
        length = int.from_bytes(heap[at + 8 : at + header], "little")
        need = length if index == 0 else header + -(-length // 8) * 8  # object 0, the free space, counts its header
        count += 1
        if need == 0 or at + need > size or count > 1 << 16:
            raise FormatError(f"{what} holds an object of {length} bytes at byte {at} that does not fit it")
        at += need
    g.heaps.add(collection)
