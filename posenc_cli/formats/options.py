"""Options shared by the writers. The rules for names are in :mod:`posenc_cli.formats.identifiers`."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError
from .identifiers import KEYWORDS, MAX_NAME, check_name, name_from_path

__all__ = [
    "FLOAT_LITERALS",
    "HALF_TYPES",
    "KEYWORDS",
    "LANGS",
    "MAX_NAME",
    "WriteOptions",
    "check_name",
    "name_from_path",
]


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
        C headers and ``.c``/``.h`` pairs: ``c`` (C89 and later, also valid C++) or ``c++`` (``std::size_t``
        constants, ``constexpr`` in a header). The C++ suffixes (``.hpp``, ``.cpp``, ...) imply ``c++``
        (:func:`posenc_cli.formats.implied_options`).
    namespace : str or None
        C++ only: put the table in this namespace (C++11) instead of the global one (``inline constexpr``, C++17).
    align : int or None
        C: align the table to this many bytes (a power of two) through a portable macro.
    progmem : bool
        C: AVR flash (``PROGMEM``); the table is read with ``pgm_read_*``.
    float_literal : {"decimal", "hex", "bits"}
        C float tables: shortest decimal (C89), hexadecimal floats (C99, C++17), or integer bit patterns.
    c_half_type : str or None
        C float16 tables: ``_Float16`` or ``__fp16`` for native literals; by default ``uint16_t`` bit patterns.
    group : str or None
        HDF5, tables of several arrays: put the datasets in this group instead of the file's root.
    formula : tuple of str
        C: the lines of the table's formula its provenance comment gives (``{name}`` stands for the symbol's name), from
        the table's kind (:attr:`posenc_cli.kinds.Kind.c_formula`); none: the comment gives the parameters alone.
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
    c_half_type: str | None = None
    group: str | None = None
    formula: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.lang not in LANGS:
            raise SpecError(f"lang must be one of {', '.join(LANGS)}, got {self.lang!r}", param="lang")
        if self.namespace is not None:
            if self.lang != "c++":
                raise SpecError(
                    "--namespace puts the table in a C++ namespace and needs --lang c++ or a C++ suffix "
                    "(.hpp, .hh, .hxx, .cpp, .cc, .cxx); this output is C",
                    param="namespace",
                )
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
        if self.c_half_type is not None and self.c_half_type not in HALF_TYPES:
            raise SpecError(
                f"c_half_type must be one of {', '.join(HALF_TYPES)}, got {self.c_half_type!r}", param="c_half_type"
            )
        if self.progmem and self.lang != "c":
            raise SpecError("progmem is for AVR C (avr-libc); it needs lang c", param="progmem")


LANGS = ("c", "c++")
FLOAT_LITERALS = ("decimal", "hex", "bits")
HALF_TYPES = ("_Float16", "__fp16")
