"""The body of a C initializer: how :mod:`posenc_cli.formats.c` lays out the values of one array.

- 1-D: the values, ``element.per_line`` to a line, after four spaces (``    0.0f, 1.0f, ...``).
- 2-D: one ``    {...},`` line per row, wrapped after every ``per_line`` values (continuation lines indented to the
  first value).
- N-D (3 to :data:`~posenc_cli.formats.limits.MAX_DIMS` axes): the rows of the last two axes as in 2-D, inside a
  ``{`` line and a ``},`` line for each index of every leading axis, each level indented four more spaces (rows at
  ``4 * (ndim - 1)``)::

      {
          {0.0f, -1.0f},
          {-1.0f, 0.0f},
      },

  Rows are spelled in blocks of about a MiB whatever the sizes of the leading axes, so memory stays bounded.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ..table import Table
from ._blocks import row_blocks
from ._c_identity import ValuesHash, blocks
from ._ctypes import CElement


class Sink(Protocol):
    """Where a C file goes: a binary file, or :mod:`~posenc_cli.formats.c_read`'s comparison with a file."""

    def write(self, data: bytes, /) -> object: ...


def write_values(table: Table, key: str, element: CElement, fp: Sink, hasher: ValuesHash | None) -> None:
    """The initializer's body of ``table.arrays[key]``, spelled as ``element`` says (the module docstring), its
    values fed to ``hasher`` on the way."""
    array = table.arrays[key]
    if array.ndim == 1:
        # In pieces of whole lines: the separators depend only on the position in the line.
        step = element.per_line * 4096
        count = array.shape[0]
        values = np.asarray(array)
        if hasher is not None:
            hasher.start(array)
            hasher.update(values)
        for lo in range(0, count, step):
            hi = min(lo + step, count)
            seps = [b",\n    " if (j + 1) % element.per_line == 0 else b", " for j in range(lo, hi)]
            if hi == count:
                seps[-1] = b"\n"
            fp.write(element.spell(values[None, lo:hi], seps, b"    " if lo == 0 else b""))
        return
    columns = array.shape[-1]
    indent = b"    " * (array.ndim - 1)
    seps = [b",\n" + indent + b" " if (j + 1) % element.per_line == 0 else b", " for j in range(columns)]
    seps[-1] = b"},\n"
    if array.ndim == 2:
        for block in blocks(table, hasher, key):
            fp.write(element.spell(block, seps, indent + b"{"))
        return
    # N-D (always an ndarray: rows computed on demand are 2-D): the rows of the last two axes, in blocks of rows
    # whatever the leading axes' sizes, each row's text split out to put the braces of the levels around it.
    rows = np.asarray(array).reshape(-1, columns)
    levels = [(math.prod(array.shape[depth:-1]), b"    " * depth) for depth in range(1, array.ndim - 1)]
    if hasher is not None:
        hasher.start(array)
    for first, block in row_blocks(rows, 1 << 20):
        if hasher is not None:
            hasher.update(block)
        texts = element.spell(block, seps, indent + b"{").split(b"},\n")  # "}," ends rows only
        out = []
        for row, text in enumerate(texts[:-1], first):
            out += [pad + b"{\n" for span, pad in levels if row % span == 0]
            out.append(text + b"},\n")
            out += [pad + b"},\n" for span, pad in reversed(levels) if (row + 1) % span == 0]
        fp.write(b"".join(out))
