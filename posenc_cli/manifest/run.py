"""Running a manifest: :func:`build` writes each entry's file as ``posenc <command> ... -o <output>`` writes it, byte
for byte (the table built by its kind, written with :func:`posenc_cli.api.save`: atomic; a file that already holds
the new bytes is left untouched, mtime included), its C provenance comment recording that command.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Union

from .. import api
from ..dtypes import element_of
from ..errors import SpecError
from ..formats import C_OPTIONS
from ..system import atomic
from ..table import Table
from .reader import Entry, Manifest, about, load_manifest
from .report import BuildReport, FileReport, TableReport

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["Progress", "build"]

_C_OPTIONS = tuple(sorted(C_OPTIONS))
#: ``progress(entry, table)``: a context manager giving the table to write in ``table``'s place.
Progress = Callable[[Entry, Table], AbstractContextManager[Table]]


def build(
    manifest: PathLike | Manifest,
    *,
    check: bool = False,
    only: Sequence[str] | None = None,
    output_dir: PathLike | None = None,
    allow_outside: bool = False,
    progress: Progress | None = None,
    force: bool = False,
) -> BuildReport:
    """Write every table of ``manifest`` (a path, or a :class:`Manifest` from :func:`load_manifest`).

    The whole manifest is checked first (:func:`load_manifest`), so a bad one writes nothing. Each output is then
    written atomically; a file that already holds its new bytes is left untouched and reported ``unchanged``.
    With ``check=True`` nothing is written: the report says which files are ``missing`` or ``outdated``
    (:attr:`BuildReport.changed`; the ``black --check`` contract: the caller exits 1 if any). ``only`` builds just
    these outputs, spelled as in the manifest (the others are still checked). ``progress(entry, table)``, if given,
    is a context manager that returns the table to write in its place (the CLI's progress bar follows its rows).
    ``force`` lets an entry replace a file beside its output that posenc did not write (:func:`posenc_cli.api.save`).

    Examples
    --------
    >>> report = build("posenc.toml")                      # doctest: +SKIP
    >>> [(str(f.path), f.status) for f in report.files]    # doctest: +SKIP
    [('pe.h', 'written'), ('rope.npz', 'unchanged')]
    """
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest, output_dir=output_dir, allow_outside=allow_outside, check=check)
    elif output_dir is not None:
        raise SpecError("output_dir goes to load_manifest when build is given a Manifest", param="output_dir")
    entries = manifest.entries
    if only is not None:
        wanted = {os.path.normpath(o): o for o in only}
        known = {os.path.normpath(e.output) for e in entries}
        missing = [o for key, o in wanted.items() if key not in known]
        if missing:
            outputs = ", ".join(repr(e.output) for e in entries)
            raise SpecError(f"{manifest.path} has no output {missing[0]!r}; its outputs are {outputs}", param="only")
        entries = tuple(e for e in entries if os.path.normpath(e.output) in wanted)
    if not force and not check:  # a foreign file beside any output: refused before the first is written
        for entry in entries:
            with about(entry.where(str(manifest.path))):
                if entry.plan.format.companion is not None:
                    api.check_companion(entry.plan, entry.table())
    reports = []
    for entry in entries:
        with about(entry.where(str(manifest.path))):
            reports.append(_build_one(entry, check, progress, force))
    return BuildReport(manifest.path, check, tuple(reports), manifest.inputs)


def _build_one(entry: Entry, check: bool, progress: Progress | None, force: bool) -> TableReport:
    o = entry.options
    table = entry.table()
    if o["part"] is not None:
        table = table.part(o["part"])
    with progress(entry, table) if progress is not None else contextlib.nullcontext(table) as shown:
        files = _write_one(entry, shown, check, force)
    arrays = {key: (tuple(a.shape), element_of(table.params, a.dtype)) for key, a in table.arrays.items()}
    return TableReport(entry, table.kind, table.params, arrays, files)


def _write_one(entry: Entry, table: Table, check: bool, force: bool) -> tuple[FileReport, ...]:
    o = entry.options
    options: dict[str, Any] = {key: o[key] for key in _C_OPTIONS}
    options.update(format=o["format"], name=o["name"] and entry.plan.name, header=o["header"], force=force)
    if check:
        changed = set(api.save(table, entry.path, command=entry.command_line, check=True, **options))
        files = tuple(_checked_file(p, p in changed) for p in _files_of(entry.plan, table))
    else:
        before = {p: atomic.identity(p) for p in entry.plan.paths}
        written = api.save(table, entry.path, command=entry.command_line, **options)
        files = tuple(_written_file(p, before.get(p)) for p in written)
    return files


def _files_of(plan: api.Output, table: Table) -> tuple[Path, ...]:
    """The files :func:`api.save` writes for ``table``: a companion only when its format wants it for this table."""
    companion = plan.format.companion
    if companion is not None and companion.when is not None and not companion.when(table):
        return plan.paths[:1]
    return plan.paths


def _written_file(path: Path, before: tuple[int, ...] | None) -> FileReport:
    status = "unchanged" if before is not None and before == atomic.identity(path) else "written"
    return FileReport(path, status, *_size_and_sha256(path))


def _checked_file(path: Path, changed: bool) -> FileReport:
    if changed:
        return FileReport(path, "outdated" if atomic.identity(path) else "missing", None, None)
    return FileReport(path, "unchanged", *_size_and_sha256(path))


def _size_and_sha256(path: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(os.path.realpath(path), "rb") as fp:
        while block := fp.read(1 << 20):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()
