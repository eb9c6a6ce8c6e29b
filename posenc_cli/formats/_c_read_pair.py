"""The second file of a C pair (the pair layer of :mod:`posenc_cli.formats.c_read`): the ``.h`` of a ``.c``, checked
against the table read from the ``.c``, and the ``.h`` of a ``.bin``, which gives the ``.bin``'s bytes their table.

Both are refused as "a torn pair", naming both files, when the two files were written for different tables (the
rules are :mod:`~posenc_cli.formats.c_read`'s). What the ``.c`` says that its ``.h`` must agree with travels with
the table read from it, a :class:`SourceTable`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from ..errors import FormatError
from ..table import Table
from ._c_identity import table_id, values_digest
from ._c_names import c_names
from ._c_read_compare import compare
from ._c_read_file import CFile, Said, claim, element_type, read_file, refusing, reread_start
from ._c_read_table import make_table, table_layout, write_options
from .limits import Budget
from .options import WriteOptions
from .text.spell import element_name


@dataclass(frozen=True)
class Source:
    """What the ``.c`` of a pair says that its ``.h`` must agree with: the ``.c``'s name, the write options and the
    posenc version it was written with, and the table identity it checks."""

    filename: str
    options: WriteOptions
    version: str
    identity: str


@dataclass(frozen=True, eq=False, repr=False)
class SourceTable(Table):
    """A table read from the ``.c`` of a pair, carrying that file's :class:`Source` for :func:`load_declarations`.

    A :class:`~posenc_cli.table.Table` in every other respect (``source`` is no part of its ``repr``); a table made
    from it (:meth:`~posenc_cli.table.Table.part`) is a plain ``Table``, which no ``.h`` of a pair is checked against.
    """

    source: Source = field(kw_only=True)


def load_declarations(table: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Check the ``.h`` of a ``.c``/``.h`` pair (``fp``) against the table
    :func:`~posenc_cli.formats.c_read.load` read from its ``.c`` (a :class:`SourceTable`); return that table.

    ``FormatError`` naming both files when the ``.h`` was written for another table (a torn pair), or when it is
    not byte for byte the declarations posenc writes for the table.
    """
    if not isinstance(table, SourceTable):
        raise FormatError("the .h of a .c/.h pair is checked against the table read from its .c, and this is not one")
    source = table.source
    start = reread_start(fp)
    with refusing():
        file = read_file(fp, budget or Budget(), values=False)
        if file.variant != "decl":
            raise Said(f"{file.comment.filename} beside {source.filename} is not the header of a .c/.h pair")
        theirs = file.identity[1] if file.identity is not None else None
        if theirs != source.identity:
            raise Said(
                f"a torn pair: {source.filename} and {file.comment.filename} hold different tables "
                f"({_difference(table, file, source.identity, theirs)}): write both files again"
            )
        options = dataclasses.replace(source.options, filename=file.comment.filename, command=file.comment.command)
        compare("decl", table, options, file.comment.version, fp, start, source.identity)
    return table


def load_incbin_header(raw: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """The table that the ``.h`` of a ``.bin`` (``fp``) describes, its values from the raw bytes ``raw`` holds.

    ``raw`` is what :func:`~posenc_cli.formats.c_read.load_raw` read from the ``.bin`` (its bytes claimed from the
    budget there); the arrays are views of them, claimed again only where they must be converted (a big-endian
    machine). ``FormatError`` when the ``.h`` is not the header posenc writes for a ``.bin`` of these values: another
    size or other values are a torn pair, naming both files.
    """
    budget = budget or Budget()
    data = raw.arrays.get("pe")
    if raw.kind != "array" or len(raw.arrays) != 1 or not isinstance(data, np.ndarray) or data.dtype != np.uint8:
        raise FormatError("the .h of a .bin describes the raw bytes of the .bin, and this table is not those")
    start = reread_start(fp)
    with refusing():
        file = read_file(fp, budget, values=False)
        if file.variant != "incbin":
            raise Said("this is not the .h of a .bin (it declares no .incbin, or defines the arrays itself)")
        table, binary = _from_bin(file, data, budget)
        theirs = file.identity[1] if file.identity is not None else None
        for options in write_options(file, table.name, file.declared):
            if _identity(table.table, options, file.comment.version) == theirs:
                compare("incbin", table.table, options, file.comment.version, fp, start)
                return table.table
        raise Said(
            f"a torn pair: {binary} and {file.comment.filename} hold different tables (the values in {binary} are "
            f"not those of the table identity {theirs or 'none'} in {file.comment.filename}, or {binary} was changed "
            "after posenc wrote it): write both files again"
        )


@dataclass(frozen=True)
class _Named:
    """A table and the name its C file gives it."""

    name: str
    table: Table


def _from_bin(file: CFile, data: np.ndarray, budget: Budget) -> tuple[_Named, str]:
    """The table the ``.h`` of a ``.bin`` describes, its values viewed in the ``.bin``'s bytes ``data``."""
    header = file.comment.filename
    binary = PurePath(header).with_suffix(".bin").name
    if len(file.spans) != len(file.declared):
        raise FormatError(f"the .h declares {len(file.declared)} arrays and pulls in {len(file.spans)} with .incbin")
    name, layout = table_layout(file, file.declared)
    values = []
    offset = 0
    for (_, shape, _), array, span in zip(layout, file.declared, file.spans, strict=True):
        storage = element_type(file.comment, array.ctype)[1]
        need = int(np.prod(shape, dtype=object)) * storage.itemsize
        if span != (offset, need):
            raise FormatError(f"{array.symbol} is at {span[0]}, {span[1]} bytes; its shape puts it at {offset}, {need}")
        if offset + need <= data.size:
            stored = np.frombuffer(data, storage.newbyteorder("<"), need // storage.itemsize, offset)
            if stored.dtype != storage:  # a big-endian machine: the values are converted, a copy
                claim(budget, need, f"array {array.symbol}")
            values.append(stored.reshape(shape).astype(storage, copy=False))
        offset += need + (-need % 16)
    if data.size != offset:
        raise Said(
            f"a torn pair: {binary} and {header} hold different tables ({binary} holds {data.size} bytes, {header} "
            f"describes {offset}): write both files again"
        )
    return _Named(name, make_table(file, file.declared, values)[1]), binary


def _difference(table: Table, file: CFile, ours: str, theirs: str | None) -> str:
    """How a torn pair's files differ, in a few words: their shapes, else their identities."""
    mine = ", ".join(" x ".join(map(str, array.shape)) for array in table.arrays.values())
    other = ", ".join(" x ".join(map(str, shape)) for _, shape in file.comment.shapes)
    if mine != other:
        return f"{mine} and {other}"
    return f"table identities {ours} and {theirs or 'none'}"


def _identity(table: Table, options: WriteOptions, version: str) -> str:
    """The table identity the writer gives ``table`` under ``options``."""
    names = c_names(table, options.name, cxx=options.lang == "c++", namespace=options.namespace)
    elements = {key: element_name(table, key) for key in table.arrays}
    return table_id(table, names, elements, options, version, values_digest(table))
