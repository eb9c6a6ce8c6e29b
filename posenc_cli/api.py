"""posenc's Python API: make a table, save it in any registered format, load it back.

>>> import posenc_cli
>>> pe = posenc_cli.sinusoidal(16, 8)                      # numpy array, float32, correctly rounded
>>> table = posenc_cli.generate(seq_len=16, d_model=8)     # the same values as a Table with its parameters
>>> paths = posenc_cli.save(table, "pe.h")                 # doctest: +SKIP
>>> posenc_cli.load("pe.npy").array.shape                  # doctest: +SKIP
(16, 8)

The functions that make tables are the makers of the registry's kinds, each by its command's name
(:data:`posenc_cli.kinds.KINDS`: :func:`generate`, :func:`rope`, :func:`mrope`, :func:`axial`, :func:`alibi`,
:func:`sincos2d`, :func:`detr`, :func:`relative`, :func:`window`; ``tests/test_docs.py`` holds this list to the
registry), taken from it here: a kind
added to the registry is an API function without a line here. :func:`convert` is :mod:`posenc_cli.conversion`'s.

This layer knows paths: it picks the format (explicitly or from the suffix), names the table, and writes every file
atomically through :mod:`posenc_cli.system.atomic`. It never prints and never exits; errors are
:class:`~posenc_cli.errors.PosencError` subclasses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from . import _resources
from .conversion import convert
from .encodings import sinusoidal
from .errors import FormatError, OutputError, SpecError
from .formats import (
    C_OPTIONS,
    Format,
    WriteOptions,
    by_name,
    check_options,
    companion_path,
    implied_options,
    infer,
    written_by_posenc,
)
from .formats.limits import check_param
from .formats.options import check_name, name_from_path
from .kinds import REGISTRY, by_command, by_table
from .read import PathLike, load
from .system import atomic as _atomic
from .system.files import open_regular
from .table import Table

if TYPE_CHECKING:  # for type checkers, which do not run __getattr__: the makers the registry gives
    from .identification import identify
    from .kinds.alibi import alibi as alibi
    from .kinds.axial import axial as axial
    from .kinds.detr import detr as detr
    from .kinds.mrope import mrope as mrope
    from .kinds.relative import relative as relative
    from .kinds.rope import rope as rope
    from .kinds.sincos2d import sincos2d as sincos2d
    from .kinds.sinusoid import generate as generate
    from .kinds.window import window as window


def __getattr__(name: str) -> Any:
    """Each kind's maker by its command's name (:data:`~posenc_cli.kinds.REGISTRY`), and ``identify``
    (:func:`posenc_cli.identification.identify`), imported when first asked for (PEP 562)."""
    if name in REGISTRY:
        return by_command(name).make
    if name == "identify":
        from .identification import identify

        globals()[name] = identify
        return identify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Output", "c_write_options", "check_companion", "convert", "identify", "load", "plan", "save", "sinusoidal"]
__all__ += sorted(REGISTRY)  # the makers


@dataclass(frozen=True)
class Output:
    """Where and how a table will be written: the format, the table's name and every file it makes."""

    format: Format
    name: str
    paths: tuple[Path, ...]


def plan(
    path: PathLike,
    *,
    format: str | None = None,
    name: str | None = None,
    check_paths: bool = True,
    missing_dirs: bool = False,
) -> Output:
    """Check an output before any work is done: format known, name valid, every file writable.

    With ``missing_dirs`` a file whose folder does not exist yet is no error: a ``--check`` run, which writes
    nothing, reports it as a file that would be created, and ``posenc build --make-dirs`` creates the folder.

    Raises
    ------
    SpecError
        Unknown ``format``, a suffix that names no format, an invalid ``name``, or a path that does not name a file
        (empty, ``.``, ending in ``/``).
    OutputError
        A missing directory, a directory without write permission, a path that is a directory.
    """
    text = os.fspath(path)
    if check_paths and (not text or text.endswith(("/", os.sep)) or Path(text).name in ("", ".", "..")):
        raise SpecError(f"the output must name a file, got {text!r}", param="output")
    path = Path(text)
    if format is not None:
        fmt = by_name(format)
    else:
        try:
            fmt = infer(path)
        except SpecError as exc:  # the suffix of the output is what was wrong, not a --format nobody gave
            raise SpecError(str(exc), param="output") from None
    table_name = check_name(name) if name is not None else name_from_path(path)
    paths = [path]
    companion = companion_path(fmt, path)
    if fmt.companion is not None and companion is not None:
        if companion == path:
            raise SpecError(
                f"the {fmt.name} format writes a {fmt.companion.suffix} file beside the output, "
                f"so the output {str(path)!r} cannot itself end in {fmt.companion.suffix}",
                param="format",
            )
        paths.append(companion)
    # A companion written only for some tables (the .json of a .npy) is checked by save once the table is known
    # (check_companion): its name must not refuse an output that will never have it.
    certain = paths if fmt.companion is None or fmt.companion.when is None else paths[:1]
    for p in certain if check_paths else ():
        if missing_dirs and not os.path.lexists(os.path.dirname(os.path.realpath(p))):
            continue
        _atomic.check_writable(p)
    return Output(fmt, table_name, tuple(paths))


def save(
    table: Table | np.ndarray,
    path: PathLike,
    *,
    format: str | None = None,
    name: str | None = None,
    header: bool = True,
    command: str | None = None,
    part: str | None = None,
    check: bool = False,
    stdout: BinaryIO | None = None,
    force: bool = False,
    **c_options: object,
) -> list[Path]:
    """Write ``table`` (or a bare 2-D array) to ``path`` atomically; return every path written.

    A format that writes a second file beside the output (the ``.json`` of a ``.npy`` that needs one, the ``.h`` of
    a ``.c`` or ``.bin``) replaces a file already there only when posenc wrote it (told from its content): the
    user did not name that file, so a foreign one is refused (``OutputError`` naming both paths, nothing written)
    unless ``force``.

    With ``check=True`` nothing is written: the result is the paths whose content would change (missing, a folder
    not made yet included, or different; an empty list means every output is up to date). With ``stdout`` (a binary
    stream) the one output is built in full in a temporary file, then copied to the stream; ``path`` then only names
    the format and table (``"-"`` with ``format=``), nothing is written to disk and the result is empty.

    Parameters
    ----------
    table : Table or numpy.ndarray
        What to write; a bare array is wrapped with :meth:`Table.from_array`.
    path : str or os.PathLike
        The output. Its suffix picks the format (:data:`posenc_cli.formats.FORMATS`: each format's ``suffixes``)
        unless ``format`` is given. A format with a ``companion`` also writes that file beside it (see above).
    format : str, optional
        The name of a format: a key of :data:`~posenc_cli.formats.FORMATS` or one of its ``aliases``
        (:data:`~posenc_cli.formats.FORMAT_NAMES` holds them all; ``posenc generate --help`` lists them with their
        suffixes).
    name : str, optional
        The C symbol and HDF5 dataset name; by default the file's stem made a C identifier.
    header : bool
        CSV: write the ``d0,d1,...`` header row.
    command : str, optional
        The command line recorded in C provenance comments.
    part : str, optional
        Write only this array of a table that holds several (``cos`` of a RoPE table); formats that hold one array
        (npy, csv) need it for such tables.
    **c_options
        C outputs: the options of :data:`~posenc_cli.formats.C_OPTIONS` (the language, namespace, alignment, AVR
        flash, literal style and half type), as :class:`~posenc_cli.formats.options.WriteOptions` documents them.

    Warns
    -----
    posenc_cli.errors.PosencAdvice
        A C or Rust table large enough to compile slowly (over 1 MiB of C initializer, 2^18 Rust values), with what
        to write instead; attributed to the caller's line.

    Examples
    --------
    >>> save(generate(16, 8), "pe.c", name="pe_table")  # doctest: +SKIP
    [PosixPath('pe.c'), PosixPath('pe.h')]
    """
    if not isinstance(table, Table):
        table = Table.from_array(np.asarray(table))
    _check_recordable(table)
    if part is not None:
        try:
            table = table.part(part)
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), param="part") from None
    out = plan(path, format=format, name=name, check_paths=stdout is None, missing_dirs=check)
    if out.format.single and len(table.arrays) > 1:
        raise SpecError(
            f"this {table.kind} table holds {len(table.arrays)} arrays ({', '.join(table.arrays)}) and "
            f"{out.format.name} holds one: pick the part to write, or write npz, h5 or C, which hold them all",
            param="part",
        )
    companion = out.format.companion
    out = _paths_for(out, table)
    if stdout is None:
        check_companion(out, table, force=force, missing_dirs=check)
    if "half_type" in c_options:  # its name before 0.x: one name on every surface is c_half_type
        warnings.warn("save(half_type=...) is spelled c_half_type now", DeprecationWarning, stacklevel=2)
        c_options.setdefault("c_half_type", c_options.pop("half_type"))
    unknown = sorted(set(c_options) - C_OPTIONS)
    if unknown:
        raise SpecError(f"unknown option {unknown[0]!r}; save takes {', '.join(sorted(C_OPTIONS))}", param=unknown[0])
    c_options = c_write_options(out, c_options, header=header)
    options = WriteOptions(
        name=out.name,
        header=header,
        command=command,
        filename=out.paths[0].name,
        group=name,
        formula=_formula(table),
        **c_options,  # type: ignore[arg-type]
    )

    def dump(files: Sequence[BinaryIO]) -> None:
        out.format.dump(table, files[0], options)
        if companion is not None and len(out.paths) > 1:
            companion.dump(table, files[1], dataclasses.replace(options, filename=out.paths[1].name))

    # Refuse what cannot fit before the first byte; stdout and check build the file in full in the temp directory.
    spool = stdout is not None or check
    where = out.paths[0]
    what = None
    if spool:
        import tempfile  # here, not at the top: a plain write (atomic_outputs) does not need the module

        where = Path(tempfile.gettempdir(), "posenc")
        target = "writing to stdout" if stdout is not None else f"checking {str(out.paths[0])!r}"
        what = f"{target} builds the whole file first in the temporary directory {str(where)!r}"
    _resources.check_disk(where, _resources.estimate_bytes(table, out.format).low, what)
    if stdout is not None:
        if len(out.paths) > 1:
            raise SpecError(
                f"the {out.format.name} format writes a {out.paths[1].suffix} file beside its output and stdout takes "
                "one file: write to files, or pick a one-file format (h for C)",
                param="output",
            )
        import shutil

        with tempfile.TemporaryFile() as tmp:  # built in full before the first byte goes out
            dump([tmp])
            tmp.seek(0)
            try:
                shutil.copyfileobj(tmp, stdout, 1 << 20)
                stdout.flush()
            except BrokenPipeError:
                raise  # the reader went away: the CLI ends quietly
            except OSError as exc:  # a full disk behind > FILE, a closed descriptor: name stdout, not an errno
                raise OutputError(f"cannot write the {out.format.name} file to stdout: {exc.strerror or exc}") from None
        return []
    if check:
        with contextlib.ExitStack() as stack:
            files: list[BinaryIO] = [stack.enter_context(tempfile.TemporaryFile()) for _ in out.paths]
            dump(files)
            for fp in files:
                fp.flush()
            return [path for fp, path in zip(files, out.paths, strict=True) if not _atomic.same_content(fp, path)]
    with _atomic.atomic_outputs(out.paths) as outputs:
        dump(outputs)
    return list(out.paths)


def _formula(table: Table) -> tuple[str, ...]:
    """The lines of the formula a C provenance comment gives for ``table``: its kind's (none for a kind posenc does
    not make, or one without a formula)."""
    if table.kind not in {recorded for _, recorded in REGISTRY.values()}:
        return ()
    kind = by_table(table.kind)  # its module alone
    return () if kind.c_formula is None else kind.c_formula(table.params)


def _check_recordable(table: Table) -> None:
    """``FormatError`` for a parameter no format can record, before anything is written: what every reader refuses
    (:func:`~posenc_cli.formats.limits.check_param`: NaN, infinity, an integer past 64 bits, a value that is not a
    number, string or boolean) is never written, by any format (a table made in Python can hold anything)."""
    for key, value in table.params.items():
        try:
            check_param(value, f"the table's parameter {key[:60]!r}")
        except FormatError as exc:
            raise FormatError(f"{exc}: no format posenc writes records it, so the table cannot be saved") from None


def c_write_options(out: Output, given: Mapping[str, object], *, header: bool = True) -> dict[str, object]:
    """The C write options for ``out``: those ``given`` (``lang=None`` or absent: not given), with what the output's
    suffix implies filled in (``pe.hpp``, ``pe.cpp``: ``lang="c++"``), checked (:class:`WriteOptions`) and refused
    when the format does not take them (:func:`~posenc_cli.formats.check_options`). The one place the CLI, the
    manifest and :func:`save` resolve them."""
    options = {key: value for key, value in given.items() if not (key == "lang" and value is None)}
    for key, value in implied_options(out.format, out.paths[0]).items():
        options.setdefault(key, value)
    WriteOptions(**options)  # type: ignore[arg-type]
    check_options(out.format, {"header": header, **options})
    return options


def _paths_for(out: Output, table: Table) -> Output:
    """``out`` with only the files written for ``table`` (a companion only when its format wants it for the table)."""
    companion = out.format.companion
    if companion is not None and companion.when is not None and not companion.when(table):
        return dataclasses.replace(out, paths=out.paths[:1])
    return out


def check_companion(out: Output, table: Table, *, force: bool = False, missing_dirs: bool = False) -> None:
    """``OutputError`` when the file the format writes beside the output for ``table`` (``out.paths[1]``) cannot be
    written (its name too long, its directory read-only: :func:`~posenc_cli.system.atomic.check_writable`, the
    error then saying which file it is), or is already there and posenc did not write it
    (:func:`~posenc_cli.formats.written_by_posenc`), unless ``force`` (:func:`save`'s, which replaces such a file).
    Nothing is written then. ``posenc build`` checks every entry so before writing the first. With
    ``missing_dirs`` (a ``--check`` run, as :func:`plan` takes it) a companion whose folder does not exist yet is
    one that would be created, not an error."""
    out = _paths_for(out, table)
    companion = out.format.companion
    if companion is None or len(out.paths) < 2:
        return
    output, beside = out.paths
    if missing_dirs and not os.path.lexists(os.path.dirname(os.path.realpath(beside))):
        return
    _atomic.check_writable(beside, f"the {companion.suffix} file {output.name!r} needs beside it for this table")
    if force:
        return
    try:
        with open_regular(beside) as fp:
            head = fp.read(4096)
    except FileNotFoundError:
        return
    except (OSError, FormatError):  # not a regular file, unreadable: check_writable has said what it could
        head = b""
    if not written_by_posenc(companion, head):
        raise OutputError(
            f"{str(output)!r} comes with {str(beside)!r}, and a file posenc did not write is already there: move it, "
            "name the output otherwise, or replace it with --force"
        )
