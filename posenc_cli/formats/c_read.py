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
- The name, from the include guard ``POSENC_<NAME>_H`` (a ``.c``: from its ``<NAME>_TABLE_ID`` check) and the
  symbols; each array's axis names from its declarator (``pe[PE_SEQ_LEN][PE_D_MODEL]`` is ``seq_len, d_model``).
  Array keys: ``<name>_<key>`` symbols give ``key`` for tables of several arrays; a table of one array is ``pe``,
  except ALiBi's ``slopes`` (1-D) and ``bias`` (2-D) and RoPE's ``inv_freq`` (1-D), which the shape names. A RoPE
  ``cos`` or ``sin`` written alone (``part=``) comes back as ``pe``: the file does not say which.
- The options: ``lang`` and ``namespace`` (``constexpr``, ``namespace`` lines), ``align`` (``POSENC_ALIGNED(n)``),
  ``progmem``, ``float_literal`` (bit patterns, hex floats), ``half_type`` (``_Float16``/``__fp16``).
- The values (:mod:`~posenc_cli.formats._c_values`: read exactly as a C compiler reads them, streamed in blocks,
  claimed from the :class:`~posenc_cli.formats.limits.Budget` before they are allocated). Which element type: the
  ``dtype`` parameter, checked against the declared C type; a table without one (``kind: array``) takes it from
  the C type.

Pairs. The ``.h`` of a ``.c``/``.h`` pair and the ``.h`` of a ``.bin`` only declare the arrays: reading them alone is
a ``FormatError`` that names the file holding the values. Read with their ``.c`` or ``.bin`` (the registry's
companion loaders, :func:`load_declarations` and :func:`load_incbin_header`, which ``posenc_cli.load`` calls when
the ``.h`` is beside it), the ``.h`` must be, byte for byte, the one posenc writes for the table read from the other
file, with the same table identity (``<NAME>_TABLE_ID``, :mod:`~posenc_cli.formats._c_identity`); otherwise the two
files are "a torn pair" and are refused naming both:

- a ``.c``: its ``.h`` must define the identity the ``.c`` checks (the compiler's own test). The ``.c``'s values
  are not held to that identity: a value edited to another literal posenc writes is read as the compiler reads
  it, and ``posenc verify`` reports it where it is.
- a ``.bin``, which carries no identity: the identity in the ``.h`` must be that of the values in the ``.bin`` (and
  the sizes must agree), or the ``.bin`` is of another write or was changed since.

A ``.bin`` read alone is its raw bytes (kind ``array``, one ``uint8`` array ``pe``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..dtypes import ElementType
from ..errors import FormatError, PosencError
from ..table import Table
from . import c
from ._c_comment import DID_NOT_WRITE, TEXT_PARAMS, Comment, read_comment
from ._c_identity import table_id, values_digest
from ._c_names import c_names
from ._c_values import CHUNK, Stream, read_initializer
from ._spell import element_name
from .limits import Budget
from .options import WriteOptions

__all__ = ["TEXT_PARAMS", "load", "load_declarations", "load_incbin_header", "load_raw"]

#: C type -> the element types posenc writes with it; the first is the one of a table without a dtype parameter.
_ELEMENTS: dict[str, tuple[str, ...]] = {
    "float": ("float32",),
    "double": ("float64",),
    "uint32_t": ("float32",),
    "uint64_t": ("float64",),
    "uint16_t": ("float16", "bfloat16"),
    "_Float16": ("float16",),
    "__fp16": ("float16",),
    "int16_t": ("q15",),
    "int8_t": ("q7", "int8"),
}
#: Keys of the tables of one array that the kind and the number of dimensions name.
_SINGLE_KEYS = {("alibi", 1): "slopes", ("alibi", 2): "bias", ("rope", 1): "inv_freq"}

_NAME = rb"([A-Za-z][A-Za-z0-9_]*)"
_CTYPE = rb"(float|double|uint16_t|uint32_t|uint64_t|_Float16|__fp16|int16_t|int8_t)"
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
    "guard": re.compile(rb"#ifndef POSENC_([A-Za-z0-9_]+)_H\n"),
    "id": re.compile(rb"#define ([A-Za-z0-9_]+)_TABLE_ID (0x[0-9A-F]{16})\n"),
    "check": re.compile(rb"#if !defined\(([A-Za-z0-9_]+)_TABLE_ID\) \|\| [A-Za-z0-9_]+ != (0x[0-9A-F]{16})\n"),
    "namespace": re.compile(rb"namespace " + _NAME + rb" \{\n"),
    "align": re.compile(rb"#ifndef POSENC_ALIGNED\n"),
    "section": re.compile(rb'    "\.section (\.rodata|\.progmem\.data)\\n"\n'),
    "balign": re.compile(rb'    "\.balign ([0-9]+)\\n"\n'),
    "incbin": re.compile(rb'    "\.incbin \\"[^"\\]*\\", ([0-9]+), ([0-9]+)\\n"\n'),
}


@dataclass(frozen=True)
class _Array:
    """One declared or defined array: C type, symbol, the size constants of its declarator, how it is qualified."""

    ctype: str
    symbol: str
    dims: tuple[str, ...]
    qualifiers: str = "extern const"
    align: int | None = None
    progmem: bool = False


@dataclass
class _File:
    """What one C file holds, as far as the writer needs it to write the file again."""

    comment: Comment
    defined: list[_Array] = field(default_factory=list)
    declared: list[_Array] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    hexadecimal: bool = False
    guard: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    namespace: list[str] = field(default_factory=list)
    #: ``<NAME>`` and the identity of ``#define <NAME>_TABLE_ID`` (a ``.h``) or of the check (a ``.c``).
    identity: tuple[str, str] | None = None
    align_macro: bool = False
    section: str | None = None
    balign: int | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def variant(self) -> c.Variant:
        if self.defined and not self.declared:
            return "c" if self.defined[0].qualifiers == "const" else "h"
        if self.declared and not self.defined:
            return "incbin" if self.spans or self.section else "decl"
        raise FormatError(f"{DID_NOT_WRITE}: it neither defines nor only declares the arrays its comment describes")


# ------------------------------------------------------------------------------------------------- refusals
class _Said(FormatError):
    """A refusal that says what it is in its own words (a torn pair, a header without values, a memory limit)."""


@contextlib.contextmanager
def _refusing() -> Iterator[None]:
    """Every other ``FormatError`` raised inside is reported as "a C file posenc did not write: ..."."""
    try:
        yield
    except _Said:
        raise
    except PosencError as exc:
        text = str(exc)
        raise FormatError(text if text.startswith(DID_NOT_WRITE) else f"{DID_NOT_WRITE}: {text}") from None


def _claim(budget: Budget, nbytes: int, what: str) -> None:
    try:
        budget.claim(nbytes, what)
    except FormatError as exc:
        raise _Said(str(exc)) from None


# ------------------------------------------------------------------------------------------------- the body
def _read(fp: BinaryIO, budget: Budget, *, values: bool) -> _File:
    """Read the file once: the comment, then every line posenc writes that matters to the writer (the rest is left
    to the comparison), and with ``values`` the initializers."""
    size = _size(fp)
    stream = Stream(fp)
    comment = read_comment(stream)
    if values:
        total = sum(int(np.prod(shape, dtype=object)) for _, shape in comment.shapes)
        if size is not None and 2 * total > size:  # every value takes at least two bytes ("0,")
            raise FormatError(f"truncated file: the comment promises {total} values and the file holds {size} bytes")
    file = _File(comment)
    closed = False
    while line := stream.readline():
        kind, match = next(((k, m) for k, p in _LINES.items() if (m := p.fullmatch(line)) is not None), ("", None))
        if match is None:
            closed = closed or (file.guard is not None and line == f"#endif /* POSENC_{file.guard}_H */\n".encode())
        elif kind == "definition":
            if len(file.defined) == len(comment.shapes):
                raise FormatError("the file defines more arrays than its comment describes")
            array = _array(match, 3, match[2].decode(), int(match[1]) if match[1] else None, match[6])
            file.defined.append(array)
            if values:
                _, shape = comment.shapes[len(file.defined) - 1]
                name, storage = _element(comment, array.ctype)
                _claim(budget, int(np.prod(shape, dtype=object)) * storage.itemsize, f"array {array.symbol}")
                read, hexadecimal = read_initializer(stream, array.ctype, name, shape)
                file.values.append(read)
                file.hexadecimal = file.hexadecimal or hexadecimal
        elif kind == "declaration":
            if len(file.declared) == len(comment.shapes):
                raise FormatError("the file declares more arrays than its comment describes")
            file.declared.append(_array(match, 1, "extern const", None, match[4]))
        elif kind == "size":
            macro, value = (match[1], match[2]) if match[1] is not None else (match[3], match[4])
            file.sizes.setdefault(macro.decode("ascii"), int(value))
        elif kind == "guard" and file.guard is None:
            file.guard = match[1].decode("ascii")
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
        raise FormatError(f"truncated file: the include guard POSENC_{file.guard}_H is never closed")
    return file


def _array(match: re.Match[bytes], at: int, qualifiers: str, align: int | None, placement: bytes | None) -> _Array:
    dims = tuple(d.decode("ascii") for d in re.findall(rb"\[([A-Za-z0-9_]+)\]", match[at + 2]))
    ctype, symbol = match[at].decode("ascii"), match[at + 1].decode("ascii")
    return _Array(ctype, symbol, dims, qualifiers, align, placement == b" PROGMEM")


def _element(comment: Comment, ctype: str) -> tuple[str, np.dtype]:
    """The element type name and storage dtype of an array declared with ``ctype``."""
    allowed = _ELEMENTS[ctype]
    dtype = comment.params.get("dtype")
    if dtype is None:
        name = allowed[0]
        if name in ("q15", "q7"):
            raise FormatError(f"a {ctype} table without a dtype parameter: posenc does not write one")
    elif dtype in allowed:
        name = str(dtype)
    else:
        raise FormatError(f"the comment says dtype {dtype} but the arrays are {ctype}: posenc writes {dtype} otherwise")
    return name, ElementType(name).storage


def _layout(file: _File, arrays: list[_Array]) -> tuple[str, list[tuple[str, tuple[int, ...], tuple[str, ...]]]]:
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


def _name(file: _File, arrays: list[_Array]) -> str:
    """The table's name: its upper case from the guard (a ``.c``: its identity check), its spelling from the
    first symbol (the whole symbol for a table of one array)."""
    upper = file.guard if file.guard is not None else file.identity[0] if file.identity is not None else None
    if upper is None:
        raise FormatError(f"{DID_NOT_WRITE}: it has no include guard and no table identity check")
    if len(arrays) == 1:
        name = arrays[0].symbol
    else:
        name = arrays[0].symbol[: len(upper)]
    if name.upper() != upper:
        raise FormatError(f"the symbols {', '.join(a.symbol for a in arrays)} are not named after the table {upper}")
    return name


def _options(file: _File, name: str, arrays: list[_Array]) -> Iterator[WriteOptions]:
    """The write options that can have made the file: one for a file with definitions; for the ``.h`` of a
    ``.bin``, each the file leaves open (the alignment below 16, decimal or hex literals), for the identity to
    decide."""
    first = arrays[0]
    element = _element(file.comment, first.ctype)[0]
    if first.ctype in ("uint32_t", "uint64_t") and element in ("float32", "float64"):
        literals = ["bits"]
    elif first.ctype in ("float", "double") and file.defined:
        literals = ["hex" if file.hexadecimal else "decimal"]
    else:
        literals = ["decimal", "hex"] if first.ctype in ("float", "double") else ["decimal"]
    if file.defined:
        aligns: list[int | None] = [first.align]
    elif not file.align_macro:
        aligns = [None]
    elif file.balign is not None and file.balign > 16:
        aligns = [file.balign]
    else:
        aligns = [1, 2, 4, 8, 16]
    lang = "c++" if "constexpr" in first.qualifiers else "c"
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
                half_type=first.ctype if first.ctype in ("_Float16", "__fp16") else None,
            )


def _table(file: _File, arrays: list[_Array], values: list[np.ndarray]) -> tuple[str, Table]:
    name, layout = _layout(file, arrays)
    comment = file.comment
    table = Table(
        comment.kind,
        {key: array for (key, _, _), array in zip(layout, values, strict=True)},
        comment.params,
        {key: axes for key, _, axes in layout},
    )
    return name, table


def _identity(table: Table, options: WriteOptions, version: str) -> str:
    """The table identity the writer gives ``table`` under ``options``."""
    names = c_names(table, options.name)
    return table_id(table, names, element_name(table), options, version, values_digest(table))


# ---------------------------------------------------------------------------------------------- the comparison
class _Expect:
    """A :class:`~posenc_cli.formats.c.Sink` that compares what the writer writes with the file, block by block."""

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


def _compare(
    variant: c.Variant,
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
    c.render(variant, table, expect, options, version=version, identity=identity)
    expect.finish()


# -------------------------------------------------------------------------------------------------- loaders
@dataclass(frozen=True)
class _Source:
    """The ``.c`` a table was read from, for the ``.h`` read after it."""

    filename: str
    options: WriteOptions
    version: str
    identity: str


_SOURCES: dict[int, tuple[weakref.ref[Table], _Source]] = {}


def _remember_source(table: Table, source: _Source) -> None:
    key = id(table)

    def forget(ref: weakref.ref[Table]) -> None:
        if _SOURCES.get(key, (None,))[0] is ref:
            del _SOURCES[key]

    _SOURCES[key] = (weakref.ref(table, forget), source)


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a ``.h`` (header-only) or ``.c`` that posenc wrote; ``FormatError`` for any other file.

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
    start = _start(fp)
    with _refusing():
        file = _read(fp, budget or Budget(), values=True)
        variant = file.variant
        if variant in ("decl", "incbin"):
            notes = (re.match(r"The values are in (.+?) \(", note) for note in file.comment.notes)
            where = next((f"{m[1]} (format bin)" for m in notes if m is not None), "the .c file beside it")
            raise _Said(f"this header only declares the arrays; their values are in {where}: read that file")
        name, table = _table(file, file.defined, file.values)
        (options,) = _options(file, name, file.defined)
        version = file.comment.version
        # A .c is written again with the identity it checks: its .h must carry the same (load_declarations).
        identity = file.identity[1] if variant == "c" and file.identity is not None else None
        _compare(variant, table, options, version, fp, start, identity)
    if identity is not None:
        _remember_source(table, _Source(file.comment.filename, options, version, identity))
    return table


def load_declarations(table: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Check the ``.h`` of a ``.c``/``.h`` pair (``fp``) against the table :func:`load` read from its ``.c``.

    ``FormatError`` naming both files when the ``.h`` was written for another table (a torn pair), or when it is
    not byte for byte the declarations posenc writes for the table.
    """
    entry = _SOURCES.get(id(table))
    if entry is None or entry[0]() is not table:
        raise FormatError("the .h of a .c/.h pair is checked against the table read from its .c, and this is not one")
    source = entry[1]
    start = _start(fp)
    with _refusing():
        file = _read(fp, budget or Budget(), values=False)
        if file.variant != "decl":
            raise _Said(f"{file.comment.filename} beside {source.filename} is not the header of a .c/.h pair")
        theirs = file.identity[1] if file.identity is not None else None
        if theirs != source.identity:
            raise _Said(
                f"a torn pair: {source.filename} and {file.comment.filename} hold different tables "
                f"({_difference(table, file, source.identity, theirs)}): write both files again"
            )
        options = dataclasses.replace(source.options, filename=file.comment.filename, command=file.comment.command)
        _compare("decl", table, options, file.comment.version, fp, start, source.identity)
    return table


def load_raw(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read a ``.bin`` alone: its raw bytes as a table of kind ``array`` holding one ``uint8`` array ``pe``."""
    budget = budget or Budget()
    size = _size(fp)
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


def load_incbin_header(raw: Table, fp: BinaryIO, budget: Budget | None = None) -> Table:
    """The table that the ``.h`` of a ``.bin`` (``fp``) describes, its values from the raw bytes ``raw`` holds.

    ``raw`` is what :func:`load_raw` read from the ``.bin`` (its bytes claimed from the budget there); the arrays
    are views of them, claimed again only where they must be converted (a big-endian machine). ``FormatError``
    when the ``.h`` is not the header posenc writes for a ``.bin`` of these values: another size or other values
    are a torn pair, naming both files.
    """
    budget = budget or Budget()
    data = raw.arrays.get("pe")
    if raw.kind != "array" or len(raw.arrays) != 1 or not isinstance(data, np.ndarray) or data.dtype != np.uint8:
        raise FormatError("the .h of a .bin describes the raw bytes of the .bin, and this table is not those")
    start = _start(fp)
    with _refusing():
        file = _read(fp, budget, values=False)
        if file.variant != "incbin":
            raise _Said("this is not the .h of a .bin (it declares no .incbin, or defines the arrays itself)")
        table, binary = _from_bin(file, data, budget)
        theirs = file.identity[1] if file.identity is not None else None
        for options in _options(file, table.name, file.declared):
            if _identity(table.table, options, file.comment.version) == theirs:
                _compare("incbin", table.table, options, file.comment.version, fp, start)
                return table.table
        raise _Said(
            f"a torn pair: {binary} and {file.comment.filename} hold different tables (the values in {binary} are "
            f"not those of the table identity {theirs or 'none'} in {file.comment.filename}, or {binary} was changed "
            "after posenc wrote it): write both files again"
        )


@dataclass(frozen=True)
class _Named:
    name: str
    table: Table


def _from_bin(file: _File, data: np.ndarray, budget: Budget) -> tuple[_Named, str]:
    """The table the ``.h`` of a ``.bin`` describes, its values viewed in the ``.bin``'s bytes ``data``."""
    header = file.comment.filename
    binary = PurePath(header).with_suffix(".bin").name
    if len(file.spans) != len(file.declared):
        raise FormatError(f"the .h declares {len(file.declared)} arrays and pulls in {len(file.spans)} with .incbin")
    name, layout = _layout(file, file.declared)
    values = []
    offset = 0
    for (_, shape, _), array, span in zip(layout, file.declared, file.spans, strict=True):
        storage = _element(file.comment, array.ctype)[1]
        need = int(np.prod(shape, dtype=object)) * storage.itemsize
        if span != (offset, need):
            raise FormatError(f"{array.symbol} is at {span[0]}, {span[1]} bytes; its shape puts it at {offset}, {need}")
        if offset + need <= data.size:
            stored = np.frombuffer(data, storage.newbyteorder("<"), need // storage.itemsize, offset)
            if stored.dtype != storage:  # a big-endian machine: the values are converted, a copy
                _claim(budget, need, f"array {array.symbol}")
            values.append(stored.reshape(shape).astype(storage, copy=False))
        offset += need + (-need % 16)
    if data.size != offset:
        raise _Said(
            f"a torn pair: {binary} and {header} hold different tables ({binary} holds {data.size} bytes, {header} "
            f"describes {offset}): write both files again"
        )
    return _Named(name, _table(file, file.declared, values)[1]), binary


def _difference(table: Table, file: _File, ours: str, theirs: str | None) -> str:
    """How a torn pair's files differ, in a few words: their shapes, else their identities."""
    mine = ", ".join(" x ".join(map(str, array.shape)) for array in table.arrays.values())
    other = ", ".join(" x ".join(map(str, shape)) for _, shape in file.comment.shapes)
    if mine != other:
        return f"{mine} and {other}"
    return f"table identities {ours} and {theirs or 'none'}"


def _start(fp: BinaryIO) -> int:
    """Where ``fp`` is; ``FormatError`` if it cannot seek (the file is read twice: once, then compared)."""
    try:
        if fp.seekable():
            return fp.tell()
    except (OSError, ValueError):
        pass
    raise _Said("posenc reads C files from files it can seek in (it reads them twice), not from pipes")


def _size(fp: BinaryIO) -> int | None:
    """The bytes left in ``fp`` from where it is, or ``None`` when it cannot seek."""
    try:
        start = fp.tell()
        end = fp.seek(0, 2)
        fp.seek(start)
    except (OSError, ValueError):
        return None
    return end - start
