"""Row blocks: how every writer walks a table, so that none needs the whole table as one more copy in memory."""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..table import Array

#: Bytes per block: large enough to amortise per-call costs, small enough to stay in cache-friendly territory
#: and to bound the memory of a writer to a few MiB whatever the table's size.
BLOCK_BYTES = 1 << 22


def row_blocks(array: Array, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` slices of ``array`` along its first axis, about ``block_bytes`` each.

    Only slicing (``array[lo:hi]``) is used, so a :class:`~posenc_cli.table.RowSource` can stand for the array;
    its next block is computed in a background thread while the caller consumes the current one.

    Examples
    --------
    >>> [(lo, b.shape) for lo, b in row_blocks(np.zeros((5, 2)), 32)]
    [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    """
    row_bytes = array.dtype.itemsize * math.prod(array.shape[1:])
    step = max(1, block_bytes // max(1, row_bytes))
    starts = range(0, array.shape[0], step)
    if isinstance(array, np.ndarray) or len(starts) < 2:
        for lo in starts:
            yield lo, array[lo : lo + step]
        return
    # Rows computed on demand: compute the next block while the caller writes this one (NumPy and file writes
    # release the GIL, so generation and I/O overlap).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-rows") as pool:
        upcoming = pool.submit(array.__getitem__, slice(0, step))
        for lo in starts:
            block = upcoming.result()
            if lo + step < array.shape[0]:
                upcoming = pool.submit(array.__getitem__, slice(lo + step, lo + 2 * step))
            yield lo, block
