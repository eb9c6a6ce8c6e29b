"""How many bytes an output takes, measured before any work: what :mod:`posenc_cli.api` gives
:func:`~posenc_cli.system.capacity.check_disk` for every output (:func:`estimate_bytes`). Text outputs are checked
against the fewest bytes they can take, so that an estimate never refuses what would fit.

The memory a table takes built whole is each kind's (:attr:`posenc_cli.kinds.Kind.work_per_value`: ``generate`` and
``rope`` stream, computing row blocks while the writer writes them; the ALiBi bias, the 2-D sincos table, the index
kinds and any table the API builds with ``lazy=False`` are built whole), checked by the makers with
:func:`~posenc_cli.system.capacity.check_memory`; what the machine can hold is :mod:`posenc_cli.system.capacity`'s.
"""

from __future__ import annotations

from typing import NamedTuple

from .dtypes import element_of
from .formats import Format
from .system.capacity import check_disk
from .table import Table

__all__ = ["Size", "check_disk", "estimate_bytes"]

#: The fewest and the most bytes one value takes in a text format (CSV, C), its separator included, by element
#: type. Fewest: ``0.0,`` or ``0,``. Most: the widest spelling over every format and literal style, such as C's
#: ``-0x1.fffffep+127f, `` for float32, ``-2.2250738585072014e-308, `` for float64, or a 16-bit pattern with its
#: value in a comment, ``0xFF7F /* -3.3895314e+38 */, ``.
TEXT_BYTES_PER_VALUE = {
    "float32": (4, 24),
    "float64": (4, 32),
    "float16": (4, 40),
    "bfloat16": (4, 44),
    "q15": (2, 10),
    "q7": (2, 8),
    "int8": (2, 8),
}
#: A bare array of another dtype (``int32``, ``uint16``): from ``0,`` to ``-9223372036854775808, `` and beyond.
UNKNOWN_TEXT_BYTES_PER_VALUE = (2, 32)
#: What a format spells per value besides the value: a MIF line's ``<tab><address> : `` and ``;`` (an address of
#: at most 16 hex digits).
ADDRESS_BYTES = {"mif": 21}
#: At most this much per row of text (C's indentation and braces) and per file (headers, comments, metadata).
ROW_OVERHEAD_BYTES = 16
FILE_OVERHEAD_BYTES = 64 << 10


class Size(NamedTuple):
    """The fewest (``low``) and most (``high``) bytes an output can take; equal for binary formats, but for
    headers and metadata."""

    low: int
    high: int


def estimate_bytes(table: Table, fmt: Format) -> Size:
    """How many bytes writing ``table`` in ``fmt`` takes, without writing it.

    Binary formats: the arrays' bytes exactly (``low``), plus at most :data:`FILE_OVERHEAD_BYTES` of headers and
    metadata per array (``high``). Text formats: :data:`TEXT_BYTES_PER_VALUE` for each value, per row at most
    :data:`ROW_OVERHEAD_BYTES` more. Companion files (``.h`` of a ``.c``, a ``.json`` sidecar) are small and
    included in ``high`` only.

    Examples
    --------
    >>> from posenc_cli import api
    >>> from posenc_cli.formats import FORMATS
    >>> estimate_bytes(api.generate(2**32, 2**20, lazy=True), FORMATS["npy"]).low   # 2**52 float32 values
    18014398509481984
    >>> size = estimate_bytes(api.generate(1000, 64), FORMATS["csv"])
    >>> size.low <= 64_000 * 11 <= size.high
    True
    """
    arrays = list(table.arrays.values())
    if not fmt.text:
        data = sum(a.size * a.dtype.itemsize for a in arrays)
        return Size(data, data + FILE_OVERHEAD_BYTES * (len(arrays) + 1))
    low, high = 0, FILE_OVERHEAD_BYTES * 2
    for a in arrays:  # each array's own element type: an int16 index and its float32 bias are spelled apart
        element = element_of(table.params, a.dtype)
        fewest, most = TEXT_BYTES_PER_VALUE.get(element, UNKNOWN_TEXT_BYTES_PER_VALUE)
        rows = a.shape[0] if a.ndim else 1
        low += a.size * fewest
        high += a.size * (most + ADDRESS_BYTES.get(fmt.name, 0)) + rows * ROW_OVERHEAD_BYTES
    return Size(low, high)
