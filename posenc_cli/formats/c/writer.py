"""Writing the C family's files: the self-contained ``.h``, the ``.c`` and ``.h`` of a pair, the ``.bin`` and its
``.h``, in C or C++ (the spec of every one of them is the package's docstring, :mod:`posenc_cli.formats.c`).

Each ``dump_*`` function is one file of the registry (:data:`posenc_cli.formats.FORMATS`); :func:`render` writes
any of them into a :class:`~posenc_cli.formats.c.initializer.Sink`, which is how the reader
(:mod:`~posenc_cli.formats.c.reader`) holds a file to what this module writes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

import numpy as np

from ..._version import __version__
from ...errors import FormatError, PosencAdvice, SpecError, warn
from ...table import Table
from .._blocks import row_blocks
from .._suffixes import header_name
from ..limits import MAX_DIMS
from ..options import WriteOptions
from ..text.spell import element_name, is_affine
from .bin import PAD, bin_header
from .elements import CElement, c_elements, summary
from .identity import ValuesHash, remember, table_id, values_digest
from .initializer import Sink, write_values
from .names import CNames, c_names, c_string, check_file_name, comment_line

#: Initializer size above which posenc suggests --format bin (measured: ~1 s of compile time per MiB).
BIG_INITIALIZER = 1 << 20

#: What one C file is: a self-contained header, the .c of a pair, the .h of a pair, the .h of a .bin.
Variant = Literal["h", "c", "decl", "incbin"]


_ALIGN_MACRO = """#ifndef POSENC_ALIGNED
#if defined(__cplusplus) && __cplusplus >= 201103L
#define POSENC_ALIGNED(n) alignas(n)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define POSENC_ALIGNED(n) _Alignas(n)
#elif defined(__GNUC__) || defined(__clang__)
#define POSENC_ALIGNED(n) __attribute__((aligned(n)))
#elif defined(_MSC_VER)
#define POSENC_ALIGNED(n) __declspec(align(n))
#else
#define POSENC_ALIGNED(n)
#endif
#endif

"""

_ATTRIBUTE_MACRO = """/* Define POSENC_TABLE_ATTRIBUTE to place the table, e.g. __attribute__((section(".tables"))). */
#ifndef POSENC_TABLE_ATTRIBUTE
#define POSENC_TABLE_ATTRIBUTE
#endif

"""


def dump_header_only(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write a self-contained header: guard, size macros and a ``static const`` (or ``constexpr``) definition."""
    _note_if_big(table, options)
    render("h", table, fp, options)


def dump_source(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.c`` of a ``.c``/``.h`` pair: the one definition of each array, and the identity check."""
    _note_if_big(table, options)
    render("c", table, fp, options)


def dump_declarations(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.h`` of a ``.c``/``.h`` pair: guard, size macros, identity and the ``extern`` declarations."""
    render("decl", table, fp, options)


def dump_incbin_header(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.h`` of the ``bin`` format: declarations, identity, and the definitions of the arrays.

    Compilers take about a second per MiB of initializer (gcc 12.8 s and 707 MiB, clang 20.5 s and 2 GiB for a
    16 MiB table); ``#embed`` and the assembler copy the same bytes in milliseconds. The definitions are compiled
    where the translation unit defines ``<NAME>_INCBIN`` (exactly one must): C23 ``#embed`` where the compiler has
    it, else ``.incbin`` (GCC and Clang on ELF targets; :mod:`~posenc_cli.formats.c.bin`).
    """
    render("incbin", table, fp, options)


def dump_raw(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.bin`` of the ``bin`` format: each array's stored values, little-endian, one after another, each
    padded with zeros to a multiple of 16 bytes (:data:`~.bin.PAD`) so that the next one starts aligned."""
    _Unit.of(table, options, "incbin")
    hasher = ValuesHash()
    for array in table.arrays.values():
        hasher.start(array)
        for _, block in row_blocks(array):
            hasher.update(block)
            fp.write(np.ascontiguousarray(block, array.dtype.newbyteorder("<")).tobytes())
        fp.write(bytes(-array.nbytes % PAD))
    remember(table, hasher.hexdigest())


def render(
    variant: Variant,
    table: Table,
    fp: Sink,
    options: WriteOptions,
    *,
    version: str = __version__,
    identity: str | None = None,
) -> None:
    """Write one C file of ``table``: what the dump functions write. ``version`` is the one the comment names;
    ``identity`` the table identity of a pair's file (by default computed from the values)."""
    unit = _Unit.of(table, options, variant, version, identity)
    if variant == "h":
        _header_only(unit, fp)
    elif variant == "c":
        _source(unit, fp)
    else:
        fp.write(_declarations(unit, variant).encode("utf-8"))


@dataclass(frozen=True)
class _Unit:
    """One C file being written: the table, its options, element type and names."""

    table: Table
    options: WriteOptions
    #: Array key -> its element type in C.
    elements: dict[str, CElement]
    names: CNames
    variant: Variant
    version: str
    given_identity: str | None

    @classmethod
    def of(
        cls,
        table: Table,
        options: WriteOptions,
        variant: Variant,
        version: str = __version__,
        identity: str | None = None,
    ) -> _Unit:
        """Check that the table and the options fit C; ``FormatError`` or ``SpecError`` otherwise."""
        for key, array in table.arrays.items():
            if not 1 <= array.ndim <= MAX_DIMS or 0 in array.shape:
                raise FormatError(
                    f"C output holds arrays of 1 to {MAX_DIMS} dimensions without empty axes; {key!r} has shape "
                    f"{array.shape}"
                )
        if variant == "incbin" and options.lang != "c":
            raise SpecError(
                "lang c++ applies to the h and c formats; the .h of a .bin is C, which compiles as C++ too",
                param="lang",
            )
        if options.progmem and any(element_name(table, key) == "float64" for key in table.arrays):
            raise SpecError("progmem is for AVR, where double is 32 bits: use dtype float32", param="progmem")
        elements = c_elements(table, options)
        names = c_names(
            table, options.name, quantised=_affine(table), cxx=options.lang == "c++", namespace=options.namespace
        )
        return cls(table, options, elements, names, variant, version, identity)

    def filename(self) -> str:
        return self.options.filename or self.options.name

    def declarator(self, key: str) -> str:
        return self.names.symbols[key] + "".join(f"[{macro}]" for macro in self.names.dims[key])

    def typed(self, key: str) -> str:
        """``<ctype> <declarator>`` of array ``key``."""
        return f"{self.elements[key].ctype} {self.declarator(key)}"

    def ctypes(self) -> list[str]:
        """The C types of the arrays, each once, in the table's order."""
        return list(dict.fromkeys(element.ctype for element in self.elements.values()))

    def identity(self, digest: str | None = None) -> str:
        """The table identity: the one given, else made from the values' digest (by default computed)."""
        if self.given_identity is not None:
            return self.given_identity
        digest = digest if digest is not None else values_digest(self.table)
        elements = {key: element_name(self.table, key) for key in self.table.arrays}
        return table_id(self.table, self.names, elements, self.options, self.version, digest)


# -------------------------------------------------------------------------------------------------- the files
def _header_only(unit: _Unit, fp: Sink) -> None:
    """A self-contained header: C (``static const``) or C++ (``constexpr``, optionally in a namespace)."""
    options, guard = unit.options, unit.names.guard
    fp.write(_comment(unit).encode("utf-8"))
    fp.write(f"#ifndef {guard}\n#define {guard}\n\n".encode("ascii"))
    if options.lang == "c++":
        fp.write(_cxx_preamble(unit).encode("ascii"))
        qualifiers = "constexpr" if options.namespace else "inline constexpr"
        for key in unit.table.arrays:
            declaration = f"{unit.elements[key].prefix}{_aligned(options)}{qualifiers} {unit.typed(key)}"
            fp.write(f"{declaration}{_placement(options)} = {{\n".encode("ascii"))
            write_values(unit.table, key, unit.elements[key], fp, None)
            fp.write(b"};\n\n")
        close = _close_namespaces(options)
        fp.write(f"{close}{chr(10) if close else ''}#endif /* {guard} */\n".encode("ascii"))
        return
    fp.write(_c_preamble(unit).encode("ascii"))
    for key in unit.table.arrays:
        definition = f"{unit.elements[key].prefix}{_aligned(options)}static const {unit.typed(key)}"
        fp.write(f"{definition}{_placement(options)} = {{\n".encode("ascii"))
        write_values(unit.table, key, unit.elements[key], fp, None)
        fp.write(b"};\n\n")
    fp.write(f"#endif /* {guard} */\n".encode("ascii"))


def _source(unit: _Unit, fp: Sink) -> None:
    """The ``.c`` of a pair: the definitions (in C++, inside the namespace), then the check of the ``.h``'s identity
    (hashed as they are written)."""
    options = unit.options
    check_file_name(unit.filename(), "the file name")
    header = check_file_name(header_name(unit.filename()), "the header name")
    note = f"The declarations are in {header}; the build stops if it holds another table ({unit.names.table_id})."
    fp.write(_comment(unit, [note]).encode("utf-8"))
    fp.write(f'#include "{header}"\n\n'.encode())  # no escapes in a header name: UTF-8 as it is
    if options.align:
        fp.write(_ALIGN_MACRO.encode("ascii"))
    if options.namespace:
        fp.write(_open_namespaces(options).encode("ascii"))
    hasher = ValuesHash()
    for n, key in enumerate(unit.table.arrays):
        definition = f"{unit.elements[key].prefix}{_aligned(options)}const {unit.typed(key)}"
        fp.write(f"{chr(10) if n else ''}{definition}{_placement(options)} = {{\n".encode("ascii"))
        write_values(unit.table, key, unit.elements[key], fp, hasher)
        fp.write(b"};\n")
    if options.namespace:
        fp.write(f"\n{_close_namespaces(options)}".encode("ascii"))
    digest = hasher.hexdigest()
    remember(unit.table, digest)
    macro = unit.names.table_id
    message = c_string(f"{header} holds another table than {unit.filename()} (a torn pair): write both files again")
    check = f'#if !defined({macro}) || {macro} != {unit.identity(digest)}\n#error "{message}"\n#endif\n'
    fp.write(f"\n{check}".encode("ascii"))


def _declarations(unit: _Unit, variant: Variant) -> str:
    """The ``.h`` of a pair (``decl``) or of a ``.bin`` (``incbin``): guard, macros, identity, declarations."""
    options, names = unit.options, unit.names
    identity = unit.identity()
    if options.lang == "c++":
        return _cxx_declarations(unit, identity)
    binary = bin_header(unit.table, names, unit.elements, options, unit.filename()) if variant == "incbin" else None
    placement = "" if binary else _placement(options)
    declarations = "".join(
        f"{unit.elements[key].prefix}extern const {unit.typed(key)}{placement};\n" for key in unit.table.arrays
    )
    block = f'#ifdef __cplusplus\nextern "C" {{\n#endif\n\n{declarations}\n#ifdef __cplusplus\n}}\n#endif\n'
    extra = [
        "The definitions are in the .c file that includes this header; it stops the build if this header",
        f"holds another table ({names.table_id}).",
    ]
    return (
        _comment(unit, binary.notes if binary else extra)
        + f"#ifndef {names.guard}\n#define {names.guard}\n\n"
        + _c_preamble(unit, attribute=bool(placement) and not options.progmem, identity=identity)
        + (binary.around(block) if binary else block + "\n")
        + f"#endif /* {names.guard} */\n"
    )


def _cxx_declarations(unit: _Unit, identity: str) -> str:
    """The ``.h`` of a C++ pair: guard, identity macro, constants and ``extern`` declarations (C++ linkage), in the
    namespace if there is one."""
    options, names = unit.options, unit.names
    extra = [
        "The definitions are in the C++ source file that includes this header; it stops the build if this header",
        f"holds another table ({names.table_id}).",
    ]
    declarations = "".join(
        f"{unit.elements[key].prefix}extern const {unit.typed(key)}{_placement(options)};\n"
        for key in unit.table.arrays
    )
    close = _close_namespaces(options)
    return (
        _comment(unit, extra)
        + f"#ifndef {names.guard}\n#define {names.guard}\n\n"
        + _cxx_preamble(unit, identity=identity)
        + declarations
        + "\n"
        + (f"{close}\n" if close else "")
        + f"#endif /* {names.guard} */\n"
    )


def _note_if_big(table: Table, options: WriteOptions) -> None:
    """Advise (:class:`~posenc_cli.errors.PosencAdvice`, from the caller's line) that an initializer over
    :data:`BIG_INITIALIZER` compiles slowly, naming the file, and what to write instead."""
    size = sum(array.nbytes for array in table.arrays.values())
    if size > BIG_INITIALIZER:
        file = options.filename if options.filename and options.filename != "-" else "the table"
        warn(PosencAdvice(
            f"{file} holds {size / 2**20:.1f} MiB of data; compilers take about a second and 50-130 MiB of memory "
            "per MiB of initializer (gcc 13 s / 0.7 GB, clang 20 s / 2 GB for 16 MiB): --format bin writes the raw "
            "table and a header that pulls it in with .incbin (or #embed) in milliseconds"
        ))  # fmt: skip


# --------------------------------------------------------------------------------------------------- the parts
def _namespaces(options: WriteOptions) -> list[str]:
    """``a::b`` as nested blocks (``namespace a::b`` needs C++17, the namespace form promises C++11)."""
    return options.namespace.split("::") if options.namespace else []


def _open_namespaces(options: WriteOptions) -> str:
    """The lines that open the namespace, and a blank line; nothing without one."""
    parts = _namespaces(options)
    return "".join(f"namespace {part} {{\n" for part in parts) + ("\n" if parts else "")


def _close_namespaces(options: WriteOptions) -> str:
    """The lines that close the namespace, innermost first; nothing without one."""
    return "".join(f"}}  // namespace {part}\n" for part in reversed(_namespaces(options)))


def _aligned(options: WriteOptions) -> str:
    return f"POSENC_ALIGNED({options.align}) " if options.align else ""


def _placement(options: WriteOptions) -> str:
    return " PROGMEM" if options.progmem else " POSENC_TABLE_ATTRIBUTE"


def _includes(unit: _Unit, options: WriteOptions) -> str:
    headers = list(summary(unit.elements.values())[0]) + (["<avr/pgmspace.h>"] if options.progmem else [])
    return "".join(f"#include {h}\n" for h in headers) + ("\n" if headers else "")


def _affine(table: Table) -> bool:
    """Whether the table holds affine int8 arrays (:func:`~posenc_cli.formats.text.spell.is_affine`)."""
    return is_affine(table.params) and any(element_name(table, key) == "int8" for key in table.arrays)


def _quantisation(unit: _Unit) -> tuple[str, str] | None:
    """The int8 scale (a C float literal without suffix) and zero point, checked: they are written as code."""
    params = unit.table.params
    if not _affine(unit.table):
        return None
    scale, zero_point = params["scale"], params.get("zero_point")
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise FormatError(f"the int8 scale must be a finite number to be written as C, got {scale!r}")
    if isinstance(zero_point, bool) or not isinstance(zero_point, int) or not -128 <= zero_point <= 127:
        raise FormatError(f"the int8 zero_point must be an integer from -128 to 127, got {zero_point!r}")
    if abs(float(scale)) > float(np.finfo(np.float32).max):
        raise FormatError(f"the int8 scale {scale!r} is out of the range of float")
    return repr(float(scale)), str(int(zero_point))


def _c_preamble(unit: _Unit, *, attribute: bool = True, identity: str | None = None) -> str:
    names, options = unit.names, unit.options
    text = _includes(unit, options)
    text += "".join(f"#define {macro} {size}\n" for macro, size in names.sizes.items())
    quantisation = _quantisation(unit)
    if quantisation is not None:
        text += f"#define {names.scale} {quantisation[0]}f\n#define {names.zero_point} {quantisation[1]}\n"
    if identity is not None:
        text += f"#define {names.table_id} {identity}\n"
    text += "\n"
    if options.align:
        text += _ALIGN_MACRO
    if attribute and not options.progmem:
        text += _ATTRIBUTE_MACRO
    return text


def _cxx_preamble(unit: _Unit, *, identity: str | None = None) -> str:
    """Includes, the identity macro (the ``.h`` of a pair), the alignment and attribute hooks, the opening of the
    namespace and the size (and int8) constants of a C++ file."""
    names, options = unit.names, unit.options
    includes = ["<cstddef>"] + (["<cstdint>"] if summary(unit.elements.values())[0] else [])
    text = "".join(f"#include {h}\n" for h in includes) + "\n"
    if identity is not None:
        text += f"#define {names.table_id} {identity}\n\n"
    if options.align:
        text += _ALIGN_MACRO
    text += _ATTRIBUTE_MACRO
    text += _open_namespaces(options)
    qualifiers = "constexpr" if options.namespace else "inline constexpr"
    text += "".join(f"{qualifiers} std::size_t {macro} = {size};\n" for macro, size in names.sizes.items())
    quantisation = _quantisation(unit)
    if quantisation is not None:
        text += f"{qualifiers} float {names.scale} = {quantisation[0]}f;\n"
        text += f"{qualifiers} int {names.zero_point} = {quantisation[1]};\n"
    return text + "\n"


def _comment(unit: _Unit, extra: list[str] | None = None) -> str:
    table, options, name = unit.table, unit.options, unit.names.name
    _, needs, reading = summary(unit.elements.values())
    floats = any(ctype in ("float", "double") for ctype in unit.ctypes())
    lines = [f"{unit.filename()}: positional-encoding table generated by posenc {unit.version}. Do not edit.", ""]
    if options.command:
        lines.append(f"  command: {options.command}")
    lines.append(f"  kind: {table.kind}")
    lines += [f"  {key}: {table.params[key]}" for key in sorted(table.params)]
    lines += [
        f"  shape{'' if len(table.arrays) == 1 else ' of ' + symbol}: {' x '.join(map(str, table.arrays[key].shape))}"
        for key, symbol in unit.names.symbols.items()
    ]
    if options.formula:  # the kind's, for these parameters (posenc_cli.kinds.Kind.c_formula)
        lines += [""] + ["  " + line.replace("{name}", name) for line in options.formula]
    lines.append("")
    if reading:
        lines.append(f"Values: {reading}.")
    if unit.variant == "incbin":  # no literals: the values are the .bin's bytes
        if floats:
            lines.append("Each value is stored bit for bit in the .bin: no decimal literal, nothing rounded.")
        if options.float_literal == "hex":
            needs = summary(_without_hex(unit))[1]
    elif options.float_literal == "decimal" and floats:
        lines.append("Each literal reads back to the identical value (shortest round-trip decimal).")
    if options.lang == "c++":
        needs = "C++11" if options.namespace else "C++17"
    if options.progmem:
        needs = f"avr-gcc with avr-libc ({needs})"
    lines.append(f"Needs: {needs}.")
    if options.progmem:
        lines += [
            f"AVR flash: read values with {_flash_readers(unit)}(&{name}[pos][i]); past the first 64 KiB of flash use "
            "pgm_get_far_address()",
            "and the _far readers.",
        ]
    lines += extra or []
    body = "".join(comment_line(line) + "\n" for line in lines)
    return f"/*\n{body} */\n\n"


def _without_hex(unit: _Unit) -> Iterator[CElement]:
    """The arrays' element types as a ``.bin`` holds them: a float array's bytes need no hex literal (C89)."""
    for element in unit.elements.values():
        yield dataclasses.replace(element, needs="C89") if element.ctype in ("float", "double") else element


#: The avr-libc reader of each C type the ``word``/``float`` pair does not cover.
_FLASH_READERS = {"int32_t": "pgm_read_dword", "int64_t": "memcpy_P"}


def _flash_readers(unit: _Unit) -> str:
    """How the arrays are read from AVR flash: ``pgm_read_float``, ``pgm_read_word``, ..., each once, with the C
    type it reads when there are several."""
    readers = {
        ctype: _FLASH_READERS.get(ctype, "pgm_read_float" if ctype == "float" else "pgm_read_word")
        for ctype in unit.ctypes()
    }
    if len(set(readers.values())) == 1:
        return next(iter(readers.values()))
    return ", ".join(f"{reader} ({ctype})" for ctype, reader in readers.items()) + " "
