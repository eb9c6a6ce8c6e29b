"""The format registry: the one list of file formats that everything else reads.

Suffix inference, the CLI's ``--format`` choices and its help text all come from :data:`FORMATS`, a literal dict of
:class:`Format` records (meshio's suffix registry, without its import-time self-registration). Each format lives in
its own module with symmetric verbs on binary file objects::

    dump(table, fp, options)   # write one file
    load(fp) -> Table          # read it back

A format that writes a second file next to the first (the ``.c`` source and its ``.h`` declarations) names it in
``companion``: the suffix that replaces the output's suffix, and the function that writes it. Paths, atomic replace
and suffix inference live once, in :mod:`posenc_cli.api` and :mod:`posenc_cli._atomic`, never in a format module.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, BinaryIO

from ..errors import SpecError
from ..table import Table
from .limits import Budget
from .options import WriteOptions

__all__ = ["C_OPTIONS", "FORMATS", "OPTION_DEFAULTS", "Format", "WriteOptions", "by_name", "check_options", "infer"]

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
    file (a metadata sidecar).
    """

    suffix: str
    dump: Dump
    when: Callable[[Table], bool] | None = None
    load: Callable[[Table, BinaryIO, Budget], Table] | None = None


@dataclass(frozen=True)
class Format:
    """One registered file format.

    ``suffixes`` are lower-case and start with a dot; the first is the canonical one. ``load`` is ``None`` for
    formats posenc writes but does not read back. ``text`` marks formats that spell every value in decimal
    (about ten times the work per value of a binary format).
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


#: What C source takes: the language, its namespace, alignment, AVR flash, the literal style and the half type.
C_OPTIONS = frozenset({"lang", "namespace", "align", "progmem", "float_literal", "c_half_type"})

FORMATS: dict[str, Format] = {
    "npy": Format(
        "npy",
        (".npy",),
        "NumPy .npy array (NPY format 1.0); a .json sidecar for types .npy cannot name",
        _lazy("npy", "dump"),
        _lazy("npy", "load"),
        companion=Companion(
            ".json", _lazy("npy", "dump_sidecar"), when=_lazy("npy", "needs_sidecar"), load=_lazy("npy", "load_sidecar")
        ),
        single=True,
    ),
    "npz": Format(
        "npz",
        (".npz",),
        "NumPy .npz: every array of the table, and its parameters",
        _lazy("npz", "dump"),
        _lazy("npz", "load"),
    ),
    "safetensors": Format(
        "safetensors",
        (".safetensors",),
        "Hugging Face safetensors: every array of the table, and its parameters",
        _lazy("safetensors", "dump"),
        _lazy("safetensors", "load"),
    ),
    "h5": Format(
        "h5", (".h5", ".hdf5"), "HDF5 dataset with parameter attributes", _lazy("hdf5", "dump"), _lazy("hdf5", "load")
    ),
    "csv": Format(
        "csv",
        (".csv",),
        "CSV, one row per position, shortest round-trip decimals",
        _lazy("csv", "dump"),
        _lazy("csv", "load"),
        text=True,
        single=True,
        options=frozenset({"header"}),
    ),
    "h": Format(
        "h",
        (".h",),
        "self-contained C/C++ header with a static const table",
        _lazy("c", "dump_header_only"),
        _lazy("c_read", "load"),
        text=True,
        options=C_OPTIONS,
    ),
    "c": Format(
        "c",
        (".c",),
        "C source with the one definition, plus a .h of extern declarations",
        _lazy("c", "dump_source"),
        _lazy("c_read", "load"),
        companion=Companion(".h", _lazy("c", "dump_declarations"), load=_lazy("c_read", "load_declarations")),
        text=True,
        options=C_OPTIONS,
    ),
    "bin": Format(
        "bin",
        (".bin",),
        "raw little-endian table, plus a .h that declares it and pulls it in with .incbin",
        _lazy("c", "dump_raw"),
        _lazy("c_read", "load_raw"),
        companion=Companion(".h", _lazy("c", "dump_incbin_header"), load=_lazy("c_read", "load_incbin_header")),
        options=C_OPTIONS,
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
    """The format called ``name``; ``SpecError`` listing the known names otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise SpecError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}", param="format") from None


def infer(path: str | PurePath) -> Format:
    """The format whose suffixes include ``path``'s (case-insensitive).

    Examples
    --------
    >>> infer("tables/pe.HDF5").name
    'h5'
    """
    suffix = PurePath(path).suffix.lower()
    for fmt in FORMATS.values():
        if suffix in fmt.suffixes:
            return fmt
    known = ", ".join(s for fmt in FORMATS.values() for s in fmt.suffixes)
    found = f"suffix {suffix!r}" if suffix else "no suffix"
    raise SpecError(
        f"cannot tell the format of {str(path)!r} from its {found}; use one of {known} or pass a format "
        f"({', '.join(FORMATS)})",
        param="format",
    )
