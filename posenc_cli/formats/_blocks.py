"""Row blocks: how every writer walks a table, so that none needs the whole table as one more copy in memory."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

#: Bytes per block: large enough to amortise per-call costs, small enough to stay in cache-friendly territory
#: and to bound the memory of a writer to a few MiB whatever the table's size.
BLOCK_BYTES = 1 << 22


def row_blocks(array: np.ndarray, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` slices of ``array`` along its first axis, about ``block_bytes`` each.

    Only slicing (``array[lo:hi]``) is used, so any object that produces rows on demand can stand for the array.

    Examples
    --------
    >>> [(lo, b.shape) for lo, b in row_blocks(np.zeros((5, 2)), 32)]
    [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    """
    row_bytes = array.dtype.itemsize * math.prod(array.shape[1:])
    step = max(1, block_bytes // max(1, row_bytes))
    for lo in range(0, array.shape[0], step):
        yield lo, array[lo : lo + step]
