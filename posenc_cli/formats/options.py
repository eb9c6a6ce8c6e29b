"""Options shared by the writers, and the rules for the table's name.

The name is the C symbol of the table and the HDF5 dataset's name, so it must be a C identifier that is neither a
C/C++ keyword nor reserved: a leading underscore or a double underscore is reserved to the implementation in C and
C++, and a symbol like that can clash with the toolchain's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from ..errors import SpecError

#: C89 to C23 and C++98 to C++23 keywords and alternative tokens: none may name a table.
KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
    co_await co_return co_yield compl concept const const_cast consteval constexpr constinit continue decltype
    default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch
    template this thread_local throw true try typedef typeid typename typeof typeof_unqual union unsigned using
    virtual void volatile wchar_t while xor xor_eq
    """.split()
)

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
#: The largest name posenc accepts: C99 guarantees 63 significant characters for internal identifiers and posenc
#: appends up to 9 (``_SEQ_LEN``) to it for macros.
MAX_NAME = 54


@dataclass(frozen=True)
class WriteOptions:
    """What a writer may need beyond the table.

    Parameters
    ----------
    name : str
        The C symbol and HDF5 dataset name (see :func:`check_name`).
    header : bool
        CSV only: write the ``d0,d1,...`` header row.
    command : str or None
        The command line that produced the file, recorded in the C provenance comment (never a timestamp).
    filename : str or None
        The output's file name (no directory), for files that name themselves or a companion (the ``.c`` includes
        its ``.h`` by this stem).
    lang : {"c", "c++"}
        C headers: ``c`` (C89 and later, also valid C++) or ``c++`` (``constexpr``, ``std::size_t`` sizes).
    namespace : str or None
        C++ only: put the table in this namespace (``constexpr``, C++11) instead of ``inline constexpr`` (C++17).
    align : int or None
        C: align the table to this many bytes (a power of two) through a portable macro.
    progmem : bool
        C: AVR flash (``PROGMEM``); the table is read with ``pgm_read_*``.
    float_literal : {"decimal", "hex", "bits"}
        C float tables: shortest decimal (C89), hexadecimal floats (C99, C++17), or integer bit patterns.
    half_type : str or None
        C float16 tables: ``_Float16`` or ``__fp16`` for native literals; by default ``uint16_t`` bit patterns.
    group : str or None
        HDF5, tables of several arrays: put the datasets in this group instead of the file's root.
    """

    name: str = "pe"
    header: bool = True
    command: str | None = None
    filename: str | None = None
    lang: str = "c"
    namespace: str | None = None
    align: int | None = None
    progmem: bool = False
    float_literal: str = "decimal"
    half_type: str | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        if self.lang not in LANGS:
            raise SpecError(f"lang must be one of {', '.join(LANGS)}, got {self.lang!r}", param="lang")
        if self.namespace is not None:
            if self.lang != "c++":
                raise SpecError("a namespace needs lang c++", param="namespace")
            for part in self.namespace.split("::"):
                check_name(part, param="namespace")
        if self.align is not None and (
            isinstance(self.align, bool)
            or not isinstance(self.align, int)
            or self.align < 1
            or self.align & (self.align - 1)
            or self.align > 4096
        ):
            raise SpecError(f"align must be a power of two from 1 to 4096, got {self.align!r}", param="align")
        if self.float_literal not in FLOAT_LITERALS:
            raise SpecError(
                f"float_literal must be one of {', '.join(FLOAT_LITERALS)}, got {self.float_literal!r}",
                param="float_literal",
            )
        if self.half_type is not None and self.half_type not in HALF_TYPES:
            raise SpecError(
                f"half_type must be one of {', '.join(HALF_TYPES)}, got {self.half_type!r}", param="half_type"
            )
        if self.progmem and self.lang != "c":
            raise SpecError("progmem is for AVR C (avr-libc); it needs lang c", param="progmem")


LANGS = ("c", "c++")
FLOAT_LITERALS = ("decimal", "hex", "bits")
HALF_TYPES = ("_Float16", "__fp16")


def check_name(name: str, *, param: str = "name") -> str:
    """Return ``name`` if it can name a table (or a namespace), else raise ``SpecError`` saying what is allowed.

    Examples
    --------
    >>> check_name("pe_table")
    'pe_table'
    """
    allowed = (
        "a C identifier of at most 54 characters: a letter, then letters, digits or single underscores, "
        "not a C/C++ keyword"
    )
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or len(name) > MAX_NAME:
        raise SpecError(f"{param} must be {allowed}, got {name!r}", param=param)
    if "__" in name:
        raise SpecError(
            f"{param} must be {allowed} (a double underscore is reserved in C/C++), got {name!r}", param=param
        )
    if name in KEYWORDS:
        raise SpecError(f"{param} must be {allowed}; {name!r} is a keyword", param=param)
    return name


def name_from_path(path: str | PurePath) -> str:
    """The default table name: the output file's stem made a valid name, as ``xxd -i`` does.

    Every character that cannot appear in an identifier becomes ``_``, runs of ``_`` fold to one, a leading or
    trailing ``_`` is dropped, a name that would not start with a letter gets the prefix ``pe_``, and a keyword gets
    a trailing ``_``.

    Examples
    --------
    >>> name_from_path("out/pos-enc.v2.h")
    'pos_enc_v2'
    >>> name_from_path("2048x512.npy")
    'pe_2048x512'
    """
    stem = PurePath(path).stem
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", stem)).strip("_")
    if not name[:1].isalpha():
        name = "pe_" + name if name else "pe"
    name = name[:MAX_NAME].rstrip("_")
    return name + "_" if name in KEYWORDS else name
