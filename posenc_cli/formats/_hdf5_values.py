"""The values of a checked HDF5 dataset (:mod:`posenc_cli.formats.hdf5`): read whole (:func:`read_whole`), or as
a :class:`~posenc_cli.table.FileArray` read a block at a time (:func:`in_parts`, with :class:`ChunkRows` for chunked
datasets). The rules are stated in :mod:`posenc_cli.formats.hdf5`'s docstring (its spec).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..errors import FormatError
from ..table import Array, FileArray
from . import npy
from ._hdf5_raw import Dataset, chunk_at, read_chunks, reading


def read_whole(d: Dataset, file_size: int) -> np.ndarray:
    """The values of a checked dataset, read into an array of its declared size."""
    from h5py import h5s

    native = d.dtype.newbyteorder("=")
    with reading(f"dataset {d.path!r} is unreadable"):
        if d.chunk is None:
            out = np.empty(d.shape, native)
            if out.size:
                d.node.id.read(h5s.ALL, h5s.ALL, out)  # no filters: HDF5 converts the byte order in bounded strips
            return out
        fill = fill_value(d.node.id.get_create_plist(), native)
        zero = fill.tobytes() == bytes(fill.nbytes)  # not -0.0
        out = np.zeros(d.shape, native) if zero else np.full(d.shape, fill, native)  # zeros: pages not yet touched
        read_chunks(d, out, file_size)
    return out


def fill_value(plist: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """What a chunk never written holds."""
    from h5py import h5d

    fill = np.zeros((), dtype)
    if plist.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED:
        plist.get_fill_value(fill)
    return fill


def in_parts(d: Dataset, fp: BinaryIO, file_size: int) -> Array:
    """The values of a checked dataset as a :class:`~posenc_cli.table.FileArray`, or read whole where they cannot
    be read in parts (the module docstring says which)."""
    from h5py import h5d

    what = f"dataset {d.path!r}"
    native = d.dtype.newbyteorder("=")
    if not d.shape or math.prod(d.shape) == 0:
        return read_whole(d, file_size)
    with reading(f"{what} is unreadable"):
        plist = d.node.id.get_create_plist()
        layout = plist.get_layout()
        if layout == h5d.COMPACT:
            return read_whole(d, file_size)
        fill = fill_value(plist, native)
        if d.chunk is not None:
            rows = ChunkRows(d, file_size, fill)
            if rows.band_bytes > MAX_BAND:
                return read_whole(d, file_size)
            return FileArray(d.shape, native, _read_as(what, rows.flat))
        stored = int(d.node.id.get_storage_size())
        offset = d.node.id.get_offset() if stored else None
    nbytes = math.prod(d.shape) * d.dtype.itemsize
    if offset is None:  # never written: every value is the fill value
        return FileArray(d.shape, native, lambda start, stop: np.full(max(0, stop - start), fill, native))
    if stored != nbytes or offset + nbytes > file_size:
        raise FormatError(
            f"{what} keeps its {nbytes} bytes of values in {stored} bytes at offset {offset}, in a file of "
            f"{file_size}: not the contiguous storage its shape declares"
        )
    values = npy.array_at(fp, offset, d.shape, d.dtype, what)
    return FileArray(d.shape, native, _read_as(what, values.flat))


def _read_as(what: str, flat: Callable[[int, int], np.ndarray]) -> Callable[[int, int], np.ndarray]:
    """``flat``, with what h5py and libhdf5 raise as one ``FormatError`` naming ``what``."""

    def read(start: int, stop: int) -> np.ndarray:
        with reading(f"{what} is unreadable"):
            return flat(start, stop)

    return read


#: The largest row of chunks (a chunked dataset's chunks side by side, across every axis after the first that its
#: chunks span) that ``posenc inspect`` and ``verify`` hold to read the dataset in parts, each chunk decoded once;
#: h5py's own chunking keeps it to a few MiB for tables of a GiB. A dataset whose row of chunks is larger (tall
#: chunks across a wide table) is read whole.
MAX_BAND = 32 << 20


class ChunkRows:
    """A chunked dataset read in C order a row of chunks at a time, each chunk decoded once when read in order:
    ``flat(start, stop)`` is a :class:`~posenc_cli.table.FileArray`'s read; :attr:`band_bytes` the memory of a row
    of chunks, held while it is read."""

    def __init__(self, d: Dataset, file_size: int, fill: np.ndarray) -> None:
        assert d.chunk is not None
        self.d, self.file_size, self.fill = d, file_size, fill
        spans = [min(c, n) for c, n in zip(d.chunk, d.shape, strict=True)]
        # The first axis along which a chunk spans more than one index: before it, every index is a row of chunks
        # of its own; from it on, a row of chunks covers its band of that axis and every axis after it.
        self.axis = next((j for j, span in enumerate(spans) if span > 1), len(spans) - 1)
        self.inner = math.prod(d.shape[self.axis + 1 :])
        self.band = d.chunk[self.axis] * self.inner  # values of one full row of chunks
        self.plane = d.shape[self.axis] * self.inner  # values of one index of the axes before it
        self.cached: tuple[int, np.ndarray] | None = None

    @property
    def band_bytes(self) -> int:
        return min(self.band, self.plane) * self.d.dtype.itemsize

    def flat(self, start: int, stop: int) -> np.ndarray:
        """The values from C-order position ``start`` to ``stop``, in native byte order."""
        out = np.empty(max(0, stop - start), self.fill.dtype)
        position = start
        while position < stop:
            first, values = self._row_of_chunks(position)
            take = min(stop, first + values.size) - position
            out[position - start : position - start + take] = values[position - first : position - first + take]
            position += take
        return out

    def _row_of_chunks(self, position: int) -> tuple[int, np.ndarray]:
        """The row of chunks that holds C-order ``position``: its first position and its values (1-D, native)."""
        prefix, within = divmod(position, self.plane)
        first = prefix * self.plane + within // self.band * self.band
        if self.cached is not None and self.cached[0] == first:
            return self.cached
        self.cached = None  # one row of chunks in memory at a time
        d, chunk = self.d, self.d.chunk
        assert chunk is not None
        before = np.unravel_index(prefix, d.shape[: self.axis]) if self.axis else ()
        low = within // self.band * chunk[self.axis]
        rows = min(chunk[self.axis], d.shape[self.axis] - low)
        tail = d.shape[self.axis + 1 :]
        out = np.empty((rows, *tail), self.fill.dtype)
        out[...] = self.fill
        lead = tuple(int(i) // c * c for i, c in zip(before, chunk, strict=False))  # chunk offsets before the axis
        inside = tuple(int(i) - o for i, o in zip(before, lead, strict=True))  # the index within those chunks
        for rest in itertools.product(*(range(0, n, c) for n, c in zip(tail, chunk[self.axis + 1 :], strict=True))):
            block = chunk_at(d, (*lead, low, *rest), self.file_size)
            if block is None:
                continue  # never written: the fill value
            spans = [min(c, n - o) for o, c, n in zip(rest, chunk[self.axis + 1 :], tail, strict=True)]
            region = (slice(0, rows), *(slice(o, o + span) for o, span in zip(rest, spans, strict=True)))
            part: tuple[Any, ...] = (*inside, slice(0, rows), *(slice(0, span) for span in spans))
            out[region] = block[part]
        self.cached = (first, out.reshape(-1))
        return self.cached
