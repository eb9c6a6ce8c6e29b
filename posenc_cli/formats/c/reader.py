"""Reading posenc's own C outputs back: the ``.h`` (header-only), the ``.c`` and ``.h`` of a pair, the ``.bin`` with
its ``.h``.

The rule: a C file is accepted only if it is, byte for byte, what :mod:`posenc_cli.formats.c.writer` writes for the
table and the write options it holds. Anything else is "a C file posenc did not write" (:class:`~posenc_cli.errors.
FormatError`, naming the first line that differs): an ``#if 0`` around the table, a ``#define`` that renames it, an
``#include``, a second declaration, a function, a changed literal spelling, a line splice, trailing bytes. A
compiler therefore compiles exactly the values posenc reports, and ``posenc verify`` vouches for nothing else.

How: the file is read once to take out what the writer needs (the provenance comment, the options the definitions
show, the values), then written again with :func:`posenc_cli.formats.c.writer.render` into a comparison with the file,
block by block (no second copy of a large file is held). The comment is compared too: the writer escapes its text
idempotently (:mod:`~posenc_cli.formats.c.names`), so the comment of a file posenc wrote is rewritten to the same
bytes.

What is taken out:

- The provenance comment (:mod:`~posenc_cli.formats.c.comment`: the file's name, posenc's version, the command,
  kind, parameters with their types by rule, and shapes).
- The name, from the include guard ``POSENC_<NAME>_H`` (C++: ``POSENC_<NS>_<NAME>_HPP``; a ``.c``: from its
  ``<NAME>_TABLE_ID`` check) and the
  symbols; each array's axis names from its declarator (``pe[PE_SEQ_LEN][PE_D_MODEL]`` is ``seq_len, d_model``).
  Array keys: ``<name>_<key>`` symbols give ``key`` for tables of several arrays; a table of one array is ``pe``,
  except ALiBi's ``slopes`` (1-D) and ``bias`` (2-D) and RoPE's ``inv_freq`` (1-D), which the shape names. A RoPE
  ``cos`` or ``sin`` written alone (``part=``) comes back as ``pe``: the file does not say which.
- The options: ``lang`` and ``namespace`` (``constexpr``, ``namespace`` lines, a ``_HPP`` guard; the ``.cpp`` of a
  C++ pair without a namespace by its comment's ``Needs: C++`` line), ``align`` (``POSENC_ALIGNED(n)``),
  ``progmem``, ``float_literal`` (bit patterns, hex floats), ``c_half_type`` (``_Float16``/``__fp16``).
- The values (:mod:`~posenc_cli.formats.c.values`: read exactly as a C compiler reads them, streamed in blocks,
  claimed from the :class:`~posenc_cli.formats.limits.Budget` before they are allocated), of arrays of 1 to
  :data:`~posenc_cli.formats.limits.MAX_DIMS` dimensions (an N-D initializer's nested braces checked against the
  shape). Which element type, for each array (the writer's rule, :func:`~posenc_cli.formats.text.spell.
  element_name`): the ``dtype`` parameter when the declared C type is one posenc writes it with, else the C type's
  own (``float`` float32, ``double`` float64, ``int8_t`` to ``int64_t`` the plain integers int8 to int64, the bit
  patterns of ``uint32_t``/``uint64_t`` float32/float64, those of ``uint16_t`` float16); a ``dtype`` that is the
  type of none of the arrays is refused. ``int8_t`` arrays are affine int8 codes where the parameters are affine
  (``dtype`` int8 and a ``scale``; the file must then hold the ``<NAME>_SCALE`` and ``<NAME>_ZERO_POINT`` macros
  posenc writes), the integers themselves otherwise.

Pairs. The ``.h`` of a ``.c``/``.h`` pair (``.hpp`` of a ``.cpp``, ...) and the ``.h`` of a ``.bin`` only declare the
arrays: reading them alone is a ``FormatError`` that says what the file is and names the file holding the values
(``the declarations header of a .c/.h pair: it holds no values; read pe.c``). Read with their ``.c`` or ``.bin``
(the registry's companion loaders, :func:`load_declarations` and :func:`load_incbin_header`, which
``posenc_cli.load`` calls when the ``.h`` is beside it), the ``.h`` must be, byte for byte, the one posenc writes
for the table read from the other file, with the same table identity (``<NAME>_TABLE_ID``,
:mod:`~posenc_cli.formats.c.identity`); otherwise the two files are "a torn pair" and are refused naming both:

- a ``.c``: its ``.h`` must define the identity the ``.c`` checks (the compiler's own test). The ``.c``'s values
  are not held to that identity: a value edited to another literal posenc writes is read as the compiler reads
  it, and ``posenc verify`` reports it where it is.
- a ``.bin``, which carries no identity: the identity in the ``.h`` must be that of the values in the ``.bin`` (and
  the sizes must agree), or the ``.bin`` is of another write or was changed since.

The table read from a ``.c`` carries what its ``.h`` is checked against (a
:class:`~posenc_cli.formats.c.reader.SourceTable`), so the check needs nothing but the table ``posenc_cli.load``
passes from the one loader to the other.

A ``.bin`` read alone is its raw bytes (kind ``array``, one ``uint8`` array ``pe``).

The work is done in layers: :mod:`~posenc_cli.formats.c._lines` takes a file apart line by line,
:mod:`~posenc_cli.formats.c._layout` makes the table and the write options of what it took out, and this module
holds the file to what the writer writes for them (:func:`compare`) and checks the second file of a pair.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from ..._version import __version__
from ...errors import FormatError
from ...table import Table
from .._suffixes import source_name
from ..limits import Budget
from ..options import WriteOptions
from ..text.spell import element_name
from . import writer
from ._layout import make_table, table_layout, write_options
from ._lines import CFile, Said, bytes_left, claim, element_type, read_file, refusing, reread_start
from .comment import DID_NOT_WRITE, TEXT_PARAMS
from .identity import table_id, values_digest
from .names import c_names
from .values import CHUNK

__all__ = ["TEXT_PARAMS", "Source", "SourceTable", "load", "load_declarations", "load_incbin_header", "load_raw"]


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a ``.h`` (header-only) or ``.c`` that posenc wrote; ``FormatError`` for any other file.

    The table of a ``.c`` is a :class:`~posenc_cli.formats.c.reader.SourceTable`, which carries what the ``.c``
    says that its ``.h`` must agree with (:func:`load_declarations`).

    Examples
    --------
    >>> import io, posenc_cli
    >>> from posenc_cli.formats import WriteOptions
    >>> from posenc_cli.formats.c.writer import dump_header_only
    >>> buf = io.BytesIO()
    >>> dump_header_only(posenc_cli.generate(4, 6), buf, WriteOptions(name="pe"))
    >>> table = load(io.BytesIO(buf.getvalue()))
    >>> table.kind, table.array.shape, table.params["d_model"]
    ('sinusoidal', (4, 6), 6)
    """
    start = reread_start(fp)
    with refusing():
        file = read_file(fp, budget or Budget(), values=True)
        variant = file.variant
        if variant == "decl":
            header = file.comment.filename
            defining = source_name(header)
            pair = f"{PurePath(defining).suffix}/{PurePath(header).suffix.lower() or '.h'}"
            raise Said(
                f"this is the declarations header of a {pair} pair: it holds no values; read {defining}, which "
                "defines them (posenc reads this header with it)"
            )
        if variant == "incbin":
            notes = (re.match(r"The values are in (.+?) \(", note) for note in file.comment.notes)
            where = next((f"{m[1]} (format bin)" for m in notes if m is not None), "the .bin file beside it")
            raise Said(f"this header only declares the arrays; their values are in {where}: read that file")
        name, table = make_table(file, file.defined, file.values)
        (options,) = write_options(file, name, file.defined)
        version = file.comment.version
        # A .c is written again with the identity it checks: its .h must carry the same (load_declarations).
        identity = file.identity[1] if variant == "c" and file.identity is not None else None
        compare(variant, table, options, version, fp, start, identity)
    if identity is not None:
        source = Source(file.comment.filename, options, version, identity)
        table = SourceTable(table.kind, table.arrays, table.params, table.axes, source=source)
    return table


def load_raw(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a ``.bin`` alone: its raw bytes as a table of kind ``array`` holding one ``uint8`` array ``pe``."""
    budget = budget or Budget()
    size = bytes_left(fp)
    if size is not None:
        budget.claim(size, "the .bin")
        data = fp.read(size)
    else:
        pieces = []
        while piece := fp.read(CHUNK):
            budget.claim(len(piece), "the .bin")
            pieces.append(piece)
        data = b"".join(pieces)
    return Table("array", {"pe": np.frombuffer(data, np.uint8)})


# -------------------------------------------------------------------------------------------- pairs
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
    :func:`~posenc_cli.formats.c.reader.load` read from its ``.c`` (a :class:`SourceTable`); return that table.

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

    ``raw`` is what :func:`~posenc_cli.formats.c.reader.load_raw` read from the ``.bin`` (its bytes claimed from the
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


# --------------------------------------------------------------------------------------- comparison
class _Expect:
    """A :class:`~posenc_cli.formats.c.initializer.Sink` that compares what the writer writes with the file, block by
    block."""

    def __init__(self, fp: BinaryIO, start: int, hint: str = "") -> None:
        fp.seek(start)
        self._fp = fp
        self._hint = hint
        self._line = 1
        self._tail = b""  # the current line up to the last block's end (at most 80 bytes of it)

    def write(self, data: bytes, /) -> None:
        got = self._fp.read(len(data))
        if got != data:
            n = min(len(got), len(data))
            differ = np.frombuffer(got, np.uint8, n) != np.frombuffer(data, np.uint8, n)
            at = int(np.argmax(differ)) if differ.any() else n
            line = self._line + data.count(b"\n", 0, at)
            start = data.rfind(b"\n", 0, at) + 1
            head = self._tail if start == 0 else b""
            found = _show(head + got[start:] + (self._fp.read(80) if b"\n" not in got[at:] else b""))
            expected = _show(head + data[start:])
            if at == len(got):
                raise FormatError(
                    f"{DID_NOT_WRITE}: it ends at line {line}, where posenc writes {expected}{self._hint}"
                )
            raise FormatError(f"{DID_NOT_WRITE}: line {line} is {found}, where posenc writes {expected}{self._hint}")
        self._line += data.count(b"\n")
        cut = data.rfind(b"\n")
        self._tail = (data[cut + 1 :] if cut >= 0 else self._tail + data)[-80:]

    def finish(self) -> None:
        if self._fp.read(1):
            raise FormatError(
                f"{DID_NOT_WRITE}: it goes on after line {self._line - 1}, where posenc's file ends{self._hint}"
            )


def _show(text: bytes) -> str:
    """The first line of ``text``, shortened, quoted and escaped for one line of a terminal."""
    line = text.split(b"\n", 1)[0]
    shown = line[:60].decode("utf-8", "replace") + ("..." if len(line) > 60 else "")
    return repr(shown)


def compare(
    variant: writer.Variant,
    table: Table,
    options: WriteOptions,
    version: str,
    fp: BinaryIO,
    start: int,
    identity: str | None = None,
) -> None:
    """``FormatError`` unless ``fp`` from ``start`` holds exactly what the writer writes for ``table`` (with the
    table identity ``identity``, if given)."""
    hint = "" if version == __version__ else f" (it names posenc {version}; this is {__version__}: write it again)"
    expect = _Expect(fp, start, hint)
    writer.render(variant, table, expect, options, version=version, identity=identity)
    expect.finish()
