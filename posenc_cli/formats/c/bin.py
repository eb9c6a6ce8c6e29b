"""How the ``.h`` of a ``.bin`` (format ``bin``) defines the arrays: C23 ``#embed`` where the compiler has it, the
assembler's ``.incbin`` elsewhere (the ``bin`` layer of :mod:`posenc_cli.formats.c.writer`).

Every translation unit sees the same ``extern const`` declarations; only the one that defines ``<NAME>_INCBIN``
defines the arrays, and it picks how::

    #if defined(<NAME>_INCBIN) && !defined(POSENC_NO_EMBED) && !defined(__cplusplus) && defined(__STDC_VERSION__)
    #if __STDC_VERSION__ >= 202311L && defined(__has_embed)
    #if __has_embed("<stem>.bin" clang::offset(0)) == __STDC_EMBED_FOUND__
    #define POSENC_EMBED clang::offset
    #elif __has_embed("<stem>.bin" gnu::offset(0)) == __STDC_EMBED_FOUND__
    #define POSENC_EMBED gnu::offset
    #endif
    #endif
    #endif

``#embed`` (C23's binary resource inclusion; Clang 19 and later, GCC 15 and later) is taken in C23 mode
(``__STDC_VERSION__`` 202311L) when ``__has_embed`` finds ``<stem>.bin`` (``#embed "..."`` looks beside the header,
then in the ``--embed-dir`` folders, not on the include path) with the compiler's offset parameter, which C23 lacks and
each array after the first needs (``clang::offset``, ``gnu::offset``; proposed for C2y and C++29 as ``offset``).
Not in C++ (``#embed`` is C++26, and reading a union through another member is C's rule, not C++'s); not in C17
and before, where Clang has ``#embed`` as an extension that ``-Wpedantic`` reports; not where ``POSENC_NO_EMBED``
is defined. In those cases, where no offset parameter is known or the ``.bin`` is not found (the assembler may
find it, ``-Wa,-I``), and in every unit that does not define ``<NAME>_INCBIN``, ``POSENC_EMBED`` stays undefined.
The unit that takes ``#embed`` does not see the declarations (``#ifndef POSENC_EMBED`` around them) and defines
each array as a union whose first member, the bytes, ``#embed`` initialises::

    #if __has_embed("pe.bin" POSENC_EMBED(6079)) != __STDC_EMBED_FOUND__
    #error "pe.bin holds fewer than 6080 bytes: write pe.bin and pe.h again"
    #elif __has_embed("pe.bin" POSENC_EMBED(6080)) != __STDC_EMBED_EMPTY__
    #error "pe.bin holds more than 6080 bytes: write pe.bin and pe.h again"
    #endif
    alignas(16) const union {
        unsigned char posenc_bytes[6080];
        float posenc_values[PE_SEQ_LEN][PE_D_MODEL];
    } pe = {{
    #embed "pe.bin" POSENC_EMBED(0) __limit__(6080)
    }};
    #define pe (pe.posenc_values)
    #undef POSENC_EMBED

The object keeps the array's symbol, size (a union of two members of the same size), alignment and section (a
``const`` object: ``.rodata``), so the units that declare ``extern const float pe[...][...]``, in C or C++, with or
without ``#embed``, link to it as to the ``.incbin`` symbol. Reading the values through ``posenc_values`` is
defined in C (6.5.2.3 and its note on type punning: the bytes are reinterpreted as the member's type). In the
defining unit ``pe`` is a macro for that member: ``pe[i][j]``, ``sizeof pe``, ``&pe`` and ``typeof(pe)`` mean what
they mean elsewhere, but ``pe`` cannot name anything else there (a local, a struct member) after the
``#include``. The union type is not the declared array type: C (6.2.7) leaves a program whose declarations of one
object disagree undefined, as it says nothing of a symbol that the assembler defines; every toolchain sees an
address, a size and bytes. The size check is the preprocessor's (the byte before the end exists, none after it):
a ``.bin`` of another size stops the build with one of the two ``#error`` lines.
Macros are expanded in embed parameters (Clang does; C++26 says so), so the standard one is spelled ``__limit__``;
the vendor ones have no such spelling, and the defining unit must not define ``clang``, ``gnu`` or ``offset`` as
macros.

``.incbin`` (GCC or Clang, ELF targets: ``.type`` and ``.size``), one ``__asm__`` statement per array (each string
literal under C90's 509 characters, so ``-std=c89 -pedantic`` stays clean): after each ``.incbin``,
``.org . + (. - <symbol>) - <size>`` moves backwards (an assembler error) when fewer bytes were read (GNU as stops
there by itself, clang's assembler would pad), and the last statement ends with ``.incbin "<stem>.bin", <total>``
and ``.org <last symbol> + <its size>``, backwards when the ``.bin`` holds more.

Both: the ``.bin``'s values are little-endian, so a unit defining ``<NAME>_INCBIN`` for a big-endian target
(``__BYTE_ORDER__``, where the compiler defines it) stops with ``#error``. Arrays are aligned to ``align``, at
least 16 bytes (the ``.bin`` pads each array to 16). ``PROGMEM`` tables (``progmem``, AVR) are always defined by
``.incbin``: avr-gcc targets ELF, and Clang, AVR's other compiler, has no ``progmem`` attribute; their header has
no ``#embed`` part.

The file name is one that :func:`~posenc_cli.formats.c.names.check_file_name` accepts (printable, without ``"``,
``\\``, ``'``, ``/`` or ``??``): as it is in ``#embed "..."`` and ``__has_embed("...")``, which take no escapes, as a
GNU as string inside a C string in ``.incbin``, and escaped in the ``#error`` messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from ...table import Table
from ..options import WriteOptions
from .elements import CElement
from .names import CNames, asm_string, c_string, check_file_name

#: Defined (to the compiler's offset parameter) where the unit defining the arrays takes ``#embed``.
EMBED = "POSENC_EMBED"
#: Defined by a build to keep ``.incbin`` where ``#embed`` would be taken.
NO_EMBED = "POSENC_NO_EMBED"
#: The ``.bin`` pads every array to a multiple of this many bytes, and no array is aligned to less.
PAD = 16
#: The vendor offset parameters, in the order they are tried.
_OFFSETS = ("clang::offset", "gnu::offset")


@dataclass(frozen=True)
class BinHeader:
    """What the ``.h`` of a ``.bin`` adds to the declarations: its comment lines, and the text around them."""

    notes: list[str]
    #: Before the declarations: which way the unit defining the arrays takes (nothing for ``PROGMEM``).
    select: str
    #: After them: the definitions of the arrays.
    define: str

    def around(self, declarations: str) -> str:
        """The declarations, hidden where ``#embed`` defines the arrays, with the text before and after them."""
        if not self.select:
            return f"{declarations}\n{self.define}"
        return f"{self.select}#ifndef {EMBED}\n{declarations}#endif\n\n{self.define}"


@dataclass(frozen=True)
class _Bin:
    """One ``.h`` of a ``.bin`` being written: the table's names and types, the files, where each array is."""

    names: CNames
    elements: dict[str, CElement]
    options: WriteOptions
    header: str
    binary: str
    #: Array key -> where its bytes start in the ``.bin``, and how many they are.
    spans: dict[str, tuple[int, int]]
    #: The ``.bin``'s size.
    total: int
    align: int


def bin_header(
    table: Table, names: CNames, elements: dict[str, CElement], options: WriteOptions, header: str
) -> BinHeader:
    """The parts of the ``.h`` named ``header`` for ``table``; ``SpecError`` for a name that cannot stand in C
    source (:func:`~.names.check_file_name`), the header's or its ``.bin``'s."""
    check_file_name(header, "the file name")
    binary = check_file_name(PurePath(header).with_suffix(".bin").name, "the .bin name")
    spans, total = {}, 0
    for key, array in table.arrays.items():
        spans[key] = (total, int(array.nbytes))
        total += int(array.nbytes) + (-int(array.nbytes) % PAD)
    unit = _Bin(names, elements, options, header, binary, spans, total, max(options.align or 1, PAD))
    big_endian = (
        "defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__"
    )
    define = (
        f"#ifdef {names.incbin}\n#if {big_endian}\n"
        f'#error "{c_string(f"{binary} holds little-endian values, and this target is big-endian")}"\n#endif\n'
    )
    if options.progmem:
        return BinHeader(_notes(unit), "", f"{define}{_incbin(unit)}#endif\n\n")
    define += f"#ifdef {EMBED}\n{_embed(unit)}#undef {EMBED}\n#else\n{_incbin(unit)}#endif\n#endif\n\n"
    return BinHeader(_notes(unit), _select(unit), define)


def _notes(unit: _Bin) -> list[str]:
    """The comment lines: where the values are, how a build gets them, what stops it."""
    binary, incbin = unit.binary, unit.names.incbin
    first = f"The values are in {binary} (the stored values, little-endian, row-major). Define {incbin} in"
    checks = [
        f"The build stops if {binary} does not hold exactly {unit.total} bytes or the target is big-endian;",
        f"{unit.names.table_id} identifies the table.",
    ]
    if unit.options.progmem:
        return [
            first,
            "exactly one translation unit to pull them in with the assembler's .incbin (avr-gcc); the assembler",
            f"must find {binary}: compile in its directory or pass -Wa,-I<its directory>.",
            *checks,
        ]
    return [
        first,
        "exactly one translation unit to define the arrays there. In C23, where the compiler has #embed and its",
        f"offset parameter (Clang 19+, GCC 15+; any target), they are unions whose bytes {binary} initialises,",
        "found beside this header (or in an --embed-dir); in that unit each array's name is a macro for its",
        "union's array. Elsewhere the assembler's .incbin defines them (GCC or Clang, ELF targets) and must",
        f"find {binary}: compile in its directory or pass -Wa,-I<its directory>. {NO_EMBED} keeps .incbin.",
        *checks,
    ]


def _select(unit: _Bin) -> str:
    """The lines that define :data:`EMBED` where the unit defining the arrays takes ``#embed`` (module docstring)."""
    where = f"defined({unit.names.incbin}) && !defined({NO_EMBED}) && !defined(__cplusplus)"
    tests = "".join(
        f'#{"elif" if n else "if"} __has_embed("{unit.binary}" {offset}(0)) == __STDC_EMBED_FOUND__\n'
        f"#define {EMBED} {offset}\n"
        for n, offset in enumerate(_OFFSETS)
    )
    return (
        f"#if {where} && defined(__STDC_VERSION__)\n#if __STDC_VERSION__ >= 202311L && defined(__has_embed)\n"
        f"{tests}#endif\n#endif\n#endif\n\n"
    )


def _embed(unit: _Bin) -> str:
    """The size check and the union definitions of the ``#embed`` way (module docstring)."""
    binary, total = unit.binary, unit.total
    again = f"write {binary} and {unit.header} again"
    text = (
        f'#if __has_embed("{binary}" {EMBED}({total - 1})) != __STDC_EMBED_FOUND__\n'
        f'#error "{c_string(f"{binary} holds fewer than {total} bytes: {again}")}"\n'
        f'#elif __has_embed("{binary}" {EMBED}({total})) != __STDC_EMBED_EMPTY__\n'
        f'#error "{c_string(f"{binary} holds more than {total} bytes: {again}")}"\n'
        "#endif\n"
    )
    for key, symbol in unit.names.symbols.items():
        offset, size = unit.spans[key]
        element = unit.elements[key]
        dims = "".join(f"[{macro}]" for macro in unit.names.dims[key])
        text += (
            f"{element.prefix}alignas({unit.align}) const union {{\n"
            f"    unsigned char posenc_bytes[{size}];\n"
            f"    {element.ctype} posenc_values{dims};\n"
            f"}} {symbol} = {{{{\n"
            f'#embed "{binary}" {EMBED}({offset}) __limit__({size})\n'
            "}};\n"
            f"#define {symbol} ({symbol}.posenc_values)\n"
        )
    return text


def _incbin(unit: _Bin) -> str:
    """The ``__asm__`` statements of the ``.incbin`` way (module docstring): one per array, each entering and leaving
    the section itself, so that no string literal exceeds C90's 509 characters (``-std=c89 -pedantic`` warns past
    them) whatever the number of arrays; the size check of the whole ``.bin`` closes the last one, right after its
    array (the compiler may emit its own data between two statements)."""
    file = asm_string(unit.binary)
    section = f".section {'.progmem.data' if unit.options.progmem else '.rodata'}"
    symbols = list(unit.names.symbols.items())
    statements = []
    for number, (key, symbol) in enumerate(symbols, 1):
        offset, size = unit.spans[key]
        asm = [
            section,
            f".balign {unit.align}",
            f".global {symbol}",
            f".type {symbol}, %object",
            f"{symbol}:",
            f'.incbin "{file}", {offset}, {size}',
            f".org . + (. - {symbol}) - {size}",
            f".size {symbol}, . - {symbol}",
        ]
        if number == len(symbols):
            asm += [f'.incbin "{file}", {unit.total}', f".org {symbol} + {size}"]
        asm.append(".previous")
        block = "".join(f'    "{c_string(line + chr(10))}"\n' for line in asm)
        statements.append(f"__asm__(\n{block});\n")
    return "".join(statements)
