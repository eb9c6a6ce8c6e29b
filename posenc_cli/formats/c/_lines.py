"""One C file posenc wrote, taken apart line by line (the parsing layer of :mod:`posenc_cli.formats.c.reader`).

:func:`read_file` reads the file once and keeps what the writer needs to write it again (:class:`CFile`): the
provenance comment (:mod:`~posenc_cli.formats.c.comment`), every line posenc writes whose text depends on the
table or the options (definitions and declarations, size constants, the include guard, the table identity,
namespaces, the alignment macro, the ``.incbin`` block), and the values (:mod:`~posenc_cli.formats.c.values`).
Every other line is left to the comparison (:mod:`~posenc_cli.formats.c.reader`), which refuses any byte
posenc does not write.

Also here: the reader's refusals (:class:`Said`, :func:`refusing`, :func:`claim`) and the position helpers of its
file objects (:func:`reread_start`, :func:`bytes_left`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from ...dtypes import ElementType, fixed_format
from ...errors import FormatError, PosencError, SpecError
from ..limits import Budget
from ..text.spell import storage
from . import writer
from .comment import DID_NOT_WRITE, Comment, read_comment
from .values import Stream, read_initializer

#: C type -> the element types posenc writes with it. An array is of the table's ``dtype`` parameter when that is
#: one of them, else of the first (its own type: what a table without a dtype parameter, or an array stored
#: otherwise than the dtype says, is written with; :func:`~posenc_cli.formats.text.spell.element_name`).
_ELEMENTS: dict[str, tuple[str, ...]] = {
    "float": ("float32",),
    "double": ("float64",),
    "uint32_t": ("float32",),
    "uint64_t": ("float64",),
    "uint16_t": ("float16", "bfloat16"),
    "_Float16": ("float16",),
    "__fp16": ("float16",),
    "int16_t": ("int16", "q15"),
    "int8_t": ("int8", "q7"),
    "int32_t": ("int32",),
    "int64_t": ("int64",),
}

_NAME = rb"([A-Za-z][A-Za-z0-9_]*)"
_CTYPE = rb"(float|double|uint16_t|uint32_t|uint64_t|_Float16|__fp16|int16_t|int8_t|int32_t|int64_t)"
_DIMS = rb"((?:\[[A-Za-z0-9_]+\])+)"
_LINES = {
    "definition": re.compile(
        rb"(?:__extension__ )?(?:POSENC_ALIGNED\(([0-9]+)\) )?(static const|const|inline constexpr|constexpr) "
        + _CTYPE
        + b" "
        + _NAME
        + _DIMS
        + rb"( POSENC_TABLE_ATTRIBUTE| PROGMEM)? = \{\n"
    ),
    "declaration": re.compile(
        rb"(?:__extension__ )?extern const "
        + _CTYPE
        + b" "
        + _NAME
        + _DIMS
        + rb"( POSENC_TABLE_ATTRIBUTE| PROGMEM)?;\n"
    ),
    "size": re.compile(
        rb"(?:#define ([A-Za-z0-9_]+) ([0-9]+)|(?:inline )?constexpr std::size_t ([A-Za-z0-9_]+) = ([0-9]+);)\n"
    ),
    "guard": re.compile(rb"#ifndef (POSENC_([A-Za-z0-9_]+)_(?:H|HPP))\n"),
    "id": re.compile(rb"#define ([A-Za-z0-9_]+)_TABLE_ID (0x[0-9A-F]{16})\n"),
    "check": re.compile(rb"#if !defined\(([A-Za-z0-9_]+)_TABLE_ID\) \|\| [A-Za-z0-9_]+ != (0x[0-9A-F]{16})\n"),
    "namespace": re.compile(rb"namespace " + _NAME + rb" \{\n"),
    "align": re.compile(rb"#ifndef POSENC_ALIGNED\n"),
    "section": re.compile(rb'    "\.section (\.rodata|\.progmem\.data)\\n"\n'),
    "balign": re.compile(rb'    "\.balign ([0-9]+)\\n"\n'),
    "incbin": re.compile(rb'    "\.incbin \\"[^"\\]*\\", ([0-9]+), ([0-9]+)\\n"\n'),
}


@dataclass(frozen=True)
class CArray:
    """One declared or defined array: C type, symbol, the size constants of its declarator, how it is qualified."""

    ctype: str
    symbol: str
    dims: tuple[str, ...]
    qualifiers: str = "extern const"
    align: int | None = None
    progmem: bool = False


@dataclass
class CFile:
    """What one C file holds, as far as the writer needs it to write the file again."""

    comment: Comment
    defined: list[CArray] = field(default_factory=list)
    declared: list[CArray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    hexadecimal: bool = False
    #: ``<NAME>`` of the include guard ``POSENC_<NAME>_H`` (C++: ``POSENC_<NS>_<NAME>_HPP``, ``<NS>_<NAME>``), and
    #: the whole guard macro.
    guard: str | None = None
    guard_macro: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    namespace: list[str] = field(default_factory=list)
    #: ``<NAME>`` and the identity of ``#define <NAME>_TABLE_ID`` (a ``.h``) or of the check (a ``.c``).
    identity: tuple[str, str] | None = None
    align_macro: bool = False
    section: str | None = None
    balign: int | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def variant(self) -> writer.Variant:
        """Which of posenc's C files this is (:data:`~posenc_cli.formats.c.writer.Variant`), by what it defines and
        declares; ``FormatError`` for a file that does both or neither."""
        if self.defined and not self.declared:
            return "c" if self.defined[0].qualifiers == "const" else "h"
        if self.declared and not self.defined:
            return "incbin" if self.spans or self.section else "decl"
        raise FormatError(f"{DID_NOT_WRITE}: it neither defines nor only declares the arrays its comment describes")


# ------------------------------------------------------------------------------------------------- refusals
class Said(FormatError):
    """A refusal that says what it is in its own words (a torn pair, a header without values, a memory limit)."""


@contextlib.contextmanager
def refusing() -> Iterator[None]:
    """Every other ``FormatError`` raised inside is reported as "a C file posenc did not write: ..."."""
    try:
        yield
    except Said:
        raise
    except PosencError as exc:
        text = str(exc)
        raise FormatError(text if text.startswith(DID_NOT_WRITE) else f"{DID_NOT_WRITE}: {text}") from None


def claim(budget: Budget, nbytes: int, what: str) -> None:
    """Claim ``nbytes`` for ``what`` from ``budget``; over the limit, a :class:`Said` refusal in the budget's words."""
    try:
        budget.claim(nbytes, what)
    except FormatError as exc:
        raise Said(str(exc)) from None


# ---------------------------------------------------------------------------------------------- the lines
def read_file(fp: BinaryIO, budget: Budget, *, values: bool) -> CFile:
    """Read the file once: the comment, then every line posenc writes that matters to the writer (the rest is left
    to the comparison), and with ``values`` the initializers."""
    size = bytes_left(fp)
    stream = Stream(fp)
    comment = read_comment(stream)
    file = CFile(comment)
    closed = False
    while line := stream.readline():
        kind, match = next(((k, m) for k, p in _LINES.items() if (m := p.fullmatch(line)) is not None), ("", None))
        if match is None:
            closed = closed or (file.guard is not None and line == f"#endif /* {file.guard_macro} */\n".encode())
        elif kind == "definition":
            if len(file.defined) == len(comment.shapes):
                raise FormatError("the file defines more arrays than its comment describes")
            if values and not file.defined:
                _check_size(comment, size)
            array = _array(match, 3, match[2].decode(), int(match[1]) if match[1] else None, match[6])
            file.defined.append(array)
            if values:
                _, shape = comment.shapes[len(file.defined) - 1]
                name, storage = element_type(comment, array.ctype)
                claim(budget, int(np.prod(shape, dtype=object)) * storage.itemsize, f"array {array.symbol}")
                read, hexadecimal = read_initializer(stream, array.ctype, name, shape)
                file.values.append(read)
                # Hexadecimal float literals (the bit patterns of 16-bit floats are always hexadecimal).
                file.hexadecimal = file.hexadecimal or (hexadecimal and array.ctype in ("float", "double"))
        elif kind == "declaration":
            if len(file.declared) == len(comment.shapes):
                raise FormatError("the file declares more arrays than its comment describes")
            file.declared.append(_array(match, 1, "extern const", None, match[4]))
        elif kind == "size":
            macro, value = (match[1], match[2]) if match[1] is not None else (match[3], match[4])
            file.sizes.setdefault(macro.decode("ascii"), int(value))
        elif kind == "guard" and file.guard is None:
            file.guard_macro, file.guard = match[1].decode("ascii"), match[2].decode("ascii")
        elif kind in ("id", "check") and file.identity is None:
            file.identity = (match[1].decode("ascii"), match[2].decode("ascii"))
        elif kind == "namespace":
            file.namespace.append(match[1].decode("ascii"))
        elif kind == "align":
            file.align_macro = True
        elif kind == "section" and file.section is None:
            file.section = match[1].decode("ascii")
        elif kind == "balign" and file.balign is None:
            file.balign = int(match[1])
        elif kind == "incbin":
            file.spans.append((int(match[1]), int(match[2])))
    if file.guard is not None and not closed:
        raise FormatError(f"truncated file: the include guard {file.guard_macro} is never closed")
    _check_dtype(comment, file.defined or file.declared)
    return file


def _check_size(comment: Comment, size: int | None) -> None:
    """``FormatError`` when a file of ``size`` bytes cannot hold the values the comment promises (checked at the
    first definition, before any is allocated: a header that only declares the arrays holds none)."""
    total = sum(int(np.prod(shape, dtype=object)) for _, shape in comment.shapes)
    if size is not None and 2 * total > size:  # every value takes at least two bytes ("0,")
        raise FormatError(f"truncated file: the comment promises {total} values and the file holds {size} bytes")


def _array(match: re.Match[bytes], at: int, qualifiers: str, align: int | None, placement: bytes | None) -> CArray:
    dims = tuple(d.decode("ascii") for d in re.findall(rb"\[([A-Za-z0-9_]+)\]", match[at + 2]))
    ctype, symbol = match[at].decode("ascii"), match[at + 1].decode("ascii")
    return CArray(ctype, symbol, dims, qualifiers, align, placement == b" PROGMEM")


def element_type(comment: Comment, ctype: str) -> tuple[str, np.dtype]:
    """The element type name and storage dtype of an array declared with ``ctype`` (the rule of :data:`_ELEMENTS`)."""
    allowed = _ELEMENTS[ctype]
    dtype = comment.params.get("dtype")
    name = str(dtype) if dtype in allowed or _fixed_in(dtype, ctype) else allowed[0]
    found = storage(name)
    if found is None:  # cannot be: every name of _ELEMENTS is an element type
        raise FormatError(f"{ctype} arrays of dtype {name}: posenc writes none")
    return name, found


def _fixed_in(dtype: object, ctype: str) -> bool:
    """Whether ``dtype`` names a fixed-point type (q31, ``fixed<T>.<F>``) that posenc stores as ``ctype``."""
    try:
        fixed = fixed_format(dtype)
    except SpecError:
        return False
    return fixed is not None and f"{ElementType(str(dtype)).storage.name}_t" == ctype


def _check_dtype(comment: Comment, arrays: list[CArray]) -> None:
    """``FormatError`` when the comment's ``dtype`` parameter is the element type of none of the arrays: posenc
    writes a table's dtype for the arrays it describes, so at least one is declared with a C type of it."""
    dtype = comment.params.get("dtype")
    if dtype is None or not arrays or any(dtype in _ELEMENTS[a.ctype] or _fixed_in(dtype, a.ctype) for a in arrays):
        return
    ctypes = ", ".join(dict.fromkeys(array.ctype for array in arrays))
    raise FormatError(f"the comment says dtype {dtype} but the arrays are {ctypes}: posenc writes {dtype} otherwise")


# ------------------------------------------------------------------------------------------- file positions
def reread_start(fp: BinaryIO) -> int:
    """Where ``fp`` is; ``FormatError`` if it cannot seek (the file is read twice: once, then compared)."""
    try:
        if fp.seekable():
            return fp.tell()
    except (OSError, ValueError):
        pass
    raise Said("posenc reads C files from files it can seek in (it reads them twice), not from pipes")


def bytes_left(fp: BinaryIO) -> int | None:
    """The bytes left in ``fp`` from where it is, or ``None`` when it cannot seek."""
    try:
        start = fp.tell()
        end = fp.seek(0, 2)
        fp.seek(start)
    except (OSError, ValueError):
        return None
    return end - start
