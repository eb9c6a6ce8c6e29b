"""The names and strings posenc writes into C, C++ and assembler: the naming layer of the C package
(:mod:`posenc_cli.formats.c`).

A table may come from a file posenc did not write, so nothing it carries is pasted into source.

Identifiers are made by :mod:`posenc_cli.formats.identifiers` (its module docstring is the mapping), never taken
from the table as they are:

- ``<name>`` is the table's name: ``--name`` (refused unless :func:`~posenc_cli.formats.identifiers.check_name`
  accepts it) or the output's stem made an identifier (:func:`~posenc_cli.formats.identifiers.name_from_path`);
  ``<NAME>`` is its upper case.
- Array symbols: ``<name>`` for a table of one array; ``<name>_<key>`` for several, each ``<key>`` made by
  ``identifiers(keys, part=True)`` (two keys that map to one identifier are refused, naming both).
- Size macros: ``<NAME>_<AXIS>`` per axis name, ``<AXIS>`` being ``identifier(axis, part=True)`` upper-cased. Two
  axis names that give one macro are refused, and so is one axis with two sizes.
- Fixed names: the guard ``POSENC_<NAME>_H``, ``<NAME>_TABLE_ID`` (the pair formats), ``<NAME>_INCBIN`` (format
  ``bin``), ``<NAME>_SCALE`` and ``<NAME>_ZERO_POINT`` (int8).
- C++ (``lang="c++"``): the guard is ``POSENC_<NS>_<NAME>_HPP`` and the identity ``<NS>_<NAME>_TABLE_ID``, ``<NS>``
  being the namespace's parts upper-cased and joined by ``_`` (none without a namespace: ``POSENC_<NAME>_HPP``).
  The two are macros, which no namespace scopes: the C header and the C++ header of one name (``pe.h`` and
  ``pe.hpp``) and the C++ headers of one name in two namespaces can be included in one translation unit, and no
  guard hides the other file. Everything else a C++ file names is in its namespace.
- No two of these names are equal (``PE_SEQ_LEN`` cannot be a symbol and a macro), and none is longer than
  :data:`SIGNIFICANT`, the 63 characters that C99 (5.2.4.1) keeps significant in a macro or internal name.

Everything else is refused with :class:`~posenc_cli.errors.FormatError` (one line naming the names involved).

Strings that are not names are escaped where they land:

- Comment text (:func:`comment_line`): non-printable characters (controls, line and paragraph separators, bidi
  controls) become ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``; ``*/`` and ``/*`` become ``* /`` and ``/ *``;
  ``??`` becomes ``? ?`` (no trigraph); a backslash that would end the line becomes ``\\x5c`` (no line splice).
  The rule is idempotent: escaped text escapes to itself, so a reader that writes a comment again from its own
  text gets the same bytes.
- File names in ``#include "..."`` and in ``.incbin "..."``: an ``#include`` has no escapes, so only names that
  :func:`check_file_name` accepts are written (printable, none of ``" \\ ' /``, no ``??``).
- Assembler text inside ``__asm__("...")``: a GNU as string (:func:`asm_string`) inside a C string
  (:func:`c_string`, every byte that is not printable ASCII escaped).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import FormatError, SpecError
from ...table import Table
from ..identifiers import check_name, identifier, identifiers

#: The longest identifier posenc writes: C99 5.2.4.1 guarantees 63 significant initial characters in an internal
#: identifier or a macro name (C89 guaranteed 31; every compiler posenc is tested with keeps far more).
SIGNIFICANT = 63


@dataclass(frozen=True)
class CNames:
    """Every identifier one C output of a table uses."""

    name: str
    upper: str
    guard: str
    #: Array key -> C symbol, in the table's order.
    symbols: dict[str, str]
    #: Array key -> the size macro of each of its axes.
    dims: dict[str, tuple[str, ...]]
    #: Size macro -> size, in the order first seen.
    sizes: dict[str, int]
    table_id: str
    incbin: str
    scale: str
    zero_point: str
    #: The guard and the identity macro carry a C++ namespace.
    namespaced: bool = False


def c_names(
    table: Table, name: str, *, quantised: bool = False, cxx: bool = False, namespace: str | None = None
) -> CNames:
    """The identifiers of ``table`` written under the name ``name`` (``quantised``: with the int8 macros; ``cxx``:
    a C++ file, in ``namespace`` if given); ``FormatError`` for collisions or lengths past :data:`SIGNIFICANT`,
    ``SpecError`` for a ``name`` that is not an identifier or makes a fixed name too long."""
    check_name(name)
    upper = name.upper()
    qualified = "".join(part.upper() + "_" for part in (namespace.split("::") if namespace else [])) + upper
    keys = list(table.arrays)
    if len(keys) == 1:
        symbols = {keys[0]: name}
    else:
        symbols = {key: f"{name}_{part}" for key, part in zip(keys, identifiers(keys, part=True), strict=True)}
    axis_of: dict[str, str] = {}  # macro -> the axis name that made it
    sizes: dict[str, int] = {}
    dims: dict[str, tuple[str, ...]] = {}
    for key, array in table.arrays.items():
        macros = []
        for axis, size in zip(table.axes_of(key), array.shape, strict=True):
            macro = f"{upper}_{identifier(axis, part=True).upper()}"
            if axis_of.setdefault(macro, axis) != axis:
                raise FormatError(
                    f"axis names {axis_of[macro]!r} and {axis!r} both become the C macro {macro}; rename one of them"
                )
            if sizes.setdefault(macro, size) != size:
                raise FormatError(f"axis {axis!r} has two sizes in this table ({sizes[macro]} and {size})")
            macros.append(macro)
        dims[key] = tuple(macros)
    names = CNames(
        name,
        upper,
        f"POSENC_{qualified}_HPP" if cxx else f"POSENC_{upper}_H",
        symbols,
        dims,
        sizes,
        f"{qualified if cxx else upper}_TABLE_ID",
        f"{upper}_INCBIN",
        f"{upper}_SCALE",
        f"{upper}_ZERO_POINT",
        cxx and qualified != upper,
    )
    _check_distinct(names, table, quantised)
    return names


def _check_distinct(names: CNames, table: Table, quantised: bool) -> None:
    """``FormatError`` when two of the names are one, or one is longer than C keeps significant."""
    fixed = {
        names.guard: "the include guard",
        names.table_id: "the table identity macro",
        names.incbin: "the .incbin switch",
        names.scale: "the int8 scale macro",
        names.zero_point: "the int8 zero-point macro",
    }
    for macro, what in fixed.items():
        if len(macro) > SIGNIFICANT and (quantised or macro != names.zero_point):
            raise SpecError(
                f"the name {names.name!r}{' in its namespace' if names.namespaced else ''} makes {what} {macro} "
                f"{len(macro)} characters long, and C keeps "
                f"{SIGNIFICANT} significant: use a shorter --name{' or --namespace' if names.namespaced else ''}",
                param="namespace" if names.namespaced else "name",
            )
    seen: dict[str, str] = dict(fixed)
    axes = {
        macro: f"the size macro of axis {axis!r}" for key in table.arrays for macro, axis in _axes(names, table, key)
    }
    arrays = {symbol: f"the symbol of array {key!r}" for key, symbol in names.symbols.items()}
    for name, what in [*axes.items(), *arrays.items()]:
        if len(name) > SIGNIFICANT:
            raise FormatError(
                f"{what} would be {name}, {len(name)} characters, and C keeps {SIGNIFICANT} significant: "
                "use a shorter --name (or rename the array or axis)"
            )
        if name in seen:
            raise FormatError(f"{what} and {seen[name]} would both be {name}: use another --name or rename one")
        seen[name] = what


def _axes(names: CNames, table: Table, key: str) -> Iterable[tuple[str, str]]:
    return zip(names.dims[key], table.axes_of(key), strict=True)


# ---------------------------------------------------------------------------------------------------- strings
def comment_safe(text: str) -> str:
    """``text`` as it may stand inside a ``/* */`` comment (the rule in the module docstring), not yet stripped."""
    text = "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
    text = text.replace("*/", "* /").replace("/*", "/ *")
    while "??" in text:
        text = text.replace("??", "? ?")
    return text


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def comment_line(text: str) -> str:
    """One line of the provenance comment: `` * <text>`` escaped, without trailing blanks, and never ending in a
    backslash (which would splice the next line onto it)."""
    line = f" * {comment_safe(text)}".rstrip()
    return line[:-1] + "\\x5c" if line.endswith("\\") else line


def check_file_name(name: str, what: str) -> str:
    """``name`` if it can stand in ``#include "..."`` and ``.incbin "..."`` as it is; else ``SpecError``."""
    if (
        not name
        or not name.isprintable()
        or any(ch in name for ch in "\"\\'/")
        or "??" in name
        or name != comment_safe(name)
    ):
        raise SpecError(
            f"{what} {name!r} is written into C source (#include, .incbin), where a file name must be printable, "
            "without \" \\ ' / or ??: rename the output",
            param="output",
        )
    return name


def c_string(text: str) -> str:
    """``text`` as the body of a C string literal in ASCII: ``\\`` and ``"`` escaped, a newline as ``\\n``, every
    other byte of its UTF-8 that is not printable ASCII (and ``?``, against trigraphs) as an octal escape."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '\\"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif 32 <= byte < 127 and char != "?":
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def asm_string(text: str) -> str:
    """``text`` as the body of a GNU as string: ``\\`` and ``"`` escaped, control characters as octal escapes;
    other characters as they are (:func:`c_string` then spells the bytes of non-ASCII ones as C octal escapes,
    which the compiler turns back into those bytes for the assembler)."""
    out = []
    for char in text:
        out.append(
            "\\" + char if char in '\\"' else f"\\{ord(char):03o}" if ord(char) < 32 or ord(char) == 127 else char
        )
    return "".join(out)
