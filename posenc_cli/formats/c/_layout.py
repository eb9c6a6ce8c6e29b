"""What a C file posenc wrote describes, from its parsed lines (:mod:`~posenc_cli.formats.c._lines`): the
table's name, each array's key, shape and axes, the write options that can have made the file, and the table.

Every part is checked against the others as it is taken out (the comment's shapes against the declarators and the
size constants, the symbols and sizes against the table's name), each mismatch a ``FormatError``; the comparison
(:mod:`~posenc_cli.formats.c.reader`) then holds the whole file to what the writer writes for them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...errors import FormatError
from ...table import Table
from ..options import WriteOptions
from ._lines import CArray, CFile, element_type
from .comment import DID_NOT_WRITE

#: Keys of the tables of one array that the kind and the number of dimensions name.
_SINGLE_KEYS = {
    ("alibi", 1): "slopes",
    ("alibi", 2): "bias",
    ("rope", 1): "inv_freq",
    ("relative", 2): "index",
    ("window", 2): "index",
}


def table_layout(file: CFile, arrays: list[CArray]) -> tuple[str, list[tuple[str, tuple[int, ...], tuple[str, ...]]]]:
    """The table's name and ``(key, shape, axes)`` of each array, checked against the comment and the sizes."""
    comment = file.comment
    if len(arrays) != len(comment.shapes):
        raise FormatError(
            f"the comment describes {len(comment.shapes)} arrays and the file holds {len(arrays)}: truncated or edited"
        )
    name = _name(file, arrays)
    prefix = name.upper() + "_"
    out = []
    for array, (symbol, shape) in zip(arrays, comment.shapes, strict=True):
        if symbol is not None and symbol != array.symbol:
            raise FormatError(f"the comment describes {symbol} where the file defines {array.symbol}")
        if len(array.dims) != len(shape):
            raise FormatError(f"{array.symbol} has {len(array.dims)} dimensions, the comment says shape {shape}")
        axes = []
        for dim, size in zip(array.dims, shape, strict=True):
            if not dim.startswith(prefix) or len(dim) == len(prefix):
                raise FormatError(f"{array.symbol}'s size {dim} is not named after the table {name}")
            if file.sizes.get(dim, size) != size:
                raise FormatError(f"{dim} is {file.sizes[dim]} but the comment gives {array.symbol} size {size}")
            axes.append(dim[len(prefix) :].lower())
        if len(arrays) == 1:
            key = _SINGLE_KEYS.get((comment.kind, len(shape)), "pe")
        elif array.symbol.startswith(name + "_"):
            key = array.symbol[len(name) + 1 :]
        else:
            raise FormatError(f"the symbol {array.symbol} is not named after the table {name}")
        out.append((key, shape, tuple(axes)))
    if len({key for key, _, _ in out}) != len(out):
        raise FormatError("two arrays of the file have the same name")
    return name, out


def _name(file: CFile, arrays: list[CArray]) -> str:
    """The table's name: its upper case from the guard (a ``.c``: its identity check) without the namespace a C++
    file's carries (``POSENC_<NS>_<NAME>_HPP``), its spelling from the first symbol (the whole symbol for a table
    of one array)."""
    upper = file.guard if file.guard is not None else file.identity[0] if file.identity is not None else None
    if upper is None:
        raise FormatError(f"{DID_NOT_WRITE}: it has no include guard and no table identity check")
    qualifier = "".join(part.upper() + "_" for part in file.namespace)
    if not upper.startswith(qualifier):
        raise FormatError(f"the guard or identity of the table {upper} does not name its namespace")
    upper = upper[len(qualifier) :]
    if len(arrays) == 1:
        name = arrays[0].symbol
    else:
        name = arrays[0].symbol[: len(upper)]
    if name.upper() != upper:
        raise FormatError(f"the symbols {', '.join(a.symbol for a in arrays)} are not named after the table {upper}")
    return name


def write_options(file: CFile, name: str, arrays: list[CArray]) -> Iterator[WriteOptions]:
    """The write options that can have made the file: one for a file with definitions; for the ``.h`` of a
    ``.bin``, each the file leaves open (the alignment below 16, decimal or hex literals), for the identity to
    decide."""
    first = arrays[0]
    ctypes = {array.ctype for array in arrays}
    floats = bool(ctypes & {"float", "double"})
    if any(
        array.ctype in ("uint32_t", "uint64_t") and element_type(file.comment, array.ctype)[0] in ("float32", "float64")
        for array in arrays
    ):
        literals = ["bits"]
    elif floats and file.defined:
        literals = ["hex" if file.hexadecimal else "decimal"]
    else:
        literals = ["decimal", "hex"] if floats else ["decimal"]
    half = next((array.ctype for array in arrays if array.ctype in ("_Float16", "__fp16")), None)
    if file.defined:
        aligns: list[int | None] = [first.align]
    elif not file.align_macro:
        aligns = [None]
    elif file.balign is not None and file.balign > 16:
        aligns = [file.balign]
    else:
        aligns = [1, 2, 4, 8, 16]
    lang = "c++" if is_cxx(file) else "c"
    progmem = first.progmem or file.section == ".progmem.data"
    for literal in literals:
        for align in aligns:
            yield WriteOptions(
                name=name,
                command=file.comment.command,
                filename=file.comment.filename,
                lang=lang,
                namespace="::".join(file.namespace) or None,
                align=align,
                progmem=progmem,
                float_literal=literal,
                c_half_type=half,
                formula=formula(file),
            )


def formula(file: CFile) -> tuple[str, ...]:
    """The formula lines of the file's comment, as written (the table's kind gave the writer them:
    :attr:`posenc_cli.kinds.Kind.c_formula`; this layer does not know the kinds): the indented lines after the
    blank line that ends the shapes, up to the next blank line. Written again as they stand, they are compared with
    the file like every other line."""
    notes = file.comment.notes
    if len(notes) < 2 or notes[0] != "" or not notes[1].startswith("  "):
        return ()
    lines = []
    for note in notes[1:]:
        if not note.startswith("  "):
            break
        lines.append(note[2:])
    return tuple(lines)


def is_cxx(file: CFile) -> bool:
    """Whether the file is C++: ``constexpr`` definitions, a namespace, a C++ guard, or (the ``.cpp`` of a pair
    without a namespace, whose code reads as C's) the ``Needs: C++`` line of its comment. The comparison then holds
    the whole file to what the writer writes in that language."""
    arrays = file.defined or file.declared
    return (
        (bool(arrays) and "constexpr" in arrays[0].qualifiers)
        or bool(file.namespace)
        or (file.guard_macro or "").endswith("_HPP")
        or any(note.startswith("Needs: C++") for note in file.comment.notes)
    )


def make_table(file: CFile, arrays: list[CArray], values: list[np.ndarray]) -> tuple[str, Table]:
    """The table's name and the table of ``arrays`` holding ``values`` (in the same order), its kind, parameters,
    keys and axes as the file gives them (:func:`table_layout`, whose ``FormatError`` it raises)."""
    name, layout = table_layout(file, arrays)
    comment = file.comment
    table = Table(
        comment.kind,
        {key: array for (key, _, _), array in zip(layout, values, strict=True)},
        comment.params,
        {key: axes for key, _, axes in layout},
    )
    return name, table
