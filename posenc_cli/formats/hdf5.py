"""HDF5 (``.h5``, ``.hdf5``): one dataset per array, parameters as attributes.

Spec: https://docs.hdfgroup.org/hdf5/develop/_f_m_t3.html (written through h5py, read by any HDF5 tool).

Layout written:

- A single-array table becomes one dataset at the root, named by the table's name (``--name``; by default the
  output file's stem), shape ``(seq_len, d_model)``, row-major, contiguous, the table's dtype (``<f4``/``<f8``).
- Every dataset has its array's shape (any number of dimensions: a ``(heads, query, key)`` bias is 3-D) and its
  array's own storage type, little-endian: ``<i2`` (``H5T_STD_I16LE``) for int16 indices and q15 codes beside
  ``<f4`` in one table, and so on.
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

- Where: every dataset of the file, found by walking its groups from the root (links in the order HDF5 keeps
  them, by name; depth first). A dataset's key is its path without the leading ``/``: ``pe`` at the root,
  ``grp/emb`` or ``model_weights/pos/embeddings`` in groups (Keras' layout). posenc's own layout of a table written
  with a group name reads as it is written: when the root holds no dataset and one group, and that group holds
  datasets and no group, the keys are the datasets' names in it (``cos``, not ``rope/cos``).
- The walk is bounded before it goes on: groups nest at most :data:`~posenc_cli.formats.limits.MAX_NESTING` levels
  below the root; at most :data:`~posenc_cli.formats.limits.MAX_GROUPS` groups,
  :data:`~posenc_cli.formats.limits.MAX_ARRAYS` datasets and :data:`MAX_LINKS` links in all (a group's link count is
  checked before any of its links is looked at). Only hard links are followed: a soft link or an external link is
  refused, never followed (so a soft-link loop costs nothing, and no other file is opened), and so is a second hard
  link to a group already reached (a hard-link loop, or one group under two names). Named datatypes (types
  committed to the file, no data) are skipped.
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
- In parts (:func:`stream`, what ``posenc inspect`` and ``verify`` read): the same checks and claims, then each
  dataset is a :class:`~posenc_cli.table.FileArray` read as it is used, so the memory is a block, not the declared
  size. A contiguous dataset is read at its offset in the file (its storage must be exactly its declared size,
  inside the file; never written, it reads as its fill value); a chunked one a row of chunks at a time
  (:class:`~._hdf5_values.ChunkRows`: each chunk decoded once when read in order), unless that row of chunks is
  larger than :data:`~._hdf5_values.MAX_BAND`: tall chunks across a wide table cannot be read in parts without
  decoding each chunk many times, so such a dataset is read whole, within the budget, as :func:`load` reads it.
  Compact datasets (64 KiB at most) and scalars are read whole.
- Attributes: at most :data:`~posenc_cli.formats.limits.MAX_ATTRIBUTES` per dataset, each one value (a scalar or a
  single element): an integer, a float, or UTF-8 text of at most :data:`MAX_TEXT` bytes; their type, shape and size
  are checked before their value is read. ``kind`` must be text; ``generator`` is ignored; every other attribute is a
  parameter: a finite number, an integer of at most 64 bits, text (:func:`~.limits.check_param`). An attribute that
  two datasets give different values (``seq_len`` 4 on ``cos``, 3 on ``sin``; posenc writes one value on every
  dataset) is refused, never settled by which dataset comes last.
- Variable-length strings (how posenc and h5py write text) are checked from the file's bytes before libhdf5 reads
  them, because libhdf5 allocates what a string's stored length claims before it finds the claim false (4 GiB for
  two flipped bytes) and walks a global heap collection forever when an object in it has size 0: each string's
  reference is found in the dataset's object header (version 1 or 2) and must claim at most :data:`MAX_TEXT` bytes,
  in a collection of at most :data:`~._hdf5_raw.MAX_HEAP` bytes whose objects fit it. A variable-length string kept
  elsewhere (dense or shared attribute storage: more than 8 attributes in HDF5's newer file format) is refused.
- Names of links and attributes: UTF-8 of at most :data:`MAX_TEXT` bytes. Names and strings are data, returned as
  they are (whoever prints or writes them escapes or maps them).

Errors from h5py and libhdf5 on a corrupt file become ``FormatError`` naming the dataset when there is one. The
byte-level work (decoding chunks, checking strings against the global heap) is in :mod:`._hdf5_raw`, the reading of
values (whole, or in parts) in :mod:`._hdf5_values`.

Round trip: arrays, dtypes, shapes, kind and parameters.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..system.capacity import human
from ..table import Param, Table
from ._blocks import row_blocks
from ._hdf5_raw import (
    FILTERS,
    MAX_CHUNK,
    MAX_TEXT,
    Dataset,
    check_text_references,
    geometry,
    reading,
    shown,
)
from ._hdf5_values import in_parts, read_whole
from .identifiers import member_names
from .limits import (
    MAX_ARRAYS,
    MAX_ATTRIBUTES,
    MAX_DIMS,
    MAX_GROUPS,
    MAX_NESTING,
    Budget,
    check_count,
    check_param,
)
from .options import WriteOptions

#: The most chunks (written or not) of one dataset: each costs a look-up in the file's chunk index.
MAX_CHUNKS = 1 << 18

#: The most links the walk of a file's groups looks at: each costs a look-up of the object it leads to, and each is
#: a dataset, a group or a named datatype.
MAX_LINKS = MAX_ARRAYS + MAX_GROUPS

#: What a dataset of each HDF5 type class holds (``H5T_class_t``, stable since HDF5 1.8), for messages.
_CLASSES = (
    "integers", "floats", "times", "strings", "bit fields", "opaque bytes", "compound records", "references",
    "enum values (h5py's booleans among them)", "variable-length sequences", "arrays", "complex numbers",
)  # fmt: skip


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


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every dataset of an HDF5 file (the rules are in the module docstring); ``FormatError`` when it is not
    a table posenc reads, before any memory past ``budget`` is taken."""
    import h5py

    budget = budget or Budget()
    file_size = fp.seek(0, 2)
    fp.seek(0)
    with reading("not a readable HDF5 file"), h5py.File(fp, "r") as f:
        found = _table_datasets(f)
        datasets = [_check(entry.parent, entry.raw, key, entry.path, budget) for entry, key in found]
        kind, params = _kind_and_params(datasets, fp, f, file_size)
        arrays = {d.key: read_whole(d, file_size) for d in datasets}
    return Table(kind, arrays, params)


@contextlib.contextmanager
def stream(fp: BinaryIO, budget: Budget | None = None) -> Iterator[Table]:
    """The table of :func:`load`, checked and claimed as :func:`load` does, each dataset read from ``fp`` (which
    must stay open, as the HDF5 file does until the context ends) as it is used (see the module docstring).

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"pe": np.arange(6.0).reshape(2, 3)}), buffer, WriteOptions(name="pe"))
    >>> with stream(buffer) as table:
    ...     table.array.flat(2, 4).tolist()
    [2.0, 3.0]
    """
    import h5py

    budget = budget or Budget()
    file_size = fp.seek(0, 2)
    fp.seek(0)
    with reading("not a readable HDF5 file"):
        f = h5py.File(fp, "r")
    try:  # the caller's errors pass through unchanged: only reading is wrapped
        with reading("not a readable HDF5 file"):
            found = _table_datasets(f)
            datasets = [_check(entry.parent, entry.raw, key, entry.path, budget) for entry, key in found]
            kind, params = _kind_and_params(datasets, fp, f, file_size)
            arrays = {d.key: in_parts(d, fp, file_size) for d in datasets}
        yield Table(kind, arrays, params)
    finally:
        f.close()


@dataclass(frozen=True)
class _Entry:
    """A hard link the walk found, nothing opened through it yet."""

    parent: Any  # the h5py GroupID that holds it
    raw: bytes  # its name as stored
    path: str  # "/grp/emb"
    kind: int  # what it leads to: h5o.TYPE_DATASET, TYPE_GROUP or TYPE_NAMED_DATATYPE


def _table_datasets(f: Any) -> list[tuple[_Entry, str]]:
    """The datasets that make the table, each with its key (the rules are in the module docstring)."""
    from h5py import h5o

    walk = _Walk(f.id)
    top = walk.entries(f.id, "/")
    groups = [e for e in top if e.kind == h5o.TYPE_GROUP]
    if len(groups) == 1 and not any(e.kind == h5o.TYPE_DATASET for e in top):
        only = groups[0]
        inner = walk.entries(walk.open(only), only.path + "/")
        kinds = {e.kind for e in inner}
        if h5o.TYPE_DATASET in kinds and h5o.TYPE_GROUP not in kinds:  # posenc's layout: a table under a group name
            return [(e, e.path[len(only.path) + 1 :]) for e in inner if e.kind == h5o.TYPE_DATASET]
        found = walk.datasets([only], inner)
    else:
        found = walk.datasets([], top)
    if not found:
        raise FormatError("the HDF5 file holds no dataset, at its root or in any group")
    return [(e, e.path[1:]) for e in found]


class _Walk:
    """The walk of a file's groups, with what it has counted so far (every limit is checked as it goes)."""

    def __init__(self, root: Any) -> None:
        from h5py import h5o

        self.links = self.groups = self.datasets_seen = 0
        self.reached: dict[int, str] = {int(h5o.get_info(root).addr): "/"}  # group address -> its path

    def datasets(self, above: list[_Entry], entries: list[_Entry]) -> list[_Entry]:
        """The datasets among ``entries`` and, depth first, in every group among them (``above``: the groups the
        walk is in, below the root)."""
        from h5py import h5o

        found = []
        for entry in entries:
            if entry.kind == h5o.TYPE_DATASET:
                found.append(entry)
            elif entry.kind == h5o.TYPE_GROUP:
                if len(above) + 1 > MAX_NESTING:
                    raise FormatError(
                        f"the HDF5 group {entry.path!r} lies {len(above) + 1} groups below the root, deeper than the "
                        f"{MAX_NESTING} levels posenc reads"
                    )
                inner = self.entries(self.open(entry), entry.path + "/")
                found += self.datasets([*above, entry], inner)
        return found

    def open(self, entry: _Entry) -> Any:
        """The GroupID of the group ``entry`` leads to."""
        from h5py import h5g

        with reading(f"the HDF5 group {entry.path!r} is unreadable"):
            return h5g.open(entry.parent, entry.raw)

    def entries(self, gid: Any, where: str) -> list[_Entry]:
        """Every link of the group ``gid`` (whose path is ``where``, ending in ``/``), each counted and checked:
        hard links only, no group reached twice."""
        from h5py import h5l, h5o

        with reading(f"the HDF5 group {where!r} is unreadable"):
            count = int(gid.get_num_objs())
        self.links += count
        check_count(self.links, MAX_LINKS, f"links (counted as far as the HDF5 group {where!r})")
        entries = []
        for raw in gid:
            path = where + _text(raw, f"a name in the HDF5 group {where!r}")
            with reading(f"the HDF5 link {path!r} is unreadable"):
                link = gid.links.get_info(raw).type
                if link == h5l.TYPE_SOFT:
                    target = shown(gid.links.get_val(raw))
                    raise FormatError(
                        f"{path!r} is a soft link to {target!r}; posenc follows no link, it reads datasets only"
                    )
                if link == h5l.TYPE_EXTERNAL:
                    file, node = (shown(part) for part in gid.links.get_val(raw))
                    raise FormatError(
                        f"{path!r} is an external link to {node!r} in the file {file!r}; posenc never reads another "
                        "file"
                    )
                if link != h5l.TYPE_HARD:
                    raise FormatError(f"{path!r} is a user-defined HDF5 link (type {link}); posenc follows no link")
                info = h5o.get_info(gid, raw)
            entry = _Entry(gid, bytes(raw), path, int(info.type))
            if entry.kind == h5o.TYPE_GROUP:
                self._reach(int(info.addr), path)
            elif entry.kind == h5o.TYPE_DATASET:
                self.datasets_seen += 1
            elif entry.kind != h5o.TYPE_NAMED_DATATYPE:
                raise FormatError(f"{path!r} leads to an HDF5 object of unknown type {entry.kind}")
            entries.append(entry)
        check_count(self.datasets_seen, MAX_ARRAYS, f"datasets (counted as far as the HDF5 group {where!r})")
        return entries

    def _reach(self, address: int, path: str) -> None:
        if address in self.reached:
            raise FormatError(
                f"{path!r} is a second hard link to the group {self.reached[address]!r} (a loop, or one group under "
                "two names); posenc walks each group once"
            )
        self.reached[address] = path
        self.groups += 1
        check_count(self.groups, MAX_GROUPS, f"HDF5 groups (counted as far as {path!r})")


def _text(raw: bytes, what: str) -> str:
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{what} is not UTF-8 text: {shown(raw)!r}") from None
    if len(raw) > MAX_TEXT:
        raise FormatError(f"{what} is {len(raw)} bytes long, more than the {MAX_TEXT} posenc reads")
    return text


def _check(parent: Any, raw: bytes, key: str, path: str, budget: Budget) -> Dataset:
    """Everything about one dataset (the link ``raw`` of the group ``parent``, a GroupID) except its data: storage,
    filters, shape, type; its size claimed."""
    import h5py

    with reading(f"dataset {path!r} is unreadable"):
        node = h5py.Dataset(h5py.h5d.open(parent, raw))
        plist = node.id.get_create_plist()
        chunk = _storage(plist, path)
        filters = _filters(plist, path)
        shape = _shape(node.id.get_space(), path)
        dtype = _number_dtype(node.id.get_type(), f"dataset {path!r}")
        dims = " x ".join(map(str, shape)) or "scalar"
        budget.claim(math.prod(shape) * dtype.itemsize, f"dataset {path!r} ({dims} {dtype.name})")
        if chunk is not None:
            _check_chunks(shape, chunk, dtype, path)
        return Dataset(key, path, node, shape, dtype, chunk, filters)


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
        name = shown(plist.get_external(0)[0])
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
                f"dataset {path!r} is stored through HDF5 filter {code} ({shown(name)!r}); posenc decodes only "
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

    dataset: Dataset
    raw: bytes  # its name as stored
    name: str
    variable: bool  # a variable-length string, kept in a global heap collection


def _kind_and_params(datasets: list[Dataset], fp: BinaryIO, f: Any, file_size: int) -> tuple[str, dict[str, Param]]:
    attributes = [attr for d in datasets for attr in _attributes(d)]
    if any(attr.variable for attr in attributes):
        layout = geometry(fp, f, file_size)
        for d in datasets:
            with reading(f"the object header of dataset {d.path!r} is unreadable"):
                check_text_references(layout, d, {a.raw for a in attributes if a.dataset is d and a.variable})
    found: dict[str, tuple[Param, str]] = {}  # attribute name -> its value and the dataset that gave it first
    for attr in attributes:
        what = f"attribute {attr.name!r} of dataset {attr.dataset.path!r}"
        with reading(f"{what} is unreadable"):
            value = check_param(_param(attr.dataset.node.attrs[attr.raw], what), what)
        if attr.name == "generator":
            continue
        if attr.name == "kind" and not isinstance(value, str):
            raise FormatError(f"{what} is {value!r}, not text")
        first, where = found.setdefault(attr.name, (value, attr.dataset.path))
        if type(first) is not type(value) or first != value:  # 1, 1.0 and True are three parameters
            raise FormatError(
                f"attribute {attr.name!r} is {first!r} on dataset {where!r} and {value!r} on dataset "
                f"{attr.dataset.path!r}; posenc reads one kind and one set of parameters per file"
            )
    kind = found.pop("kind", ("array", ""))[0]
    return str(kind), {name: value for name, (value, _) in found.items()}


def _attributes(d: Dataset) -> list[_Attribute]:
    """Every attribute of ``d``, each checked to be one number or one short string."""
    from h5py import h5a

    with reading(f"the attributes of dataset {d.path!r} are unreadable"):
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


# ------------------------------------------------------------------------------------------------- variable-length text
# libhdf5 reads a variable-length string by allocating (and zeroing) as many bytes as the string's stored length
# says, then reading it from its global heap collection, where it finds a false length too late (a few flipped bits
# cost 4 GiB); and it finds an object in a collection by walking all of them by their sizes, forever when one is 0.
# So before libhdf5 reads any such string, posenc finds its stored reference in the dataset's object header and
# checks both, from the file's bytes.
