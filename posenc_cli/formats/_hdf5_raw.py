"""The byte-level part of the HDF5 reader (:mod:`posenc_cli.formats.hdf5`): what posenc does itself instead of
trusting libhdf5 with a hostile file.

- Chunks (:func:`read_chunks`): read raw with ``read_direct_chunk`` and decoded here, never by HDF5's filter
  pipeline, which inflates a chunk as far as its stream goes whatever its declared size, and may load plugins:
  deflate capped at the declared size, shuffle, fletcher32 (its checksum checked); nothing else.
- Variable-length strings (:func:`check_text_references`): found in the dataset's object header and checked against
  the global heap collection that holds them before libhdf5 reads one, because libhdf5 allocates whatever length a
  reference claims and loops forever on a size-0 heap object.

The rules these enforce are stated in :mod:`posenc_cli.formats.hdf5`'s docstring (its spec).
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

from ..errors import FormatError
from ..system.capacity import human

#: The HDF5 filters posenc decodes (by filter id); a dataset through any other filter is refused.
FILTERS = {1: "deflate (gzip)", 2: "shuffle", 3: "fletcher32"}


_DEFLATE, _SHUFFLE, _FLETCHER32 = 1, 2, 3


#: The largest chunk, uncompressed: a chunk is decoded whole to read any part of it (h5py's chunks are at most 1 MiB).
MAX_CHUNK = 16 << 20


#: The longest name or text attribute posenc reads, in UTF-8 bytes.
MAX_TEXT = 4096


#: The largest global heap collection (where HDF5 keeps variable-length strings) posenc checks before libhdf5 reads
#: a string from it; HDF5 makes them 4 KiB, or as large as one object needs.
MAX_HEAP = 16 << 20


#: What h5py and libhdf5 raise on a file they cannot read.
ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError, zlib.error)


@dataclass(frozen=True)
class Dataset:
    """A dataset checked for reading, none of its data read yet."""

    key: str
    path: str
    node: Any  # h5py.Dataset
    shape: tuple[int, ...]
    dtype: np.dtype[Any]  # as stored: the file's byte order
    chunk: tuple[int, ...] | None
    filters: tuple[tuple[int, tuple[int, ...]], ...]


@contextlib.contextmanager
def reading(what: str) -> Iterator[None]:
    """Turn what h5py or libhdf5 raise into one ``FormatError`` line starting with ``what``."""
    try:
        yield
    except FormatError:
        raise
    except ERRORS as exc:
        raise FormatError(f"{what}: {' '.join(str(exc).split()) or type(exc).__name__}") from None


def shown(raw: bytes, limit: int = 200) -> str:
    """Up to ``limit`` characters of a name from the file, for a message (``repr`` escapes it)."""
    return bytes(raw[:limit]).decode("utf-8", "backslashreplace") + ("..." if len(raw) > limit else "")


def read_chunks(d: Dataset, out: np.ndarray, file_size: int) -> None:
    """Every chunk of ``d`` written, decoded into ``out`` (the whole dataset, holding the fill value)."""
    assert d.chunk is not None
    for offset in itertools.product(*(range(0, n, c) for n, c in zip(d.shape, d.chunk, strict=True))):
        block = chunk_at(d, offset, file_size)
        if block is None:
            continue  # never written: the fill value
        region = tuple(slice(o, min(o + c, n)) for o, c, n in zip(offset, d.chunk, d.shape, strict=True))
        out[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]


def chunk_at(d: Dataset, offset: tuple[int, ...], file_size: int) -> np.ndarray | None:
    """The chunk of ``d`` that starts at ``offset``, decoded (the chunk's whole shape, in the file's byte order), or
    ``None`` when it was never written."""
    assert d.chunk is not None
    nbytes = math.prod(d.chunk) * d.dtype.itemsize
    where = f"chunk {offset} of dataset {d.path!r}"
    info = d.node.id.get_chunk_info_by_coord(offset)
    if info.byte_offset is None:
        return None
    # Deflate adds 0.03% and a few bytes to data it cannot compress, fletcher32 four.
    if info.size > nbytes + nbytes // 64 + 1024 or info.byte_offset + info.size > file_size:
        raise FormatError(
            f"{where} claims {info.size} stored bytes at offset {info.byte_offset}, for {nbytes} bytes of data "
            f"in a file of {file_size}"
        )
    mask, raw = d.node.id.read_direct_chunk(offset)
    data = _decode(bytes(raw), int(mask), d, nbytes, where)
    return np.frombuffer(data, d.dtype).reshape(d.chunk)


def _decode(data: bytes, mask: int, d: Dataset, nbytes: int, where: str) -> bytes:
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


_CONTINUATION, _ATTRIBUTE = 0x10, 0x0C  # object header message types


@dataclass
class Geometry:
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


def geometry(fp: BinaryIO, f: Any, file_size: int) -> Geometry:
    plist = f.id.get_create_plist()
    addr_size, length_size = plist.get_sizes()
    return Geometry(fp, int(plist.get_userblock()), int(addr_size), int(length_size), file_size)


def check_text_references(g: Geometry, d: Dataset, names: set[bytes]) -> None:
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
        what = f"attribute {shown(name)!r} of dataset {d.path!r}"
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
            f"attribute {shown(name)!r} of dataset {d.path!r} is variable-length text kept outside the dataset's "
            "object header (dense or shared attribute storage), where posenc cannot check it before reading it"
        )


def _attribute_messages(g: Geometry, address: int, chunks: int, path: str) -> Iterator[tuple[bytes, bytes]]:
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


def _header_messages(g: Geometry, address: int, chunks: int, what: str) -> list[tuple[int, int, bytes]]:
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


def _first_chunk(g: Geometry, address: int, what: str) -> tuple[tuple[int, int], bool, int]:
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


def _check_heap(g: Geometry, collection: int) -> None:
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
