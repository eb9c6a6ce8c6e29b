"""The body of a C initializer: how :mod:`posenc_cli.formats.c.writer` lays out the values of one array (and
:mod:`posenc_cli.formats.rust` too, in square brackets: :func:`write_nested`).

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

from ...table import Array, Table
from .._blocks import row_blocks
from ..text.spell import Spell
from .elements import CElement
from .identity import ValuesHash


class Sink(Protocol):
    """Where a C file goes: a binary file, or :mod:`~posenc_cli.formats.c.reader`'s comparison with a file."""

    def write(self, data: bytes, /) -> object: ...


def write_values(table: Table, key: str, element: CElement, fp: Sink, hasher: ValuesHash | None) -> None:
    """The initializer's body of ``table.arrays[key]``, spelled as ``element`` says (the module docstring), its
    values fed to ``hasher`` on the way."""
    write_nested(table.arrays[key], element.spell, fp, hasher, per_line=element.per_line)


def write_nested(
    array: Array,
    spell: Spell,
    fp: Sink,
    hasher: ValuesHash | None = None,
    *,
    per_line: int,
    brackets: tuple[bytes, bytes] = (b"{", b"}"),
    last: bytes = b"\n",
) -> None:
    """The values of ``array`` laid out as the module docstring says, in ``brackets`` (C's braces, Rust's square
    brackets), ``per_line`` values to a line, ``last`` after a 1-D array's final value (C: a line end; Rust: a
    trailing comma too), each block fed to ``hasher`` (if any) before it is spelled."""
    opening, closing = brackets
    if array.ndim == 1:
        # In pieces of whole lines: the separators depend only on the position in the line.
        step = per_line * 4096
        count = array.shape[0]
        values = np.asarray(array)
        if hasher is not None:
            hasher.start(array)
            hasher.update(values)
        for lo in range(0, count, step):
            hi = min(lo + step, count)
            seps = [b",\n    " if (j + 1) % per_line == 0 else b", " for j in range(lo, hi)]
            if hi == count:
                seps[-1] = last
            fp.write(spell(values[None, lo:hi], seps, b"    " if lo == 0 else b""))
        return
    columns = array.shape[-1]
    indent = b"    " * (array.ndim - 1)
    row_end = closing + b",\n"
    seps = [b",\n" + indent + b" " if (j + 1) % per_line == 0 else b", " for j in range(columns)]
    seps[-1] = row_end
    if hasher is not None:
        hasher.start(array)
    if array.ndim == 2:
        for _, block in row_blocks(array, 1 << 20):
            if hasher is not None:
                hasher.update(block)
            fp.write(spell(block, seps, indent + opening))
        return
    # N-D (always an ndarray: rows computed on demand are 2-D): the rows of the last two axes, in blocks of rows
    # whatever the leading axes' sizes, each row's text split out to put the brackets of the levels around it.
    rows = np.asarray(array).reshape(-1, columns)
    levels = [(math.prod(array.shape[depth:-1]), b"    " * depth) for depth in range(1, array.ndim - 1)]
    for first, block in row_blocks(rows, 1 << 20):
        if hasher is not None:
            hasher.update(block)
        texts = spell(block, seps, indent + opening).split(row_end)  # the closing bracket and "," end rows only
        out = []
        for row, text in enumerate(texts[:-1], first):
            out += [pad + opening + b"\n" for span, pad in levels if row % span == 0]
            out.append(text + row_end)
            out += [pad + row_end for span, pad in reversed(levels) if (row + 1) % span == 0]
        fp.write(b"".join(out))
