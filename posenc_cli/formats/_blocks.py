"""Row blocks: how every writer walks a table, so that none needs the whole table as one more copy in memory; and
flat blocks (:func:`flat_blocks`): how ``posenc inspect`` and ``verify`` walk an array a file holds, so that they
hold a block of it, never the whole (:class:`~posenc_cli.table.FileArray`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..table import Array, FileArray

if TYPE_CHECKING:
    from concurrent.futures import Future

#: Bytes per block: large enough to amortise per-call costs, small enough to stay in cache-friendly territory
#: and to bound the memory of a writer to a few MiB whatever the table's size.
BLOCK_BYTES = 1 << 22
#: Bytes per block of a :class:`~posenc_cli.table.RowSource` (unless the caller asks for a size): its rows cost a
#: fixed setup per call, and 16 MiB blocks stream a sinusoid table with a quarter less CPU than 4 MiB ones.
SOURCE_BLOCK_BYTES = 1 << 24
#: Blocks of a :class:`~posenc_cli.table.RowSource` computed ahead of the one being written: two, so that a write
#: that stalls (the kernel throttling dirty pages) does not leave the generator idle; memory stays a few blocks.
AHEAD = 2


def row_blocks(array: Array, block_bytes: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` slices of ``array`` along its first axis, about ``block_bytes`` each
    (default :data:`BLOCK_BYTES` for an ndarray or a :class:`~posenc_cli.table.FileArray`,
    :data:`SOURCE_BLOCK_BYTES` for a row source).

    Only slicing (``array[lo:hi]``) is used, so a :class:`~posenc_cli.table.RowSource` can stand for the array;
    its next blocks (:data:`AHEAD` of them) are computed in a background thread while the caller consumes the
    current one. Each block a row source yields is a new array: the caller may keep it (or a memoryview of it).
    A file's array is read in the caller's thread, block after block: nothing to overlap but the read itself,
    and one block in memory.

    Examples
    --------
    >>> [(lo, b.shape) for lo, b in row_blocks(np.zeros((5, 2)), 32)]
    [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    """
    in_place = isinstance(array, (np.ndarray, FileArray))
    if block_bytes is None:
        block_bytes = BLOCK_BYTES if in_place else SOURCE_BLOCK_BYTES
    row_bytes = array.dtype.itemsize * math.prod(array.shape[1:])
    step = max(1, block_bytes // max(1, row_bytes))
    starts = range(0, array.shape[0], step)
    if in_place or len(starts) < 2:
        for lo in starts:
            yield lo, array[lo : lo + step]
        return
    from concurrent.futures import ThreadPoolExecutor  # here: `import posenc_cli` stays fast

    # Rows computed on demand: compute the next blocks while the caller writes this one (NumPy and file writes
    # release the GIL, so generation and I/O overlap). One worker: blocks are computed in order.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-rows") as pool:
        upcoming: deque[Future[np.ndarray]] = deque()
        queued = iter(starts)
        try:
            for lo in starts:
                while len(upcoming) <= AHEAD:
                    nxt = next(queued, None)
                    if nxt is None:
                        break
                    upcoming.append(pool.submit(array.__getitem__, slice(nxt, nxt + step)))
                yield lo, upcoming.popleft().result()
        finally:
            for future in upcoming:  # the caller stopped early (an error): compute nothing more
                future.cancel()


def flat_blocks(array: FileArray, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(position, values)``: the values of ``array`` from C-order position ``start`` to ``stop`` (default:
    to its end) in 1-D blocks of at most :data:`BLOCK_BYTES`, ``position`` the first one's.

    The blocks end where :func:`row_blocks` ends its blocks (so a row block of an ndarray and the flat block of
    the same file's array hold the same values); a row larger than a block is cut into pieces of a block, so that
    no array makes a block larger, whatever its shape.

    Examples
    --------
    >>> from posenc_cli.table import FileArray
    >>> values = np.arange(10, dtype=np.uint8)
    >>> stored = FileArray((2, 5), np.uint8, lambda a, b: values[a:b].copy())
    >>> [(at, b.tolist()) for at, b in flat_blocks(stored)]
    [(0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])]
    """
    total = array.size if stop is None else stop
    row = math.prod(array.shape[1:])
    row_bytes = array.dtype.itemsize * row
    step = max(1, BLOCK_BYTES // max(1, array.dtype.itemsize))  # entries of a block
    if 0 < row_bytes <= BLOCK_BYTES:
        step = BLOCK_BYTES // row_bytes * row  # whole rows: row_blocks' blocks
    position = start
    while position < total:
        end = min(total, (position // step + 1) * step)  # a block boundary of the whole array's blocks
        yield position, array.flat(position, end)
        position = end


def raw_bytes(array: Array, dtype: np.dtype) -> memoryview:
    """``array``'s values as ``dtype`` in C order, as bytes to write: a view of ``array`` itself when it already is
    contiguous ``dtype`` (no copy), else of one converted copy; never a second copy such as ``tobytes()`` makes.

    Examples
    --------
    >>> bytes(raw_bytes(np.arange(2, dtype=">u2"), np.dtype("<u2")))
    b'\\x00\\x00\\x01\\x00'
    """
    flat = np.ascontiguousarray(array, dtype).reshape(-1)
    return flat.view(np.uint8).data
