"""The format registry: the one list of file formats that everything else reads.

Suffix inference, the CLI's ``--format`` choices and its help text all come from :data:`FORMATS`, a literal dict of
:class:`Format` records (meshio's suffix registry, without its import-time self-registration). Each format lives in
its own module with symmetric verbs on binary file objects::

    dump(table, fp, options)   # write one file
    load(fp) -> Table          # read it back

A format that writes a second file next to the first (the ``.c`` source and its ``.h`` declarations) names it in
``companion``: the suffix that replaces the output's suffix (:func:`companion_path`: ``pe.c`` pairs with ``pe.h``,
``pe.cpp`` with ``pe.hpp``), the function that writes it, and how to recognise a file posenc wrote there
(:func:`written_by_posenc`). A suffix can also imply write options (:func:`implied_options`: the C++ suffixes imply
``lang="c++"``). Paths, atomic replace and suffix inference live once, in :mod:`posenc_cli.api` and
:mod:`posenc_cli.system.atomic`, never in a format module.

C++ suffixes: ``.hpp``, ``.hh`` and ``.hxx`` are the ``h`` format, ``.cpp``, ``.cc`` and ``.cxx`` the ``c`` format,
each implying ``lang="c++"``; a ``c`` output's header takes the matching suffix (``.cc`` and ``.hh``, ``.cpp`` and
``.hpp``, ``.cxx`` and ``.hxx``, ``.c`` and ``.h``; a ``.bin``'s header is always ``.h``, C only).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from ..errors import FormatError, SpecError
from ..table import Table
from ._suffixes import CXX, CXX_HEADERS, CXX_SOURCES, HEADER_OF
from .limits import Budget
from .options import WriteOptions

#: ``load_parts(fp, keys, budget)``: :attr:`Format.load_parts`.
LoadParts = Callable[[BinaryIO, Iterable[str], Callable[[], Budget]], Iterator[tuple[str, "Table | FormatError"]]]

__all__ = [
    "C_OPTIONS",
    "FORMATS",
    "FORMAT_NAMES",
    "OPTION_DEFAULTS",
    "Companion",
    "Format",
    "WriteOptions",
    "by_name",
    "check_options",
    "companion_path",
    "implied_options",
    "infer",
    "written_by_posenc",
]

Dump = Callable[[Table, BinaryIO, WriteOptions], None]


def _lazy(module: str, name: str) -> Any:
    """``posenc_cli.formats.<module>.<name>``, imported on first call: writing a .npy never pays for the text
    formatters' tables, and ``posenc --help`` for none of them."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"{module}.{name}"
    return call


#: ``load(fp, budget)``: the table in ``fp``, allocating no more than the :class:`~posenc_cli.formats.limits.Budget`.
Load = Callable[[BinaryIO, Budget], Table]


@dataclass(frozen=True)
class Companion:
    """A second file a format writes beside the output: same stem, this suffix.

    ``when`` limits it to the tables that need it; ``load`` merges what it holds into the table read from the main
    file (a metadata sidecar). ``suffixes`` gives the companion another suffix for some output suffixes (``.cpp``:
    ``.hpp``), as ``(output suffix, companion suffix)`` pairs in lower case; ``signature`` is what the first bytes
    of every file posenc writes at the companion's path match (:func:`written_by_posenc`).
    """

    suffix: str
    dump: Dump
    when: Callable[[Table], bool] | None = None
    load: Callable[[Table, BinaryIO, Budget], Table] | None = None
    suffixes: tuple[tuple[str, str], ...] = ()
    signature: re.Pattern[bytes] | None = None


@dataclass(frozen=True)
class Format:
    """One registered file format.

    ``suffixes`` are lower-case and start with a dot; the first is the canonical one. ``aliases`` are other names
    :func:`by_name` accepts (``hdf5`` for ``h5``). ``load`` is ``None`` for formats posenc writes but does not read
    back. ``text`` marks formats that spell every value in decimal (about ten times the work per value of a binary
    format).
    """

    name: str
    suffixes: tuple[str, ...]
    description: str
    dump: Dump
    load: Load | None = None
    companion: Companion | None = None
    text: bool = False
    #: The format holds a single array: a table of several needs ``part=`` (``--part``).
    single: bool = False
    #: The write options (:class:`~posenc_cli.formats.options.WriteOptions` fields beyond ``name``) this format
    #: takes; any other, given with a value other than its default, is refused (:func:`check_options`).
    options: frozenset[str] = frozenset()
    aliases: tuple[str, ...] = ()
    #: ``load_parts(fp, keys, budget)``: each array of ``keys``, alone, of a file that may hold many more than posenc
    #: reads whole (a model's checkpoint), reading no other array and its header once: ``(key, table or error)``
    #: in turn, each claimed from its own ``budget()``; ``None`` where the format has no such read.
    load_parts: LoadParts | None = None
    #: ``names(fp)``: the keys of every array of such a file, reading no data (with ``load_parts``).
    names: Callable[[BinaryIO], list[str]] | None = None
    #: ``stream(fp, budget)``: a context in which the table of ``fp`` (checked and claimed as ``load`` checks and
    #: claims it) reads its arrays from ``fp`` a block at a time as they are used
    #: (:class:`~posenc_cli.table.FileArray`); ``None`` where the format is read whole.
    stream: Callable[[BinaryIO, Budget], AbstractContextManager[Table]] | None = None


#: The start of every C file posenc writes: ``/*`` and the first line of the provenance comment
#: (:mod:`posenc_cli.formats.c.comment`), the file's name escaped; line ends LF, or CRLF after a checkout that
#: converts them.
_C_SIGNATURE = re.compile(
    rb"/\*\r?\n \* [^\r\n]*: positional-encoding table generated by posenc [^\s\"]+\. Do not edit\.\r?\n"
)
#: The start of every ``.json`` sidecar posenc writes (:func:`posenc_cli.formats.npy.dump_sidecar`: sorted keys,
#: indent 2, so ``dtype`` and then ``generator`` come first).
_SIDECAR_SIGNATURE = re.compile(
    rb'\{\r?\n  "dtype": "[^"\\\r\n]*",\r?\n  "generator": "posenc [^"\\\r\n]+",\r?\n  "kind": "'
)

#: What C source takes: the language, its namespace, alignment, AVR flash, the literal style and the half type.
C_OPTIONS = frozenset({"lang", "namespace", "align", "progmem", "float_literal", "c_half_type"})

FORMATS: dict[str, Format] = {
    "npy": Format(
        "npy",
        (".npy",),
        "NumPy .npy array (NPY format 1.0); a .json sidecar for types .npy cannot name",
        _lazy("npy", "dump"),
        _lazy("npy", "load"),
        stream=_lazy("npy", "stream"),
        companion=Companion(
            ".json",
            _lazy("npy", "dump_sidecar"),
            when=_lazy("npy", "needs_sidecar"),
            load=_lazy("npy", "load_sidecar"),
            signature=_SIDECAR_SIGNATURE,
        ),
        single=True,
    ),
    "npz": Format(
        "npz",
        (".npz",),
        "NumPy .npz: every array of the table, and its parameters",
        _lazy("npz", "dump"),
        _lazy("npz", "load"),
        stream=_lazy("npz", "stream"),
    ),
    "safetensors": Format(
        "safetensors",
        (".safetensors",),
        "Hugging Face safetensors: every array of the table, and its parameters",
        _lazy("safetensors", "dump"),
        _lazy("safetensors", "load"),
        stream=_lazy("safetensors", "stream"),
        load_parts=_lazy("safetensors", "load_parts"),
        names=_lazy("safetensors", "names"),
    ),
    "h5": Format(
        "h5",
        (".h5", ".hdf5"),
        "HDF5 dataset with parameter attributes",
        _lazy("hdf5", "dump"),
        _lazy("hdf5", "load"),
        stream=_lazy("hdf5", "stream"),
        aliases=("hdf5",),
    ),
    "csv": Format(
        "csv",
        (".csv",),
        "CSV, one row per position, shortest round-trip decimals",
        _lazy("csvfile", "dump"),
        _lazy("csvfile", "load"),
        text=True,
        single=True,
        options=frozenset({"header"}),
    ),
    "h": Format(
        "h",
        (".h", *CXX_HEADERS),
        "self-contained C/C++ header with a static const table (.hpp, .hh, .hxx: C++)",
        _lazy("c.writer", "dump_header_only"),
        _lazy("c.reader", "load"),
        text=True,
        options=C_OPTIONS,
    ),
    "c": Format(
        "c",
        (".c", *CXX_SOURCES),
        "C source with the one definition, plus a .h of extern declarations (.cpp/.hpp, .cc/.hh, .cxx/.hxx: C++)",
        _lazy("c.writer", "dump_source"),
        _lazy("c.reader", "load"),
        companion=Companion(
            ".h",
            _lazy("c.writer", "dump_declarations"),
            load=_lazy("c.reader", "load_declarations"),
            suffixes=tuple((source, header) for source, header in HEADER_OF.items() if source in CXX),
            signature=_C_SIGNATURE,
        ),
        text=True,
        options=C_OPTIONS,
    ),
    "bin": Format(
        "bin",
        (".bin",),
        "raw little-endian table, plus a .h that declares it and pulls it in with .incbin",
        _lazy("c.writer", "dump_raw"),
        _lazy("c.reader", "load_raw"),
        companion=Companion(
            ".h",
            _lazy("c.writer", "dump_incbin_header"),
            load=_lazy("c.reader", "load_incbin_header"),
            signature=_C_SIGNATURE,
        ),
        options=C_OPTIONS,
    ),
    "rs": Format(
        "rs",
        (".rs",),
        "Rust source: each array a pub static fixed-size array, with its sizes as pub consts",
        _lazy("rust", "dump"),
        text=True,
    ),
    "mem": Format(
        "mem",
        (".mem",),
        "Verilog $readmemh ROM image: one hex word per line, row-major, the element type's width",
        _lazy("rom", "dump_mem"),
        _lazy("rom", "load_mem"),
        text=True,
        single=True,
    ),
    "coe": Format(
        "coe",
        (".coe",),
        "Xilinx COE ROM image (Vivado block memory): radix 16, one word per entry",
        _lazy("rom", "dump_coe"),
        _lazy("rom", "load_coe"),
        text=True,
        single=True,
    ),
    "mif": Format(
        "mif",
        (".mif",),
        "Intel (Altera) Memory Initialization File: WIDTH, DEPTH, hex data",
        _lazy("rom", "dump_mif"),
        _lazy("rom", "load_mif"),
        text=True,
        single=True,
    ),
    "onnx": Format(
        "onnx",
        (".onnx",),
        "ONNX model whose outputs are the table's arrays, held as initializers (the onnx extra)",
        _lazy("onnx", "dump"),
    ),
    "gguf": Format(
        "gguf",
        (".gguf",),
        "GGUF (llama.cpp): the arrays as tensors, posenc's parameters as metadata",
        _lazy("gguf", "dump"),
    ),
}


#: Each write option's value when it is not given (the dataclass's defaults): an option left at it is never refused.
OPTION_DEFAULTS: dict[str, object] = {f.name: f.default for f in dataclasses.fields(WriteOptions)}


def check_options(fmt: Format, given: dict[str, object]) -> None:
    """``SpecError`` (``param`` the option) for the first option in ``given`` that is set to something other than
    its default and that ``fmt`` does not take: an option that cannot take effect is refused, never ignored.

    Examples
    --------
    >>> check_options(FORMATS["npy"], {"align": 16})
    Traceback (most recent call last):
        ...
    posenc_cli.errors.SpecError: this option applies to the h, c, bin formats, and the output is npy
    """
    for option, value in given.items():
        if option in fmt.options or value == OPTION_DEFAULTS.get(option, value):
            continue
        takers = [f.name for f in FORMATS.values() if option in f.options]
        if option == "header":
            raise SpecError(f"only csv writes a header row; leaving it out has no effect on {fmt.name}", param=option)
        raise SpecError(
            f"this option applies to the {', '.join(takers)} format{'s' if len(takers) > 1 else ''}, and the output "
            f"is {fmt.name}",
            param=option,
        )


def by_name(name: str) -> Format:
    """The format called ``name`` or one of its aliases (``hdf5``: ``h5``); ``SpecError`` listing the known names
    otherwise.

    Examples
    --------
    >>> by_name("hdf5").name
    'h5'
    """
    fmt = FORMATS.get(name) or _ALIASES.get(name)
    if fmt is None:
        raise SpecError(f"unknown format {name!r}; choose one of {', '.join(FORMAT_NAMES)}", param="format")
    return fmt


def infer(path: str | PurePath) -> Format:
    """The format whose suffixes include ``path``'s (case-insensitive).

    Examples
    --------
    >>> infer("tables/pe.HDF5").name, infer("pe.hpp").name, infer("pe.cc").name
    ('h5', 'h', 'c')
    """
    suffix = PurePath(path).suffix.lower()
    for fmt in FORMATS.values():
        if suffix in fmt.suffixes:
            return fmt
    known = ", ".join(s for fmt in FORMATS.values() for s in fmt.suffixes)
    if not suffix:
        raise SpecError(
            f"cannot tell the format of {str(path)!r}: it has no suffix; name the file with a suffix ({known}) or "
            f"give --format ({', '.join(FORMATS)})",
            param="format",
        )
    raise SpecError(
        f"cannot tell the format of {str(path)!r}: no format has the suffix {suffix!r}; the known suffixes are "
        f"{known}: rename the file or give --format ({', '.join(FORMATS)})",
        param="format",
    )


def companion_path(fmt: Format, path: Path) -> Path | None:
    """The companion file of an output of ``fmt`` at ``path`` (``None`` if the format writes none), whether or not
    this table needs it (``Companion.when``): ``path`` with the companion's suffix, which for the ``c`` format
    matches the source's (``pe.cpp``: ``pe.hpp``, ``pe.c``: ``pe.h``, any other: ``.h``).

    Examples
    --------
    >>> companion_path(FORMATS["c"], Path("out/pe.cpp")).as_posix(), companion_path(FORMATS["bin"], Path("pe.bin")).name
    ('out/pe.hpp', 'pe.h')
    >>> companion_path(FORMATS["h"], Path("pe.h")) is None
    True
    """
    companion = fmt.companion
    if companion is None:
        return None
    return path.with_suffix(dict(companion.suffixes).get(path.suffix.lower(), companion.suffix))


def implied_options(fmt: Format, path: PurePath) -> dict[str, object]:
    """The write options the suffix of ``path`` implies for ``fmt``: ``{"lang": "c++"}`` when it is one of the
    format's own C++ suffixes (``.hpp``, ``.hh``, ``.hxx`` of ``h``; ``.cpp``, ``.cc``, ``.cxx`` of ``c``), else
    ``{}`` (``pe.hpp`` forced to ``--format npy`` implies nothing). They are what the option is when it is not
    given.

    Examples
    --------
    >>> implied_options(FORMATS["h"], PurePath("pe.HPP")), implied_options(FORMATS["h"], PurePath("pe.h"))
    ({'lang': 'c++'}, {})
    """
    suffix = PurePath(path).suffix.lower()
    return {"lang": "c++"} if suffix in CXX and suffix in fmt.suffixes else {}


def written_by_posenc(companion: Companion, head: bytes) -> bool:
    """Whether ``head``, the first bytes (up to 4096) of a file at ``companion``'s path, start a file posenc writes
    there: for the ``.json`` of an ``.npy``, posenc's sidecar (``{``, then ``"dtype"`` and ``"generator": "posenc
    ..."``); for the ``.h`` (``.hpp``, ...) of a ``.c`` or ``.bin``, posenc's provenance comment (``/*``, then
    ``<file>: positional-encoding table generated by posenc <version>. Do not edit.``), which every C file posenc
    writes starts with. Any other file (a user's ``{"a": 1}``, a hand-written header) is not posenc's.

    Examples
    --------
    >>> sidecar = FORMATS["npy"].companion
    >>> written_by_posenc(sidecar, b'{"a": 1}')
    False
    >>> written_by_posenc(FORMATS["c"].companion, b"/*\\n * pe.h: positional-encoding table generated by posenc "
    ...                   b"0.1.0. Do not edit.\\n *\\n")
    True
    """
    return companion.signature is not None and companion.signature.match(head[:4096]) is not None


#: Alias -> format, for :func:`by_name`.
_ALIASES: dict[str, Format] = {alias: fmt for fmt in FORMATS.values() for alias in fmt.aliases}

#: Every name :func:`by_name` accepts: the formats' names, then their aliases (the CLI's ``--format`` choices).
FORMAT_NAMES: tuple[str, ...] = (*FORMATS, *_ALIASES)
