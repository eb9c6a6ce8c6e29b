"""Floats as text that reads back to the identical value, for the CSV and C writers.

Each value is written with the fewest significant digits that round-trip to the same float of its own dtype
(numpy's Dragon4 ``unique`` mode for float32, Python's ``repr`` for float64), and always carries a ``.`` or an
exponent, so that ``1.0`` never becomes ``1`` (an integer to pandas, an invalid ``1f`` to a C compiler) and
``-0.0`` keeps its sign. Non-finite values have no portable spelling in either format and are refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import FormatError

#: The float dtypes the text writers can spell exactly.
TEXT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def shortest(block: np.ndarray) -> Iterator[list[str]]:
    """Yield, row by row, the shortest round-trip text of each value of a 2-D float32/float64 ``block``.

    Raises
    ------
    FormatError
        If the block holds a NaN or an infinity, or is of another dtype.

    Examples
    --------
    >>> list(shortest(np.array([[0.0, 1.0], [1e-05, -0.0]], np.float32)))
    [['0.0', '1.0'], ['1e-05', '-0.0']]
    """
    if block.dtype not in TEXT_DTYPES:
        raise FormatError(f"text formats hold float32 or float64 values, got {block.dtype}")
    if block.size and not np.isfinite(block).all():
        raise FormatError("text formats cannot hold NaN or infinite values")
    if block.dtype == np.float64:
        for row in block.tolist():
            yield [repr(v) for v in row]
    else:
        for row in block:
            yield [str(v) for v in row]
