"""Reading posenc's own C outputs back: the ``.h`` (header-only), the ``.c`` and ``.h`` of a pair, the ``.bin`` with
its ``.h``.

The rule: a C file is accepted only if it is, byte for byte, what :mod:`posenc_cli.formats.c` writes for the table
and the write options it holds. Anything else is "a C file posenc did not write" (:class:`~posenc_cli.errors.
FormatError`, naming the first line that differs): an ``#if 0`` around the table, a ``#define`` that renames it, an
``#include``, a second declaration, a function, a changed literal spelling, a line splice, trailing bytes. A
compiler therefore compiles exactly the values posenc reports, and ``posenc verify`` vouches for nothing else.

How: the file is read once to take out what the writer needs (the provenance comment, the options the definitions
show, the values), then written again with :func:`posenc_cli.formats.c.render` into a comparison with the file,
block by block (no second copy of a large file is held). The comment is compared too: the writer escapes its text
idempotently (:mod:`~posenc_cli.formats._c_names`), so the comment of a file posenc wrote is rewritten to the same
bytes.

What is taken out:

- The provenance comment (:mod:`~posenc_cli.formats._c_comment`: the file's name, posenc's version, the command,
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
- The values (:mod:`~posenc_cli.formats._c_values`: read exactly as a C compiler reads them, streamed in blocks,
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
:mod:`~posenc_cli.formats._c_identity`); otherwise the two files are "a torn pair" and are refused naming both:

- a ``.c``: its ``.h`` must define the identity the ``.c`` checks (the compiler's own test). The ``.c``'s values
  are not held to that identity: a value edited to another literal posenc writes is read as the compiler reads
  it, and ``posenc verify`` reports it where it is.
- a ``.bin``, which carries no identity: the identity in the ``.h`` must be that of the values in the ``.bin`` (and
  the sizes must agree), or the ``.bin`` is of another write or was changed since.

The table read from a ``.c`` carries what its ``.h`` is checked against (a
:class:`~posenc_cli.formats._c_read_pair.SourceTable`), so the check needs nothing but the table ``posenc_cli.load``
passes from the one loader to the other.

A ``.bin`` read alone is its raw bytes (kind ``array``, one ``uint8`` array ``pe``).

The work is done in layers: :mod:`~posenc_cli.formats._c_read_file` takes a file apart line by line,
:mod:`~posenc_cli.formats._c_read_table` makes the table and the write options of what it took out,
:mod:`~posenc_cli.formats._c_read_compare` holds the file to what the writer writes for them, and
:mod:`~posenc_cli.formats._c_read_pair` checks the second file of a pair.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from ..table import Table
from ._c_comment import TEXT_PARAMS
from ._c_read_compare import compare
from ._c_read_file import Said, bytes_left, read_file, refusing, reread_start
from ._c_read_pair import Source, SourceTable, load_declarations, load_incbin_header
from ._c_read_table import make_table, write_options
from ._c_values import CHUNK
from ._suffixes import source_name
from .limits import Budget

__all__ = ["TEXT_PARAMS", "load", "load_declarations", "load_incbin_header", "load_raw"]


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a ``.h`` (header-only) or ``.c`` that posenc wrote; ``FormatError`` for any other file.

    The table of a ``.c`` is a :class:`~posenc_cli.formats._c_read_pair.SourceTable`, which carries what the ``.c``
    says that its ``.h`` must agree with (:func:`load_declarations`).

    Examples
    --------
    >>> import io, posenc_cli
    >>> from posenc_cli.formats import WriteOptions
    >>> from posenc_cli.formats.c import dump_header_only
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
