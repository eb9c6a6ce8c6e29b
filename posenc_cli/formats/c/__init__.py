"""C and C++ source: a self-contained header (``.h``), a definition (``.c``) with its declarations (``.h``), or the
raw values (``.bin``) with a header that pulls them in.

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
after ``#include "<stem>.h"``, and ``<stem>.h`` holds the guard, the size macros, ``<NAME>_TABLE_ID`` and the
``extern`` declaration inside ``extern "C"`` guards. The declaration gives the definition external linkage in C++ as
well. Measured on a Cortex-M4: a ``static const`` table in a header used by two files costs two copies of flash; the
pair costs one. The ``.c`` ends with the check that the two files belong together (a pair torn by an interrupted or
concurrent write does not compile; :mod:`~posenc_cli.formats.c.identity` says what the identity covers)::

    #if !defined(<NAME>_TABLE_ID) || <NAME>_TABLE_ID != 0x0123456789ABCDEF
    #error "<stem>.h holds another table than <stem>.c (a torn pair): write both files again"
    #endif

``.bin`` (format ``bin``): the stored values, little-endian, each array padded to 16 bytes, and a ``.h`` with the
declarations and ``<NAME>_TABLE_ID``. The one translation unit that defines ``<NAME>_INCBIN`` defines the arrays
from the ``.bin``: in C23 with ``#embed`` where the compiler has it (Clang 19+, GCC 15+: any target), as unions
whose bytes ``#embed`` initialises, each array's name a macro for its union's array in that unit; elsewhere with
the assembler's ``.incbin`` (GCC, Clang, ELF targets). Every other unit, in C or C++, declares and links the same
symbols either way. Both refuse a ``.bin`` of another size and a big-endian target at build time
(:mod:`~posenc_cli.formats.c.bin` is the spec). A ``.bin`` of the right size and other values is refused by
``posenc verify`` and ``inspect``, which check the identity; a build cannot.

C++ (``lang="c++"``, which the suffixes ``.hpp``/``.hh``/``.hxx`` and ``.cpp``/``.cc``/``.cxx`` imply): the same
files, with ``<cstddef>`` and ``std::size_t`` constants instead of size macros, ``constexpr`` definitions in a
self-contained header, and everything in ``namespace`` when one is given (C++11; without one, ``inline constexpr``,
C++17). A C++ pair (``pe.cpp`` with ``pe.hpp``, :mod:`~posenc_cli.formats._suffixes` pairs the suffixes) declares
the arrays ``extern const`` with C++ linkage (no ``extern "C"``: a namespace's symbols are the namespace's), and the
``.cpp`` defines them inside the namespace and ends with the same identity check as a ``.c``. A C++ file's include
guard is ``POSENC_<NS>_<NAME>_HPP`` and its identity macro ``<NS>_<NAME>_TABLE_ID`` (``<NS>`` the namespace's parts,
upper case, none without one: :mod:`~posenc_cli.formats.c.names`), so neither is the macro of the C file of the
same name nor of the C++ file of the same name in another namespace; ``POSENC_TABLE_ATTRIBUTE`` is there as in C.
The ``.h`` of a ``.bin`` is C only (``lang="c++"`` is refused; it compiles as C++ too).

Every identifier is made by :mod:`posenc_cli.formats.c.names` with the one mapping of
:mod:`posenc_cli.formats.identifiers` (``<name>_<key>`` symbols, ``<NAME>_<AXIS>`` macros, at most 63 characters,
collisions refused); no array, axis or parameter text is pasted into code. Comment text, file names and assembler
strings are escaped as :mod:`~posenc_cli.formats.c.names` describes.

Options (:class:`~posenc_cli.formats.options.WriteOptions`):

- The element type and literal style come from :mod:`posenc_cli.formats.c.elements` (float/double decimals by default;
  hex floats, bit patterns, 16-bit floats, q15/q7/int8 codes, int8/int16/int32/int64 integers), for each array
  its own: a table of int16 indices and float32 coordinates declares an ``int16_t`` and a ``float`` array.
- ``align``: the definition carries ``POSENC_ALIGNED(n)``, defined once per translation unit as ``alignas`` (C++11),
  ``_Alignas`` (C11), ``__attribute__((aligned))`` (GCC, Clang), ``__declspec(align)`` (MSVC) or nothing.
- ``POSENC_TABLE_ATTRIBUTE`` is always there and empty unless the build defines it (``-DPOSENC_TABLE_ATTRIBUTE=
  '__attribute__((section(".tables")))'``), like CMSIS's ``ARM_DSP_TABLE_ATTRIBUTE``.
- ``progmem``: the table goes to AVR flash (``PROGMEM``); read it with ``pgm_read_float``/``pgm_read_word``.
- ``lang="c++"`` (headers and pairs, above): ``inline constexpr`` (C++17) with ``std::size_t`` size constants, or
  ``constexpr`` inside ``namespace`` (C++11) when one is given.
- Affine int8 tables (``dtype`` int8 with a ``scale``) also get ``<NAME>_SCALE`` and ``<NAME>_ZERO_POINT``; plain
  int8 ones (no ``scale``) hold the values themselves and get neither.

Decimal literals compile under C89/C99/C11 and C++98 and later with ``-Wall -Wextra -Wpedantic -Werror``; the
comment states what any other choice needs (the strictest of its arrays' types). Arrays of 1 to
:data:`~posenc_cli.formats.limits.MAX_DIMS` dimensions with at least one value can be written (C has no empty
arrays), each axis with its size macro in the declarator (``bias[<NAME>_HEADS][<NAME>_QUERY][<NAME>_KEY]``); how
the values are laid out is :mod:`~posenc_cli.formats.c.initializer`'s. Every write is byte-reproducible:
:mod:`~posenc_cli.formats.c.reader` reads a file back only if it is, byte for byte, what
:func:`~posenc_cli.formats.c.writer.render` writes for the table and options it finds in it.

The package
-----------
One module per layer; the registry (:data:`posenc_cli.formats.FORMATS`) points at the first two.

- :mod:`~posenc_cli.formats.c.writer`: the five files (``dump_header_only``, ``dump_source``,
  ``dump_declarations``, ``dump_raw``, ``dump_incbin_header``) and :func:`~posenc_cli.formats.c.writer.render`;
- :mod:`~posenc_cli.formats.c.reader`: reading them back, byte for byte, pairs included (its private
  ``_lines`` and ``_layout`` take a file apart and say what it describes);
- :mod:`~posenc_cli.formats.c.elements`: each element type's C type and literals;
  :mod:`~posenc_cli.formats.c.initializer`: how the values are laid out (the Rust writer's too);
  :mod:`~posenc_cli.formats.c.values`: reading them back as a compiler does;
- :mod:`~posenc_cli.formats.c.names`: every symbol and macro, and every escaped string;
  :mod:`~posenc_cli.formats.c.comment`: the provenance comment read back;
  :mod:`~posenc_cli.formats.c.identity`: the table identity of a pair; :mod:`~posenc_cli.formats.c.bin`: the
  ``.h`` of a ``.bin`` (``#embed`` or ``.incbin``).
"""
