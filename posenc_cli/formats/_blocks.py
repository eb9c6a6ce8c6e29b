"""Row blocks: how every writer walks a table, so that none needs the whole table as one more copy in memory."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..table import Array

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
    (default :data:`BLOCK_BYTES` for an ndarray, :data:`SOURCE_BLOCK_BYTES` for a row source).

    Only slicing (``array[lo:hi]``) is used, so a :class:`~posenc_cli.table.RowSource` can stand for the array;
    its next blocks (:data:`AHEAD` of them) are computed in a background thread while the caller consumes the
    current one. Each block a row source yields is a new array: the caller may keep it (or a memoryview of it).

    Examples
    --------
    >>> [(lo, b.shape) for lo, b in row_blocks(np.zeros((5, 2)), 32)]
    [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    """
    if block_bytes is None:
        block_bytes = BLOCK_BYTES if isinstance(array, np.ndarray) else SOURCE_BLOCK_BYTES
    row_bytes = array.dtype.itemsize * math.prod(array.shape[1:])
    step = max(1, block_bytes // max(1, row_bytes))
    starts = range(0, array.shape[0], step)
    if isinstance(array, np.ndarray) or len(starts) < 2:
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
