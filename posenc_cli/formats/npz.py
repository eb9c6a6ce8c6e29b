"""NumPy ``.npz``: every array of a table in one ZIP archive, readable by ``numpy.load`` without pickles.

Spec: https://numpy.org/doc/stable/reference/generated/numpy.savez.html (a ZIP of ``.npy`` members); ZIP itself:
https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT.

Layout written: one stored (uncompressed) member ``<name>.npy`` per array, in the table's order, each an NPY 1.0 file
exactly as :mod:`posenc_cli.formats.npy` writes it, and nothing else: ``numpy.load(f)`` holds exactly the table's
arrays, every value an ``ndarray``, so ``{k: torch.from_numpy(v) for k, v in numpy.load(f).items()}`` works.

posenc's record, the table's kind and parameters, is the archive comment (APPNOTE 4.3.16: the text after the end of
central directory record), where numpy never looks: canonical JSON, sorted keys, no spaces, ASCII only,
``{"generator":"posenc X.Y.Z","kind":...,"params":{...}}`` (the ``"posenc"`` entry of a ``.safetensors`` header,
byte for byte). ``unzip -z`` shows it; ``zipfile.ZipFile(f).comment`` reads it. Why these choices:

- ASCII only: ZIP gives the archive comment no encoding (the UTF-8 flag, bit 11, covers member names and member
  comments), so only ASCII reads the same in every tool. JSON escapes every other character, control characters
  included, so the comment never holds the end record's signature ``PK\x05\x06`` either, which a reader that
  searches backwards for the end record (as ``zipfile`` does) could take for the real one.
- At most :data:`MAX_COMMENT` (65535) bytes: the comment's length is a 16-bit field. posenc's own tables record a
  few hundred bytes; only parameters read from another file (a long string in a ``.safetensors`` record) can take
  more, and such a table is refused with :class:`~posenc_cli.errors.FormatError` before any byte is written: an
  ``.npz`` that silently lost its record would read back as a bare ``"array"``, and every other place in an archive
  either is a member, which numpy returns (the very thing this layout avoids), or is bounded alike (a member's
  extra field or comment). ``.safetensors``, whose header holds up to :data:`~.limits.MAX_METADATA` bytes, takes
  such a table.

Member names: an array's key may come from a hostile file (a tensor named ``../../x``), so ``<name>`` is
:func:`~posenc_cli.formats.identifiers.member_names` of the keys: a key of letters, digits and ``_ . + -`` is kept,
any other is mapped to an identifier (``../../x`` is stored as ``x.npy``), so no member posenc writes is a path for
whoever extracts the archive; two keys that map to one name are refused.

Reproducible: every member has the same fixed timestamp (1980-01-01 00:00, the earliest ZIP can store), fixed
permissions and no extra fields; ZIP64 records only when an array needs them (4 GiB and more). Arrays are written in
row blocks, so a table produced block by block streams into the archive.

Round trip: arrays, dtypes, shapes, kind and parameters (array names as :func:`member_names` makes them).

The earlier layout, the record as a last member ``posenc.json`` (canonical JSON, two-space indent), is still read:
an ``.npz`` written before keeps its parameters. posenc no longer writes it.

:func:`stream` (``posenc inspect`` and ``verify``) checks and claims what :func:`load` does, as below, then reads each
array as it is used: a :class:`~posenc_cli.table.FileArray` that inflates its member (or reads a stored one) from
where it stands, a block at a time, so the memory is a block, never the declared size. Reading an array in order
inflates its member once, and its end and CRC-32 are checked when its last value is read; a read behind the one
before starts the member again. An array in ``fortran_order`` is read whole (see :mod:`~posenc_cli.formats.npy`).
:func:`load` is :func:`stream` with every array read whole.

Reading (the archive may be hostile):

- the central directory, from the archive's end records (ZIP64 ones included), may list at most
  :data:`MAX_MEMBERS` members (:data:`~.limits.MAX_ARRAYS` arrays and an old-form ``posenc.json``) in at most
  :data:`~.limits.MAX_METADATA` bytes: checked before :mod:`zipfile` builds an object per member;
- the archive ends where its comment does: the bytes after the end record must be exactly the comment its length
  field declares (a length that lies, or bytes appended after the comment, are refused);
- every member must be ``<key>.npy`` (the array ``<key>``) or ``posenc.json``; any other member, and a name that
  appears twice (which ``zipfile`` would resolve silently, last wins), is refused, never ignored;
- members must be stored or deflated (what ``numpy.savez`` and ``savez_compressed`` write); encrypted members,
  patched data and every other method (deflate64, bzip2, lzma, ...) are refused;
- a member's data is read by posenc from where its local header ends (once ``zipfile`` has checked that header),
  never past the compressed size the directory gives it (which must lie inside the file), and must be exactly the
  size the directory gives: inflating stops there, and a deflate stream that would give one byte more, ends before
  it, leaves compressed bytes unread or stops inside its stream is refused, as is a stored member whose stored and
  uncompressed sizes differ. The work is bounded by the table: the declared size, inflated once;
- each ``.npy`` member is read like an ``.npy`` file (:mod:`posenc_cli.formats.npy`: versions, dtypes, shapes) and
  its size in the directory must be exactly its header plus the data the header declares. Every array's size is
  claimed from the read's :class:`~posenc_cli.formats.limits.Budget` before any data is read, then each member is
  inflated :data:`~posenc_cli.formats.npy.CHUNK` bytes at a time into memory allocated once: a small member that
  inflates to gigabytes costs the size its header declares (refused when that is past the budget), and inflating
  stops where the directory says the member ends (its CRC is checked there);
- the record: the archive comment, when it is not empty, must be posenc's record, and so must a ``posenc.json``
  member (:func:`~posenc_cli.formats.npy.parse_meta`: strict UTF-8 JSON, no ``NaN`` or ``Infinity``, no key twice,
  nesting at most :data:`~.limits.MAX_NESTING` levels, an object with a string ``kind`` and ``params`` of scalars);
  any other comment is refused, not ignored. An archive with both a record comment and a ``posenc.json`` member is
  refused, whether or not they agree: posenc writes one, and a reader must not have to pick (numpy users see the
  member, posenc the comment). With neither, the table is of kind ``"array"`` (what ``numpy.savez`` writes).
"""

from __future__ import annotations

import contextlib
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..system.capacity import human
from ..table import Array, FileArray, Param, Table
from . import npy
from ._blocks import raw_bytes, row_blocks
from .identifiers import member_names
from .limits import MAX_ARRAYS, MAX_METADATA, Budget, check_count
from .options import WriteOptions

#: The member that carried the table's kind and parameters in the earlier layout: read, no longer written.
META = "posenc.json"
#: The most bytes of a ZIP archive comment (its length is a 16-bit field, APPNOTE 4.3.16), so of posenc's record.
MAX_COMMENT = 0xFFFF
#: ZIP's earliest date: members carry no build time.
EPOCH = (1980, 1, 1, 0, 0, 0)
#: The most members posenc reads from an archive: the arrays and ``posenc.json``.
MAX_MEMBERS = MAX_ARRAYS + 1
#: The compression methods posenc inflates: the two numpy writes.
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
#: General purpose flag bits (APPNOTE 4.4.4) of members posenc refuses, with what they mean.
REFUSED_FLAGS = {0x1: "encrypted", 0x20: "compressed patched data", 0x40: "strongly encrypted"}

# The end records (APPNOTE 4.3.14 to 4.3.16): end of central directory, ZIP64 locator, ZIP64 end of central directory.
_END = struct.Struct("<4s4H2LH")
_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
#: What ``zipfile`` and ``zlib`` raise on a damaged archive or member.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError)


def _info(name: str, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    info.create_system = 3  # Unix: the same bytes on every platform
    info.file_size = size
    return info


def record(table: Table) -> bytes:
    """posenc's record of ``table``, as the archive comment holds it (see the module docstring); ``FormatError``
    when it cannot be one (a NaN or infinite parameter, or more than :data:`MAX_COMMENT` bytes).

    Examples
    --------
    >>> record(Table("alibi", {"slopes": np.ones(2)}, {"heads": 2}))  # doctest: +ELLIPSIS
    b'{"generator":"posenc ...","kind":"alibi","params":{"heads":2}}'
    """
    meta = {"generator": f"posenc {__version__}", "kind": table.kind, "params": dict(table.params)}
    try:
        text = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except ValueError:
        raise FormatError("an .npz records its parameters as JSON, which holds no NaN or infinity") from None
    if len(text) > MAX_COMMENT:
        raise FormatError(
            f"the table's kind and parameters take {len(text)} bytes as JSON, more than the {MAX_COMMENT} of the ZIP "
            "comment where an .npz keeps them; write .safetensors, which holds them whatever their size"
        )
    return text.encode("ascii")


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write every array of ``table`` to ``fp`` as an ``.npz``, its kind and parameters as the archive comment."""
    comment = record(table)  # first: a table whose record cannot be written costs no array
    names = member_names(list(table.arrays))
    with zipfile.ZipFile(fp, "w", allowZip64=True) as archive:
        for name, array in zip(names, table.arrays.values(), strict=True):
            dtype = array.dtype.newbyteorder("<")
            head = npy.header(array.shape, dtype)
            size = len(head) + array.size * dtype.itemsize
            with archive.open(_info(f"{name}.npy", size), "w", force_zip64=size >= 1 << 32) as member:
                member.write(head)
                for _, block in row_blocks(array):
                    member.write(raw_bytes(block, dtype))
        archive.comment = comment


def _directory(fp: BinaryIO) -> tuple[int, int]:
    """How many members and bytes the central directory declares, read from the end records where ``zipfile``
    reads them (the ZIP64 record when there is one), before ``zipfile`` builds an object per member."""
    size = fp.seek(0, 2)
    fp.seek(max(0, size - _END.size - 0xFFFF - _LOCATOR.size - _END64.size))
    tail = fp.read()
    at = len(tail) - _END.size  # zipfile first looks for a record without a comment, then searches for one
    if at < 0 or not (tail.startswith(b"PK\x05\x06", at) and tail.endswith(b"\0\0")):
        at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise FormatError("not a valid .npz file: it has no ZIP end of central directory record")
    members, length = _END.unpack_from(tail, at)[4:6]
    comment, after = _END.unpack_from(tail, at)[7], len(tail) - at - _END.size
    if comment != after:  # zipfile would take the comment cut short, or ignore what follows it
        raise FormatError(
            f"not a valid .npz file: its ZIP end record declares a comment of {comment} bytes, and {after} bytes "
            "follow the record; posenc reads an archive that ends where its comment does"
        )
    locator = at - _LOCATOR.size
    record = locator - _END64.size
    if record >= 0 and tail.startswith(b"PK\x06\x07", locator) and tail.startswith(b"PK\x06\x06", record):
        members, length = _END64.unpack_from(tail, record)[7:9]
    fp.seek(0)
    return int(members), int(length)


def _open(fp: BinaryIO) -> zipfile.ZipFile:
    """The archive, once its central directory is known to be small (see the module docstring)."""
    members, length = _directory(fp)
    check_count(members, MAX_MEMBERS, "ZIP members")
    if length > MAX_METADATA:
        raise FormatError(
            f"its ZIP central directory takes {length} bytes, more than the {human(MAX_METADATA)} posenc reads"
        )
    try:
        return zipfile.ZipFile(fp)
    except _ZIP_ERRORS as exc:
        raise FormatError(f"not a valid .npz file: {exc}") from None


def _check_members(members: list[zipfile.ZipInfo]) -> None:
    """Refuse, before reading any data, what posenc does not read: see the module docstring."""
    check_count(len(members), MAX_MEMBERS, "ZIP members")
    seen: set[str] = set()
    for info in members:
        name = info.filename
        if name in seen:
            raise FormatError(f"member {name!r} appears twice in the .npz; posenc does not pick one")
        seen.add(name)
        if name != META and not name.endswith(".npy"):
            raise FormatError(f"member {name!r} of the .npz is neither <name>.npy nor {META}; posenc reads only those")
        for bit, what in REFUSED_FLAGS.items():
            if info.flag_bits & bit:
                raise FormatError(f"member {name!r} of the .npz is {what}; posenc reads plain members only")
        if info.compress_type not in METHODS:
            raise FormatError(
                f"member {name!r} of the .npz uses ZIP compression method {info.compress_type}; posenc reads "
                "stored and deflated members only (what numpy writes)"
            )


@contextlib.contextmanager
def _reading(name: str) -> Iterator[None]:
    """Every error while reading member ``name`` as one ``FormatError`` that names it."""
    try:
        yield
    except FormatError as exc:
        raise FormatError(f"member {name!r} of the .npz: {exc}") from None
    except _ZIP_ERRORS as exc:
        raise FormatError(f"member {name!r} of the .npz is unreadable: {exc}") from None


#: The local file header (APPNOTE 4.3.7): signature, versions, flags, method, time, date, CRC, sizes, name and extra
#: field lengths.
_LOCAL = struct.Struct("<4s5H3L2H")
#: Compressed bytes read from the archive at a time.
_INPUT = 1 << 16


class _Member:
    """The uncompressed bytes of one member, read in order from the archive ``fp`` (shared: every read seeks) and
    checked as the module docstring says; ``read(n)`` gives the next ``n`` (fewer only where the data ends)."""

    def __init__(self, fp: BinaryIO, info: zipfile.ZipInfo, archive_size: int) -> None:
        fp.seek(info.header_offset)
        local = fp.read(_LOCAL.size)
        if len(local) != _LOCAL.size or local[:4] != b"PK\x03\x04":
            raise FormatError("its local header is missing or damaged")
        name_length, extra_length = _LOCAL.unpack(local)[-2:]
        self.fp, self.info = fp, info
        self.start = info.header_offset + _LOCAL.size + name_length + extra_length
        self.size = info.file_size
        if self.start + info.compress_size > archive_size:
            raise FormatError(
                f"its {info.compress_size} compressed bytes at byte {self.start} run past the end of the archive "
                f"({archive_size} bytes)"
            )
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise FormatError(
                f"it is stored (not compressed) in {info.compress_size} bytes, and the directory gives it "
                f"{info.file_size}"
            )
        self.restart()

    def restart(self) -> None:
        """Back to the member's first byte."""
        self.position = 0  # uncompressed bytes given so far
        self.taken = 0  # compressed bytes read so far
        self.crc = 0
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS) if self.info.compress_type == zipfile.ZIP_DEFLATED else None

    def seek(self, position: int) -> None:
        """Make ``position`` the next byte ``read`` gives: from the start again when it lies behind, else by
        reading (and checking) the bytes before it."""
        if position < self.position:
            self.restart()
        while self.position < position:
            self.read(min(npy.CHUNK, position - self.position))

    def read(self, n: int) -> bytes:
        n = max(0, min(n, self.size - self.position))
        data = self._inflate(n) if self.inflater is not None else self._input(n)
        if len(data) < n:
            raise FormatError(
                f"its data ends after {self.position + len(data)} bytes, and the directory gives it {self.size}"
            )
        self.position += len(data)
        self.crc = zlib.crc32(data, self.crc)
        if self.position == self.size and n:
            self._end()
        return data

    def _input(self, n: int) -> bytes:
        """The next ``n`` compressed bytes (fewer where the member's compressed size ends)."""
        n = min(n, self.info.compress_size - self.taken)
        self.fp.seek(self.start + self.taken)
        data = self.fp.read(n)
        self.taken += len(data)
        return data

    def _inflate(self, n: int) -> bytes:
        assert self.inflater is not None
        pieces, got = [], 0
        while got < n and not self.inflater.eof:
            data = self.inflater.unconsumed_tail or self._input(_INPUT)
            if not data:
                break  # the compressed bytes end inside the stream: too short, said by read
            piece = self._step(data, n - got)
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)

    def _step(self, data: bytes, most: int) -> bytes:
        """Up to ``most`` bytes inflated from ``data``; ``FormatError`` if zlib neither gives nor takes a byte."""
        assert self.inflater is not None
        piece = self.inflater.decompress(data, most)
        if not piece and not self.inflater.eof and len(self.inflater.unconsumed_tail) == len(data):
            raise FormatError("its deflate stream makes no progress")
        return piece

    def _end(self) -> None:
        """At the last byte the directory gives: nothing may follow, the stream must end, the CRC-32 must match."""
        if self.inflater is not None:
            while not self.inflater.eof:
                data = self.inflater.unconsumed_tail or self._input(_INPUT)
                if not data:
                    raise FormatError("its compressed data ends inside its deflate stream: it is truncated")
                if self._step(data, 1):
                    raise FormatError(
                        f"it inflates past the {self.size} bytes the directory gives it: posenc reads exactly those"
                    )
            left = len(self.inflater.unused_data) + self.info.compress_size - self.taken
            if left:
                raise FormatError(f"it holds {left} compressed bytes after the end of its deflate stream")
        if self.crc != self.info.CRC:
            raise FormatError(
                f"Bad CRC-32 of its data: {self.crc:08x}, where the directory records {self.info.CRC:08x}"
            )


def _header(member: _Member, info: zipfile.ZipInfo) -> npy.Header:
    """The member's NPY header, checked against the size the directory gives the member."""
    head = npy.read_header(member)
    declared = head.size + head.nbytes
    if info.file_size != declared:
        raise FormatError(
            f"it holds {info.file_size} bytes, and its .npy header declares {declared} "
            f"({head.size} of header, {head.nbytes} of data): posenc reads exactly what the header declares"
        )
    return head


_Opened = tuple[str, str, _Member, npy.Header]


def _opened(archive: zipfile.ZipFile, fp: BinaryIO, members: list[zipfile.ZipInfo], budget: Budget) -> list[_Opened]:
    """Every ``.npy`` member as ``(member name, key, member, header)``: all headers read, all sizes claimed, no
    data read yet."""
    size = fp.seek(0, 2)
    opened = []
    for info in members:
        key = info.filename[: -len(".npy")]
        with _reading(info.filename):
            with archive.open(info):  # zipfile's own checks of the local header (its name, its flags)
                pass
            member = _Member(fp, info, size)
            head = _header(member, info)
            npy.claim(budget, head, f"array {key!r}")
        opened.append((info.filename, key, member, head))
    return opened


def _stored(name: str, key: str, member: _Member, head: npy.Header) -> Array:
    """The array of ``member`` read as it is used (read whole when it cannot be: see the module docstring)."""
    what = f"array {key!r}"
    if head.fortran_order or not head.shape:
        with _reading(name):
            return npy.read_data(member, head, what)
    itemsize = head.dtype.itemsize

    def flat(start: int, stop: int) -> np.ndarray:
        with _reading(name):
            member.seek(head.size + start * itemsize)
            return npy.fill(np.empty(max(0, stop - start), head.dtype), member.read, what)

    return FileArray(head.shape, head.dtype.newbyteorder("="), flat)


def _meta(archive: zipfile.ZipFile, metas: list[zipfile.ZipInfo]) -> tuple[str, dict[str, Param]]:
    """The kind and parameters of the archive's record: its comment, or an old-form ``posenc.json`` member."""
    if archive.comment and metas:
        raise FormatError(
            f"the .npz holds posenc's record twice, as its ZIP comment and as a {META} member; posenc writes one, "
            "and does not pick"
        )
    if archive.comment:
        kind, params, _ = npy.parse_meta(archive.comment, "ZIP comment of the .npz (posenc's record)")
        return kind, params
    if not metas:
        return "array", {}
    info = metas[0]
    with _reading(info.filename):
        if info.file_size > MAX_METADATA:
            raise FormatError(f"it takes {info.file_size} bytes, more than the {human(MAX_METADATA)} posenc reads")
        with archive.open(info) as member:
            data = member.read(MAX_METADATA + 1)
        kind, params, _ = npy.parse_meta(data, "posenc metadata")
    return kind, params


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every ``.npy`` member (never unpickling) and the parameters; ``FormatError`` when it is not an .npz
    posenc reads (see the module docstring). The arrays are those of :func:`stream`, each read whole.

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"../x": np.arange(3.0)}), buffer, WriteOptions())
    >>> list(load(buffer).arrays)
    ['x']
    """
    with stream(fp, budget) as table:
        return Table(table.kind, {key: np.asarray(array) for key, array in table.arrays.items()}, table.params)


@contextlib.contextmanager
def stream(fp: BinaryIO, budget: Budget | None = None) -> Iterator[Table]:
    """The table of the .npz in ``fp``, every member checked and every array's size claimed, each array read from
    its member as it is used (``fp`` must stay open: see the module docstring).

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"x": np.arange(3.0)}), buffer, WriteOptions())
    >>> with stream(buffer) as table:
    ...     table.arrays["x"].flat(1, 3).tolist()
    [1.0, 2.0]
    """
    budget = budget or Budget()
    with _open(fp) as archive:
        members = archive.infolist()
        _check_members(members)
        opened = _opened(archive, fp, [info for info in members if info.filename != META], budget)
        kind, params = _meta(archive, [info for info in members if info.filename == META])
    if not opened:
        raise FormatError("the .npz holds no .npy member")
    yield Table(kind, {key: _stored(name, key, member, head) for name, key, member, head in opened}, params)
