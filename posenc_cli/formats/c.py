"""C and C++ source: a self-contained header (``.h``), or a definition (``.c``) with its declarations (``.h``).

References: ISO C99 6.4.4.2 (floating constants), CMSIS-DSP ``arm_common_tables.c/.h`` (definition in a .c, ``extern``
in a guarded .h with ``extern "C"``, the ``ARM_DSP_TABLE_ATTRIBUTE`` section hook), TFLM ``generate_cc_arrays.py``
(``alignas``), avr-libc ``<avr/pgmspace.h>`` (``PROGMEM``), ``xxd -i`` (naming).

``.h`` (format ``h``), for a table used by one translation unit or small enough to duplicate::

    /* provenance comment: file, generator version, command, every parameter, the formula, what the file needs */
    #ifndef POSENC_<NAME>_H
    #define POSENC_<NAME>_H
    #define <NAME>_SEQ_LEN 2048
    #define <NAME>_D_MODEL 512
    static const float <name>[<NAME>_SEQ_LEN][<NAME>_D_MODEL] POSENC_TABLE_ATTRIBUTE = {
        {0.0f, 1.0f, ...},
    };
    #endif

``.c`` (format ``c``), for firmware that uses the table from several files: ``<stem>.c`` holds the one definition
after ``#include "<stem>.h"``, and ``<stem>.h`` holds the guard, the size macros and the ``extern`` declaration inside
``extern "C"`` guards. The declaration gives the definition external linkage in C++ as well. Measured on a Cortex-M4:
a ``static const`` table in a header used by two files costs two copies of flash; the pair costs one.

Options (:class:`~posenc_cli.formats.options.WriteOptions`):

- The element type and literal style come from :mod:`posenc_cli.formats._ctypes` (float/double decimals by default;
  hex floats, bit patterns, 16-bit floats, q15/q7/int8 integers).
- ``align``: the definition carries ``POSENC_ALIGNED(n)``, defined once per translation unit as ``alignas`` (C++11),
  ``_Alignas`` (C11), ``__attribute__((aligned))`` (GCC, Clang), ``__declspec(align)`` (MSVC) or nothing.
- ``POSENC_TABLE_ATTRIBUTE`` is always there and empty unless the build defines it (``-DPOSENC_TABLE_ATTRIBUTE=
  '__attribute__((section(".tables")))'``), like CMSIS's ``ARM_DSP_TABLE_ATTRIBUTE``.
- ``progmem``: the table goes to AVR flash (``PROGMEM``); read it with ``pgm_read_float``/``pgm_read_word``.
- ``lang="c++"`` (header only): ``inline constexpr`` (C++17) with ``std::size_t`` size constants, or ``constexpr``
  inside ``namespace`` (C++11) when one is given.
- int8 tables also get ``<NAME>_SCALE`` and ``<NAME>_ZERO_POINT``.

Decimal literals compile under C89/C99/C11 and C++98 and later with ``-Wall -Wextra -Wpedantic -Werror``; the
comment states what any other choice needs. ``<NAME>`` is the name upper-cased. Only 2-D tables with at least one
row and one column can be written (C has no empty arrays); posenc does not read C back.
"""

from __future__ import annotations

import warnings
from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError, PosencWarning, SpecError
from ..table import Array, Table
from ._blocks import row_blocks
from ._ctypes import CElement, c_element
from .options import WriteOptions

#: Initializer size above which posenc suggests --format bin (measured: ~1 s of compile time per MiB).
BIG_INITIALIZER = 1 << 20

_FORMULAS = {
    "sinusoidal": (
        "{name}[pos][2i]   = sin(pos / base^(2i / d_model))",
        "{name}[pos][2i+1] = cos(pos / base^(2i / d_model))",
    ),
}

#: The parameters of the paper's own table: with any other, the formula above does not describe the table.
_PAPER_PARAMS = {"seq_len", "d_model", "base", "dtype", "layout", "scale", "zero_point"}

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
    element = _check(table, options)
    _note_if_big(table)
    guard = f"POSENC_{options.name.upper()}_H"
    fp.write(_comment(table, options, element).encode("utf-8"))
    fp.write(f"#ifndef {guard}\n#define {guard}\n\n".encode("ascii"))
    if options.lang == "c++":
        fp.write(_cxx_preamble(table, options, element).encode("ascii"))
        qualifiers = "constexpr" if options.namespace else "inline constexpr"
        for key, symbol in _symbols(table, options):
            declarator = _declarator(table, options, key, symbol)
            declaration = f"{element.prefix}{_aligned(options)}{qualifiers} {element.ctype} {declarator}"
            fp.write(f"{declaration} = {{\n".encode("ascii"))
            _write_values(table.arrays[key], fp, element)
            fp.write(b"};\n\n")
        close = "".join(f"}}  // namespace {part}\n" for part in reversed(_namespaces(options)))
        fp.write(f"{close}{chr(10) if close else ''}#endif /* {guard} */\n".encode("ascii"))
        return
    fp.write(_c_preamble(table, options, element).encode("ascii"))
    for key, symbol in _symbols(table, options):
        declarator = _declarator(table, options, key, symbol)
        definition = f"{element.prefix}{_aligned(options)}static const {element.ctype} {declarator}"
        fp.write(f"{definition}{_placement(options)} = {{\n".encode("ascii"))
        _write_values(table.arrays[key], fp, element)
        fp.write(b"};\n\n")
    fp.write(f"#endif /* {guard} */\n".encode("ascii"))


def dump_declarations(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.h`` of a ``.c``/``.h`` pair: guard, size macros and the ``extern`` declarations."""
    element = _check(table, options, pair=True)
    fp.write(_header_of_definitions(table, options, element, _placement(options)).encode("utf-8"))


def dump_source(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.c`` of a ``.c``/``.h`` pair: the one definition of each array."""
    element = _check(table, options, pair=True)
    _note_if_big(table)
    header_name = PurePath(options.filename).stem + ".h" if options.filename else options.name + ".h"
    fp.write(_comment(table, options, element, extra=[f"The declarations are in {header_name}."]).encode("utf-8"))
    if any(ch in header_name for ch in '"\\\n') or not header_name.isprintable():
        raise SpecError(
            f"the .c includes its header by name, and {header_name!r} cannot appear in an #include: rename the output",
            param="output",
        )
    fp.write(f'#include "{header_name}"\n\n'.encode())  # no escapes in a header name: UTF-8 as it is
    if options.align:
        fp.write(_ALIGN_MACRO.encode("ascii"))
    for n, (key, symbol) in enumerate(_symbols(table, options)):
        definition = (
            f"{element.prefix}{_aligned(options)}const {element.ctype} {_declarator(table, options, key, symbol)}"
        )
        fp.write(f"{chr(10) if n else ''}{definition}{_placement(options)} = {{\n".encode("ascii"))
        _write_values(table.arrays[key], fp, element)
        fp.write(b"};\n")


def dump_raw(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.bin`` of the ``bin`` format: each array's stored values, little-endian, one after another, each
    padded with zeros to a multiple of 16 bytes so that the next one starts aligned."""
    _check(table, options, pair=True)
    for array in table.arrays.values():
        for _, block in row_blocks(array):
            fp.write(np.ascontiguousarray(block, array.dtype.newbyteorder("<")).tobytes())
        fp.write(bytes(-array.nbytes % 16))


def dump_incbin_header(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.h`` of the ``bin`` format: declarations, and the ``.incbin`` that defines the arrays.

    Compilers take about a second per MiB of initializer (gcc 12.8 s and 707 MiB, clang 20.5 s and 2 GiB for a
    16 MiB table); the assembler copies the same bytes in milliseconds. The ``.incbin`` block is emitted where the
    translation unit defines ``<NAME>_INCBIN`` (exactly one must), for GCC and Clang on ELF targets.
    """
    element = _check(table, options, pair=True)
    binary = PurePath(options.filename).with_suffix(".bin").name if options.filename else options.name + ".bin"
    upper = options.name.upper()
    extra = [
        f"The values are in {binary} (the stored values, little-endian, row-major). Define {upper}_INCBIN in",
        "exactly one translation unit to pull them in with the assembler's .incbin (GCC or Clang, ELF targets,",
        f"little-endian); the assembler must find {binary}: compile in its directory or pass -Wa,-I<its directory>.",
    ]
    section = ".progmem.data" if options.progmem else ".rodata"
    align = max(options.align or 1, 16)
    asm = [f".section {section}"]
    offset = 0
    for key, symbol in _symbols(table, options):
        size = table.arrays[key].nbytes
        asm += [
            f".balign {align}",
            f".global {symbol}",
            f".type {symbol}, %object",
            f"{symbol}:",
            f'.incbin \\"{_c_string(binary)}\\", {offset}, {size}',
            f".size {symbol}, . - {symbol}",
        ]
        offset += size + (-size % 16)
    asm.append(".previous")
    incbin = f"#ifdef {upper}_INCBIN\n__asm__(\n" + "".join(f'    "{line}\\n"\n' for line in asm) + ");\n#endif\n\n"
    text = _header_of_definitions(table, options, element, "", extra=extra, before_end=incbin)
    fp.write(text.encode("utf-8"))  # ASCII but for a non-ASCII file name in the comment (the .incbin escapes it)


def _header_of_definitions(
    table: Table,
    options: WriteOptions,
    element: CElement,
    placement: str,
    *,
    extra: list[str] | None = None,
    before_end: str = "",
) -> str:
    """A guarded header with the size macros and ``extern`` declarations of every array."""
    guard = f"POSENC_{options.name.upper()}_H"
    declarations = "".join(
        f"{element.prefix}extern const {element.ctype} {_declarator(table, options, key, symbol)}{placement};\n"
        for key, symbol in _symbols(table, options)
    )
    return (
        _comment(table, options, element, extra=extra)
        + f"#ifndef {guard}\n#define {guard}\n\n"
        + _c_preamble(table, options, element, attribute=bool(placement) and not options.progmem)
        + '#ifdef __cplusplus\nextern "C" {\n#endif\n\n'
        + declarations
        + "\n#ifdef __cplusplus\n}\n#endif\n\n"
        + before_end
        + f"#endif /* {guard} */\n"
    )


def _note_if_big(table: Table) -> None:
    """Warn that a large initializer compiles slowly, and what to use instead."""
    size = sum(array.nbytes for array in table.arrays.values())
    if size > BIG_INITIALIZER:
        warnings.warn(
            f"the table holds {size / 2**20:.1f} MiB of data; compilers take about a second and 50-130 MiB of memory "
            "per MiB of initializer (gcc 13 s / 0.7 GB, clang 20 s / 2 GB for 16 MiB): --format bin writes the raw "
            "table and a header that pulls it in with .incbin in milliseconds",
            PosencWarning,
            stacklevel=2,
        )


def _check(table: Table, options: WriteOptions, *, pair: bool = False) -> CElement:
    """The table's C element type, after checking that the table and the options fit C."""
    for key, array in table.arrays.items():
        if array.ndim not in (1, 2) or 0 in array.shape:
            raise FormatError(f"C output holds 1-D and 2-D arrays without empty axes; {key!r} has shape {array.shape}")
    _dimensions(table, options)  # consistent sizes
    if pair and options.lang != "c":
        raise SpecError(
            "lang c++ applies to the .h format; the .c/.h pair is plain C that compiles as C++ too", param="lang"
        )
    if options.progmem and table.params.get("dtype") == "float64":
        raise SpecError("progmem is for AVR, where double is 32 bits: use dtype float32", param="progmem")
    return c_element(table, options)


def _namespaces(options: WriteOptions) -> list[str]:
    """``a::b`` as nested blocks (``namespace a::b`` needs C++17, the namespace form promises C++11)."""
    return options.namespace.split("::") if options.namespace else []


def _symbols(table: Table, options: WriteOptions) -> list[tuple[str, str]]:
    """``(key, C symbol)`` of every array: the name for a single array, ``<name>_<key>`` for several."""
    if len(table.arrays) == 1:
        return [(key, options.name) for key in table.arrays]
    return [(key, f"{options.name}_{key}") for key in table.arrays]


def _dimensions(table: Table, options: WriteOptions) -> dict[str, int]:
    """Size macro name -> size, over every array's axes; ``FormatError`` when one axis name has two sizes."""
    upper = options.name.upper()
    sizes: dict[str, int] = {}
    for key, array in table.arrays.items():
        for axis, size in zip(table.axes_of(key), array.shape, strict=True):
            macro = f"{upper}_{axis.upper()}"
            if sizes.setdefault(macro, size) != size:
                raise FormatError(f"axis {axis!r} has two sizes in this table ({sizes[macro]} and {size})")
    return sizes


def _declarator(table: Table, options: WriteOptions, key: str, symbol: str) -> str:
    upper = options.name.upper()
    return symbol + "".join(f"[{upper}_{axis.upper()}]" for axis in table.axes_of(key))


def _aligned(options: WriteOptions) -> str:
    return f"POSENC_ALIGNED({options.align}) " if options.align else ""


def _placement(options: WriteOptions) -> str:
    return " PROGMEM" if options.progmem else " POSENC_TABLE_ATTRIBUTE"


def _includes(element: CElement, options: WriteOptions) -> str:
    headers = list(element.includes) + (["<avr/pgmspace.h>"] if options.progmem else [])
    return "".join(f"#include {h}\n" for h in headers) + ("\n" if headers else "")


def _quantisation_macros(table: Table, upper: str, suffix: str) -> str:
    if "scale" not in table.params:
        return ""
    scale = float(table.params["scale"])
    return f"#define {upper}_SCALE {scale!r}{suffix}\n#define {upper}_ZERO_POINT {table.params['zero_point']}\n"


def _c_preamble(table: Table, options: WriteOptions, element: CElement, *, attribute: bool = True) -> str:
    upper = options.name.upper()
    text = _includes(element, options)
    text += "".join(f"#define {macro} {size}\n" for macro, size in _dimensions(table, options).items())
    text += _quantisation_macros(table, upper, "f") + "\n"
    if options.align:
        text += _ALIGN_MACRO
    if attribute and not options.progmem:
        text += _ATTRIBUTE_MACRO
    return text


def _cxx_preamble(table: Table, options: WriteOptions, element: CElement) -> str:
    upper = options.name.upper()
    includes = ["<cstddef>"] + (["<cstdint>"] if element.includes else [])
    text = "".join(f"#include {h}\n" for h in includes) + "\n"
    if options.align:
        text += _ALIGN_MACRO
    if options.namespace:
        text += "".join(f"namespace {part} {{\n" for part in _namespaces(options)) + "\n"
    qualifiers = "constexpr" if options.namespace else "inline constexpr"
    text += "".join(
        f"{qualifiers} std::size_t {macro} = {size};\n" for macro, size in _dimensions(table, options).items()
    )
    if "scale" in table.params:
        text += f"{qualifiers} float {upper}_SCALE = {float(table.params['scale'])!r}f;\n"
        text += f"{qualifiers} int {upper}_ZERO_POINT = {table.params['zero_point']};\n"
    return text + "\n"


def _comment(table: Table, options: WriteOptions, element: CElement, extra: list[str] | None = None) -> str:
    filename = options.filename or options.name
    lines = [f"{filename}: positional-encoding table generated by posenc {__version__}. Do not edit.", ""]
    if options.command:
        lines.append(f"  command: {options.command}")
    lines.append(f"  kind: {table.kind}")
    lines += [f"  {key}: {table.params[key]}" for key in sorted(table.params)]
    lines += [
        f"  shape{'' if len(table.arrays) == 1 else ' of ' + symbol}: {' x '.join(map(str, table.arrays[key].shape))}"
        for key, symbol in _symbols(table, options)
    ]
    formula: tuple[str, ...] | None = _FORMULAS.get(table.kind)
    if formula and not set(table.params) <= _PAPER_PARAMS:  # a preset or other frequencies: the parameters say it
        formula = ("the parameters above define the table (posenc generate --help, posenc presets)",)
    if formula:
        lines += [""] + ["  " + line.format(name=options.name) for line in formula]
    lines.append("")
    if element.reading:
        lines.append(f"Values: {element.reading}.")
    if options.float_literal == "decimal" and element.ctype in ("float", "double"):
        lines.append("Each literal reads back to the identical value (shortest round-trip decimal).")
    needs = (
        "C++17"
        if options.lang == "c++" and not options.namespace
        else "C++11"
        if options.lang == "c++"
        else element.needs
    )
    if options.progmem:
        needs = f"avr-gcc with avr-libc ({needs})"
    lines.append(f"Needs: {needs}.")
    if options.progmem:
        lines += [
            f"AVR flash: read values with pgm_read_{'float' if element.ctype == 'float' else 'word'}"
            f"(&{options.name}[pos][i]); past the first 64 KiB of flash use pgm_get_far_address()",
            "and the _far readers.",
        ]
    lines += extra or []
    body = "".join(f" * {_comment_safe(line)}".rstrip() + "\n" for line in lines)
    return f"/*\n{body} */\n\n"


def _comment_safe(text: str) -> str:
    """Text that cannot end the comment early or smuggle in control characters."""
    text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
    return text.replace("*/", "* /").replace("/*", "/ *").replace("??", "?\\?")


def _c_string(text: str) -> str:
    """``text`` as the body of a C string literal in ASCII: ``\\`` and ``"`` escaped, other bytes of its UTF-8 that
    are not printable ASCII as octal escapes (the compiler turns them back into the same bytes)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        out.append("\\" + char if char in '\\"' else char if 32 <= byte < 127 else f"\\{byte:03o}")
    return "".join(out)


def _write_values(array: Array, fp: BinaryIO, element: CElement) -> None:
    """The initializer's body: ``{...},`` per row of a 2-D array, plain wrapped values for a 1-D one."""
    if array.ndim == 1:
        values = np.asarray(array)[None, :]
        seps = [b",\n    " if (j + 1) % element.per_line == 0 else b", " for j in range(values.shape[1])]
        seps[-1] = b"\n"
        fp.write(element.spell(values, seps, b"    "))
        return
    columns = array.shape[1]
    seps = [b",\n     " if (j + 1) % element.per_line == 0 else b", " for j in range(columns)]
    seps[-1] = b"},\n"
    for _, block in row_blocks(array, 1 << 20):
        fp.write(element.spell(block, seps, b"    {"))
