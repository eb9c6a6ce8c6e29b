"""C and C++ source: a self-contained header (``.h``), or a definition (``.c``) with its declarations (``.h``).

References: ISO C99 6.4.4.2 (floating constants), CMSIS-DSP ``arm_common_tables.c/.h`` (definition in a .c, ``extern``
in a guarded .h with ``extern "C"``), TFLM ``generate_cc_arrays.py``, ``xxd -i`` (naming).

``.h`` (format ``h``), for a table used by one translation unit or small enough to duplicate::

    /* provenance comment: file, generator version, command, every parameter, the formula; no timestamp */
    #ifndef POSENC_<NAME>_H
    #define POSENC_<NAME>_H
    #define <NAME>_SEQ_LEN 2048
    #define <NAME>_D_MODEL 512
    static const float <name>[<NAME>_SEQ_LEN][<NAME>_D_MODEL] = {
        {0.0f, 1.0f, ...},
        ...
    };
    #endif

``.c`` (format ``c``), for firmware that uses the table from several files: ``<stem>.c`` holds the one definition
``const float <name>[...][...] = {...};`` after ``#include "<stem>.h"``, and ``<stem>.h`` holds the guard, the size
macros and ``extern const float <name>[...][...];`` inside ``extern "C"`` guards. The declaration gives the
definition external linkage in C++ as well (a namespace-scope ``const`` is internal otherwise). Measured on a
Cortex-M4: a ``static const`` table in a header used by two files costs two copies of flash; the pair costs one.

Element type: ``float`` for float32 tables, ``double`` for float64. Each literal is the shortest decimal that reads
back to the identical value, with a ``.`` or an exponent and, for float, the ``f`` suffix (``1.0f``, ``1e-05f``,
``-0.0f``; never ``1f``, which is not C). Decimal literals compile under C89/C99/C11 and C++98 and later, and
``-Wall -Wextra -Wpedantic -Werror`` finds nothing to say about either file.

``<NAME>`` is the table's name upper-cased. Only 2-D float32/float64 tables with at least one row and one column can
be written (C has no empty arrays); posenc does not read C back.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Table
from ._blocks import row_blocks
from ._text import shortest
from .options import WriteOptions

#: Values per source line: keeps lines under about 120 columns, far below C89's 509-character minimum limit.
PER_LINE = 8

_FORMULAS = {
    "sinusoidal": (
        "{name}[pos][2i]   = sin(pos / base^(2i / d_model))",
        "{name}[pos][2i+1] = cos(pos / base^(2i / d_model))",
    ),
}


def dump_header_only(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write a self-contained header: guard, size macros and a ``static const`` definition."""
    ctype, dims = _check(table, options)
    guard = f"POSENC_{options.name.upper()}_H"
    fp.write(_preamble(table, options, guard).encode("utf-8"))
    fp.write(f"static const {ctype} {options.name}{dims} = {{\n".encode("ascii"))
    _write_values(table.array, fp)
    fp.write(f"}};\n\n#endif /* {guard} */\n".encode("ascii"))


def dump_declarations(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.h`` of a ``.c``/``.h`` pair: guard, size macros and the ``extern`` declaration."""
    ctype, dims = _check(table, options)
    guard = f"POSENC_{options.name.upper()}_H"
    fp.write(_preamble(table, options, guard).encode("utf-8"))
    fp.write(
        (
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            f"extern const {ctype} {options.name}{dims};\n\n"
            "#ifdef __cplusplus\n}\n#endif\n\n"
            f"#endif /* {guard} */\n"
        ).encode("ascii")
    )


def dump_source(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write the ``.c`` of a ``.c``/``.h`` pair: the one definition of the table."""
    ctype, dims = _check(table, options)
    header_name = PurePath(options.filename).stem + ".h" if options.filename else options.name + ".h"
    fp.write(_comment(table, options, extra=[f"The declarations are in {header_name}."]).encode("utf-8"))
    fp.write(f'#include "{_c_string(header_name)}"\n\n'.encode())
    fp.write(f"const {ctype} {options.name}{dims} = {{\n".encode("ascii"))
    _write_values(table.array, fp)
    fp.write(b"};\n")


def _check(table: Table, options: WriteOptions) -> tuple[str, str]:
    """The element type and the ``[SEQ][D]`` dimensions, after checking the table fits C."""
    array = table.array
    if array.ndim != 2 or 0 in array.shape:
        raise FormatError(f"C output holds 2-D tables with at least one row and column, got shape {array.shape}")
    if array.dtype not in (np.float32, np.float64):
        raise FormatError(f"C output holds float32 or float64 tables, got {array.dtype}")
    seq, dmod = _macros(options)
    return ("float" if array.dtype == np.float32 else "double"), f"[{seq}][{dmod}]"


def _macros(options: WriteOptions) -> tuple[str, str]:
    upper = options.name.upper()
    return f"{upper}_SEQ_LEN", f"{upper}_D_MODEL"


def _preamble(table: Table, options: WriteOptions, guard: str) -> str:
    seq, dmod = _macros(options)
    return (
        _comment(table, options)
        + f"#ifndef {guard}\n#define {guard}\n\n"
        + f"#define {seq} {table.array.shape[0]}\n#define {dmod} {table.array.shape[1]}\n\n"
    )


def _comment(table: Table, options: WriteOptions, extra: tuple[str, ...] | list[str] = ()) -> str:
    filename = options.filename or options.name
    lines = [f"{filename}: positional-encoding table generated by posenc {__version__}. Do not edit.", ""]
    if options.command:
        lines.append(f"  command: {options.command}")
    lines.append(f"  kind: {table.kind}")
    lines += [f"  {key}: {table.params[key]}" for key in sorted(table.params)]
    lines.append(f"  shape: {table.array.shape[0]} x {table.array.shape[1]}")
    formula = _FORMULAS.get(table.kind)
    if formula:
        lines += [""] + ["  " + line.format(name=options.name) for line in formula]
    lines += ["", "Each literal reads back to the identical value (shortest round-trip decimal)."]
    lines += list(extra)
    body = "".join(f" * {_comment_safe(line)}".rstrip() + "\n" for line in lines)
    return f"/*\n{body} */\n\n"


def _comment_safe(text: str) -> str:
    """Text that cannot end the comment early or smuggle in control characters."""
    text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
    return text.replace("*/", "* /").replace("??", "?\\?")


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _write_values(array: np.ndarray, fp: BinaryIO) -> None:
    suffix = "f" if array.dtype == np.float32 else ""
    for _, block in row_blocks(array, 1 << 20):
        out = []
        for row in shortest(block):
            cells = [text + suffix for text in row]
            chunks = [", ".join(cells[i : i + PER_LINE]) for i in range(0, len(cells), PER_LINE)]
            out.append("    {" + ",\n     ".join(chunks) + "},\n")
        fp.write("".join(out).encode("ascii"))
