"""The ``posenc`` command: parse arguments, call :mod:`posenc_cli.api`, report, map errors to exit codes.

This module and the command modules it registers (:mod:`~posenc_cli.cli_tables`: generate, presets, rope, alibi,
sincos2d; :mod:`~posenc_cli.cli_desk`: convert, inspect, verify, plot, show; :mod:`~posenc_cli.cli_build`: build) are
the only ones that use click and rich, and the only place errors become exit codes:

- 0: success (silent unless ``-v``);
- 2: bad usage, an invalid parameter (click's usage errors and :class:`~posenc_cli.errors.SpecError`);
- 1: any other failure (:class:`~posenc_cli.errors.PosencError`, an OS error, not enough memory or disk, an
  internal error);
- 130: interrupted (SIGINT); 143: terminated (SIGTERM); 129: hung up (SIGHUP). The output keeps what it held.

Every error is one line on stderr, ``Error: <what was wrong and what is allowed>``, never a traceback (set
``POSENC_DEBUG=1`` to see one). stdout is left to machines.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
import numpy as np

from . import api
from ._cli_types import FLOAT, INT
from ._printable import printable
from ._version import __version__
from .dtypes import DTYPES
from .errors import OutputError, PosencError, PosencWarning, SpecError
from .formats import C_OPTIONS, FORMATS, WriteOptions
from .table import RowSource, Table

#: API parameter names whose click option is spelled differently (``format`` shadows a builtin).
_OPTION_FOR_PARAM = {"format": "format_"}
_FORMAT_HELP = "; ".join(f"{f.name}: {'/'.join(f.suffixes)}" for f in FORMATS.values())


class PosencGroup(click.Group):
    """A click group whose errors are one line and whose exit codes follow the module's table."""

    def main(  # type: ignore[override]  # always standalone: errors become exit codes here
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        extra.pop("standalone_mode", None)
        from ._signals import Terminated, terminating_cleanly  # SIGTERM, SIGHUP unwind like Ctrl-C

        if sys.stdout is None:  # started with stdout closed (>&-): writing to it must fail, not vanish
            sys.stdout = _ClosedStream()

        try:
            with terminating_cleanly():
                return super().main(args, prog_name or "posenc", standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            _fail("interrupted", 130)
        except Terminated as exc:  # 128 + signum: 143 for SIGTERM, 129 for SIGHUP; temporary files are gone
            _fail(str(exc), exc.exit_code)
        except PosencError as exc:  # raised outside a command's error mapping
            _fail(str(exc), 2 if isinstance(exc, SpecError) else 1)
        except BrokenPipeError:  # the reader went away (| head): what it wanted it has; the rest is not wanted
            with contextlib.suppress(OSError):
                sys.stdout = None  # no flush at exit into the broken pipe
            sys.exit(1)
        except OSError as exc:  # one the library did not map: still one line, naming the file
            _fail(f"{exc.filename!r}: {exc.strerror}" if exc.filename and exc.strerror else str(exc), 1)
        except MemoryError:
            _fail("out of memory: the table does not fit; use a smaller --seq-len or --d-model", 1)
        except Exception as exc:  # a bug: still one line, with the way to see the traceback
            if os.environ.get("POSENC_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with POSENC_DEBUG=1 for details", 1)


class _ClosedStream:
    """What ``sys.stdout`` is when posenc was started with it closed: every write fails as it would on the closed
    descriptor (``EBADF``), so a command whose output is lost exits 1 with "stdout is closed"."""

    def write(self, data: object) -> int:
        raise OutputError("stdout is closed: nothing can be written to it (write to a file with -o FILE)")

    def flush(self) -> None:
        pass

    @property
    def buffer(self) -> _ClosedStream:
        return self

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OutputError("stdout is closed")


def _fail(message: str, code: int) -> NoReturn:
    # One line, and nothing a file put in the message (a name, a key) can drive the terminal.
    with contextlib.suppress(OSError, ValueError):  # a closed stderr: the exit code still tells
        click.echo(f"Error: {printable(' '.join(message.split()))}", err=True)
    sys.exit(code)


@contextlib.contextmanager
def _mapped_errors(ctx: click.Context) -> Iterator[None]:
    """Turn library errors into click errors that name the command-line option."""
    try:
        yield
    except SpecError as exc:
        wanted = _OPTION_FOR_PARAM.get(exc.param or "", exc.param)
        option = next((p for p in ctx.command.params if p.name == wanted), None)
        raise click.BadParameter(str(exc), ctx=ctx, param=option) from None
    except PosencError as exc:
        raise click.ClickException(str(exc)) from None


def _say(message: str) -> None:
    from rich.console import Console  # only when there is something to say

    # soft_wrap: a path is never broken across lines; markup=False: a path with [brackets] is printed as it is.
    Console(stderr=True, highlight=False, soft_wrap=True).print(printable(message), markup=False)


@click.group(
    cls=PosencGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
    no_args_is_help=False,
)
@click.version_option(__version__, "-V", "--version", prog_name="posenc", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Positional-encoding tables for Transformers: correctly rounded, written as .npy, .h5, .csv or C.

    \b
    Example:
      posenc generate -n 2048 -d 512 -o pe.h
    """
    if ctx.invoked_subcommand is None:  # plain `posenc`: the help, as --help shows it
        click.echo(ctx.get_help())


def _element_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--dtype, --scale, --zero-point: the element type of every command's output."""
    f = click.option(
        "--zero-point", "zero_point", type=INT, help="int8 only: the integer that stands for 0.0.  [default: 0]"
    )(f)
    f = click.option("--scale", type=FLOAT, help="int8 only: the real value of one quantisation step.")(f)
    return click.option("--dtype", type=click.Choice(DTYPES), default="float32", help="Output element type.")(f)


def _output_options(f: Callable[..., Any], required: bool = True) -> Callable[..., Any]:
    """Where and how to write: the same options on every command that writes a table."""
    options = [
        click.option(
            "-o", "--output", required=required, help="Output file (its suffix picks the format); - for stdout."
        ),
        click.option(
            "-f", "--format", "format_", type=click.Choice(list(FORMATS)), help=f"Force a format ({_FORMAT_HELP})."
        ),
        click.option(
            "--name", help="C symbol / HDF5 dataset (or group) name.  [default: output stem as a C identifier]"
        ),
        click.option("--part", help="Write only this array of a table that holds several (npy and csv need it)."),
        click.option("--header/--no-header", default=True, help="CSV: write the d0,d1,... header row."),
        click.option(
            "--lang", type=click.Choice(["c", "c++"]), default="c", help="C headers: C (also valid C++) or C++."
        ),
        click.option("--namespace", help="C++: put the table in this namespace (constexpr, C++11)."),
        click.option("--align", type=INT, help="C: align the table to N bytes (a power of two)."),
        click.option("--progmem", is_flag=True, help="C: put the table in AVR flash (PROGMEM)."),
        click.option(
            "--float-literal",
            "float_literal",
            type=click.Choice(["decimal", "hex", "bits"]),
            default="decimal",
            help="C float tables: shortest decimals (C89), hex floats (C99/C++17) or bit patterns.",
        ),
        click.option(
            "--c-half-type",
            "half_type",
            type=click.Choice(["_Float16", "__fp16"]),
            help="C float16 tables: native literals of this type.  [default: uint16_t bit patterns]",
        ),
        click.option("-v", "--verbose", is_flag=True, help="Say what was written (on stderr)."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar or notes, even on a terminal."),
        click.option(
            "--check", is_flag=True, help="Write nothing; exit 0 if the output is up to date, 1 if it would change."
        ),
        click.option(
            "--json", "as_json", is_flag=True, help="Print a report (paths, format, shapes, sha256) on stdout."
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


_C_OPTIONS = tuple(sorted(C_OPTIONS))


def _write(ctx: click.Context, make: Callable[[], Table]) -> None:
    """Check the output options, build the table (lazily where it can), write it (or check it), report."""
    p = ctx.params
    c_options: dict[str, object] = {key: p[key] for key in _C_OPTIONS}
    WriteOptions(**c_options)  # type: ignore[arg-type]  # checks them before any work
    to_stdout = p["output"] == "-"
    if to_stdout:
        if p["format_"] is None:
            raise SpecError(f"-o - writes to stdout and needs --format ({', '.join(FORMATS)})", param="format_")
        if p["check"] or p["as_json"]:
            flag = "--check" if p["check"] else "--json"
            raise SpecError(
                f"{flag} reports on stdout, which -o - takes for the table: write to a file", param="output"
            )
    out = api.plan(p["output"], format=p["format_"], name=p["name"], check_paths=not to_stdout)
    table = make()
    if p["part"] is not None:
        table = _checked_part(table, p["part"])
    command = _canonical_command(ctx, out.name)
    digests: dict[str, str] = {}
    with (
        _progress(table, out.format.text, p["quiet"] or to_stdout) as shown,
        warnings.catch_warnings(record=True) as notes,
    ):
        warnings.simplefilter("always", PosencWarning)
        if p["as_json"]:
            shown = _hashing(shown, digests)
        written = api.save(
            shown,
            p["output"],
            format=p["format_"],
            name=p["name"] and out.name,
            header=p["header"],
            command=command,
            check=p["check"],
            stdout=sys.stdout.buffer if to_stdout else None,
            **c_options,  # type: ignore[arg-type]  # checked by WriteOptions above
        )
    if not p["quiet"]:
        for note in notes:
            if issubclass(note.category, PosencWarning):  # posenc's notes only, not a library's deprecations
                click.echo(f"Note: {note.message}", err=True)
    if p["check"]:
        _report_check(written, p["as_json"], p["quiet"])
        return
    if p["as_json"]:
        _report_json(table, out.format.name, written, digests)
    if p["verbose"]:
        shapes = ", ".join(" x ".join(map(str, a.shape)) for a in table.arrays.values())
        for path in written:
            dtype = table.params.get("dtype", next(iter(table.arrays.values())).dtype)
            _say(f"wrote {path} ({out.format.name}, {shapes} {dtype}, {path.stat().st_size:,} bytes)")


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

    from .formats._blocks import row_blocks

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
            "dtype": str(table.params.get("dtype", array.dtype)),
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


def _checked_part(table: Table, part: str) -> Table:
    try:
        return table.part(part)
    except KeyError as exc:
        raise SpecError(str(exc.args[0]), param="part") from None


def _canonical_command(ctx: click.Context, name: str) -> str:
    """The command that reproduces a file, for provenance comments: every option that differs from its default,
    in declaration order, with the table name resolved and files by name only (an absolute build directory in the
    file would make the same table differ from one build tree to the next)."""
    words = ["posenc", ctx.command.name or ""]
    for param in ctx.command.params:
        value = name if param.name == "name" else ctx.params.get(param.name or "")
        if isinstance(param, click.Argument):
            if param.name not in ("output", "output_arg") and value is not None:
                words.append(Path(str(value)).name)
            continue
        if param.name in ("verbose", "quiet", "output", "check", "as_json", "max_memory") or value is None:
            continue
        if value is False:  # a --flag/--no-flag pair whose "no" side was asked for (--no-header, --no-truncate)
            if param.secondary_opts and value != param.default:
                words.append(next(o for o in param.secondary_opts if o.startswith("--")))
            continue
        if isinstance(value, tuple):
            value = "x".join(map(str, value)) if param.name == "grid" else ",".join(map(repr, value))
        if param.name not in ("seq_len", "d_model", "heads", "name", "dtype", "base") and value == param.default:
            continue
        flag = next(o for o in param.opts if o.startswith("--"))
        words += [flag] if value is True else [flag, repr(value) if isinstance(value, float) else str(value)]
    words += ["-o", Path(ctx.params["output"]).name]
    return shlex.join(words)


#: Values per second, roughly, on a small machine: a progress bar is shown when the work should take over a second.
_VALUES_PER_SECOND = {False: 100e6, True: 20e6}  # binary formats, text formats


@contextlib.contextmanager
def _progress(table: Table, text: bool, quiet: bool) -> Iterator[Table]:
    """The table, wrapped so that a rich progress bar on stderr follows the rows the writer asks for.

    Shown only when stderr is a terminal, ``--quiet`` is not given and the work is expected to take over a second.
    """
    array = next(iter(table.arrays.values()))
    if quiet or not sys.stderr.isatty() or len(table.arrays) != 1 or not isinstance(array, RowSource):
        yield table
        return
    if array.size < _VALUES_PER_SECOND[text]:
        yield table
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("writing"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeRemainingColumn())
    with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("rows", total=array.shape[0])

        def rows(lo: int, hi: int) -> np.ndarray:
            block = array[lo:hi]
            bar.update(task, completed=hi)
            return block

        yield Table(table.kind, {key: RowSource(array.shape, array.dtype, rows) for key in table.arrays}, table.params)


def main(args: Sequence[str] | None = None, prog_name: str = "posenc") -> None:
    """Console-script entry point."""
    cli.main(args, prog_name=prog_name)


# The commands live in their own modules (each imports the helpers above): importing them registers them.
from . import cli_build, cli_desk, cli_tables  # noqa: E402, F401

cli.add_command(cli_build.build_command)
