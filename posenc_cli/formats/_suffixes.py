"""The C and C++ file suffixes: which are C++, and which header a source file's suffix pairs with.

``.h`` is a C header and ``.c`` a C source; ``.hpp``, ``.hh``, ``.hxx`` are C++ headers and ``.cpp``, ``.cc``,
``.cxx`` C++ sources. A source and its header take matching suffixes (:data:`HEADER_OF`: ``.cc`` and ``.hh``,
``.cpp`` and ``.hpp``, ``.cxx`` and ``.hxx``, ``.c`` and ``.h``); a source with any other suffix (``--format c``
forced onto ``pe.txt``) pairs with a ``.h``. Suffixes are compared in lower case, and the header's is always
written in lower case (``PE.CPP`` pairs with ``PE.hpp``, as ``PE.C`` pairs with ``PE.h``).

Kept apart from the writers so that the registry (:mod:`posenc_cli.formats`) and the C writer
(:mod:`posenc_cli.formats.c.writer`) share one table without the registry importing the C writer.

Examples
--------
>>> header_name("pe.cpp"), header_name("pe.c"), header_name("pe.txt")
('pe.hpp', 'pe.h', 'pe.h')
>>> source_name("pe.hh"), source_name("pe.h")
('pe.cc', 'pe.c')
"""

from __future__ import annotations

from pathlib import PurePath

#: C++ header suffixes (the ``h`` format) and C++ source suffixes (the ``c`` format).
CXX_HEADERS = (".hpp", ".hh", ".hxx")
CXX_SOURCES = (".cpp", ".cc", ".cxx")
CXX = frozenset(CXX_HEADERS + CXX_SOURCES)

#: Source suffix -> the suffix of the header it pairs with.
HEADER_OF = {".c": ".h", ".cpp": ".hpp", ".cc": ".hh", ".cxx": ".hxx"}
#: Header suffix -> the suffix of the source it pairs with.
SOURCE_OF = {header: source for source, header in HEADER_OF.items()}


def header_suffix(source_suffix: str) -> str:
    """The suffix of the header that pairs with a source of ``source_suffix`` (``.h`` for any but a C++ one)."""
    return HEADER_OF.get(source_suffix.lower(), ".h")


def header_name(source: str) -> str:
    """The file name of the header that pairs with the source file named ``source`` (no directory)."""
    path = PurePath(source)
    return path.stem + header_suffix(path.suffix)


def source_name(header: str) -> str:
    """The file name of the source that pairs with the header named ``header`` (``.c`` for any but a C++ one)."""
    path = PurePath(header)
    return path.stem + SOURCE_OF.get(path.suffix.lower(), ".c")


def is_cxx(path: str | PurePath) -> bool:
    """Whether ``path``'s suffix is a C++ one."""
    return PurePath(path).suffix.lower() in CXX
