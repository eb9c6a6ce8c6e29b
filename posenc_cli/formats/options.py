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
    """

    name: str = "pe"
    header: bool = True
    command: str | None = None
    filename: str | None = None


def check_name(name: str) -> str:
    """Return ``name`` if it can name a table, else raise ``SpecError`` saying what is allowed.

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
        raise SpecError(f"name must be {allowed}, got {name!r}", param="name")
    if "__" in name:
        raise SpecError(f"name must be {allowed} (a double underscore is reserved in C/C++), got {name!r}", param="name")
    if name in KEYWORDS:
        raise SpecError(f"name must be {allowed}; {name!r} is a keyword", param="name")
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
