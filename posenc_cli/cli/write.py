"""The write path every table command shares: check the output, build the table, write it (or check it), report.

Commands call :func:`write` with a function that makes the table and the command line to record; the options it
reads are :data:`posenc_cli.kinds.OUTPUT` and :data:`posenc_cli.kinds.RUN`, by their registry names.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from .. import api
from .._printable import printable
from ..dtypes import element_of
from ..errors import PosencWarning, SpecError
from ..formats import C_OPTIONS, FORMATS
from ..system import atomic
from ..table import RowSource, Table
from ._run import advice, notes, say

__all__ = ["progress", "shapes_text", "write"]

_C_OPTIONS = tuple(sorted(C_OPTIONS))


def write(ctx: click.Context, make: Callable[[], Table], command: Callable[[str], str], *, lazy: bool) -> None:
    """Check the output options, build the table, write it (or check it), report.

    ``command(name)`` is the command line to record, given the table's resolved name. A ``lazy`` maker computes
    nothing until rows are written, so it runs first: a bad parameter is refused before the output is looked at;
    any other runs after the output is checked, so that a missing directory costs no work.
    """
    p = ctx.params
    to_stdout = p["output"] == "-"
    if to_stdout:
        if p["format"] is None:
            raise SpecError(f"-o - writes to stdout and needs --format ({', '.join(FORMATS)})", param="format")
        if p["check"] or p["json"]:
            flag = "--check" if p["check"] else "--json"
            raise SpecError(
                f"{flag} reports on stdout, which -o - takes for the table: write to a file", param="output"
            )

    caught: list[warnings.WarningMessage] = []

    def made() -> Table:
        """The table; the maker's notes (a frequency rounded to 0) are kept, to be said with the writer's once the
        file is written: a request refused afterwards (a bad output) says its one error line and nothing else."""
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", PosencWarning)
            table = make()
        caught.extend(note for note in seen if issubclass(note.category, PosencWarning))
        for note in seen:  # anything else goes where it went before
            if not issubclass(note.category, PosencWarning):
                warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
        return table

    table = made() if lazy else None
    # --check writes nothing: an output whose folder does not exist yet is one that would be created.
    out = api.plan(p["output"], format=p["format"], name=p["name"], check_paths=not to_stdout, missing_dirs=p["check"])
    c_options = api.c_write_options(out, {key: p[key] for key in _C_OPTIONS}, header=p["header"])  # before any work
    if to_stdout and not out.format.text and _is_terminal(sys.stdout):
        raise SpecError(
            f"-o - would write the binary {out.format.name} file to this terminal: redirect stdout to a file or a pipe "
            f"(-o - -f {out.format.name} > out.{out.format.name}), or write a text format (csv, h)",
            param="output",
        )
    if table is None:
        table = made()
    if p["part"] is not None:
        try:
            table = table.part(p["part"])
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), param="part") from None
    before = {path: atomic.identity(path) for path in out.paths} if p["verbose"] else {}
    digests: dict[str, str] = {}
    label = f"writing {Path(out.paths[0]).name}" if not to_stdout else "writing to stdout"
    bar = progress(table, label=label, text=out.format.text, quiet=p["quiet"] or to_stdout)
    with bar as shown, notes(quiet=p["quiet"]), advice(None if to_stdout else out.paths, quiet=p["quiet"]):
        for note in caught:
            warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
        if p["json"]:
            shown = _hashing(shown, digests)
        written = api.save(
            shown,
            p["output"],
            format=p["format"],
            name=p["name"] and out.name,
            header=p["header"],
            command=command(out.name),
            check=p["check"],
            stdout=sys.stdout.buffer if to_stdout else None,
            force=p["force"],
            **c_options,  # type: ignore[arg-type]  # checked by WriteOptions above
        )
    if p["check"]:
        _report_check(written, p["json"], p["quiet"])
        return
    if p["json"]:
        _report_json(table, out.format.name, written, digests)
    if p["verbose"]:
        shapes = [f"{' x '.join(map(str, a.shape))} {element_of(table.params, a.dtype)}" for a in table.arrays.values()]
        if len({shape.rsplit(" ", 1)[1] for shape in shapes}) == 1:  # one type: said once, as before
            shapes = [shape.rsplit(" ", 1)[0] for shape in shapes[:-1]] + shapes[-1:]
        for path in written:
            what = "unchanged:" if before.get(path) is not None and before[path] == atomic.identity(path) else "wrote"
            say(f"{what} {path} ({out.format.name}, {', '.join(shapes)}, {path.stat().st_size:,} bytes)")


def shapes_text(arrays: Sequence[tuple[Sequence[int], str]]) -> str:
    """``4 x 8, 4 x 8, 4 float32`` for arrays of one element type (said once, at the end), ``6 x 6 int8, 4 x 6 x 6
    float32`` for several: what ``-v`` says a file holds."""
    shapes = [" x ".join(map(str, shape)) for shape, _ in arrays]
    types = [element for _, element in arrays]
    if len(set(types)) == 1:
        return f"{', '.join(shapes)} {types[0]}"
    return ", ".join(f"{shape} {element}" for shape, element in zip(shapes, types, strict=True))


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def _report_check(changed: Sequence[Path], as_json: bool, quiet: bool) -> None:
    """``--check``: exit 0 when every output is up to date, 1 (saying which would change) otherwise."""
    if as_json:
        import json

        doc = {"up_to_date": not changed, "would_change": [str(p) for p in changed]}
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    if changed and not quiet:
        for path in changed:
            click.echo(f"would {'rewrite' if path.exists() else 'create'} {path}", err=True)
    if changed:
        sys.exit(1)


def _hashing(table: Table, digests: dict[str, str]) -> Table:
    """The table, with each array's sha256 (stored values, little-endian, row-major: the bytes of a .npy's data or
    a .bin) taken as the writer reads its rows, so ``--json`` costs no second pass; an array read out of order or
    more than once is hashed again at the end (:func:`_report_json`)."""
    import hashlib

    arrays: dict[str, Any] = {}
    for key, array in table.arrays.items():
        if not isinstance(array, RowSource):
            arrays[key] = array
            continue
        state = {"next": 0, "hash": hashlib.sha256(), "ok": True}

        def rows(lo: int, hi: int, src: RowSource = array, st: dict[str, Any] = state, key: str = key) -> np.ndarray:
            block = src[lo:hi]
            if st["ok"] and lo == st["next"]:
                st["hash"].update(_le_bytes(block))
                st["next"] = hi
                if hi == src.shape[0]:
                    digests[key] = st["hash"].hexdigest()
            else:
                st["ok"] = False
                digests.pop(key, None)
            return block

        arrays[key] = RowSource(array.shape, array.dtype, rows)
    return Table(table.kind, arrays, table.params, table.axes)


def _le_bytes(block: np.ndarray) -> bytes:
    return np.ascontiguousarray(block, block.dtype.newbyteorder("<")).tobytes()


def _report_json(table: Table, format_name: str, written: Sequence[Path], digests: dict[str, str]) -> None:
    """``--json``: what was written, on stdout, as canonical JSON."""
    import hashlib
    import json

    from ..formats._blocks import row_blocks

    arrays = {}
    for key, array in table.arrays.items():
        digest = digests.get(key)
        if digest is None:
            h = hashlib.sha256()
            for _, block in row_blocks(array):
                h.update(_le_bytes(np.asarray(block)))
            digest = h.hexdigest()
        arrays[key] = {
            "shape": list(array.shape),
            "dtype": element_of(table.params, array.dtype),
            "sha256": digest,
        }
    doc = {
        "format": format_name,
        "kind": table.kind,
        "params": dict(table.params),
        "outputs": [{"path": str(p), "bytes": p.stat().st_size} for p in written],
        "arrays": arrays,
    }
    click.echo(json.dumps(doc, indent=2, sort_keys=True))


#: Values per second, roughly, on a small machine: a progress bar is shown when the work should take over a second.
_VALUES_PER_SECOND = {False: 100e6, True: 20e6}  # binary formats, text formats


@contextlib.contextmanager
def progress(table: Table, *, label: str, text: bool, quiet: bool) -> Iterator[Table]:
    """The table, wrapped so that a rich progress bar on stderr, ``label`` first (``writing pe.h``), follows the rows
    the writer asks for, over every array computed on demand.

    Shown only when stderr is a terminal, ``quiet`` is not set and the work is expected to take over a second.
    """
    lazy = {key: a for key, a in table.arrays.items() if isinstance(a, RowSource)}
    values = sum(a.size for a in lazy.values())
    if quiet or not sys.stderr.isatty() or not lazy or values < _VALUES_PER_SECOND[text]:
        yield table
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(escape(printable(label))), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("rows", total=sum(a.shape[0] for a in lazy.values()))
        done = dict.fromkeys(lazy, 0)

        def follow(key: str, array: RowSource) -> RowSource:
            def rows(lo: int, hi: int) -> np.ndarray:
                block = array[lo:hi]
                done[key] = max(done[key], hi)
                bar.update(task, completed=sum(done.values()))
                return block

            return RowSource(array.shape, array.dtype, rows)

        arrays = {key: follow(key, a) if key in lazy else a for key, a in table.arrays.items()}  # type: ignore[arg-type]
        yield Table(table.kind, arrays, table.params, table.axes)
