"""How a ``posenc`` command ends: errors become one line and an exit code, here and nowhere else.

- 0: success (silent unless ``-v``, but for posenc's notes: :func:`notes`, :func:`advice`);
- 2: bad usage, an invalid parameter (click's usage errors and :class:`~posenc_cli.errors.SpecError`);
- 1: any other failure (:class:`~posenc_cli.errors.PosencError`, an OS error, not enough memory or disk, an
  internal error);
- 130: interrupted (SIGINT); 143: terminated (SIGTERM); 129: hung up (SIGHUP). The output keeps what it held.

Every error is one line on stderr, ``Error: <what was wrong and what is allowed>``, never a traceback (set
``POSENC_DEBUG=1`` to see one), and no Python warning is ever printed (:func:`no_warnings`). stdout is left to
machines.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from .._printable import printable
from ..errors import OutputError, PosencAdvice, PosencError, PosencWarning, SpecError, did_you_mean
from ..system import atomic

__all__ = [
    "ClosedStream",
    "PosencGroup",
    "advice",
    "fail",
    "mapped_errors",
    "no_warnings",
    "notes",
    "say",
]


class PosencGroup(click.Group):
    """A click group whose errors are one line and whose exit codes follow the module's table."""

    def main(  # type: ignore[override]  # always standalone: errors become exit codes here
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        extra.pop("standalone_mode", None)
        from ..system.signals import Terminated, terminating_cleanly  # SIGTERM, SIGHUP unwind like Ctrl-C

        if sys.stdout is None:  # started with stdout closed (>&-): writing to it must fail, not vanish
            sys.stdout = ClosedStream()

        try:
            with terminating_cleanly(), no_warnings():
                return super().main(args, prog_name or "posenc", standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            former = _former_short(exc, list(args) if args is not None else sys.argv[1:])
            if former:
                fail(former, exc.exit_code)
            if isinstance(exc, click.NoSuchOption):
                fail(_no_such_option(exc), exc.exit_code)
            fail(exc.format_message(), exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            fail("interrupted", 130)
        except Terminated as exc:  # 128 + signum: 143 for SIGTERM, 129 for SIGHUP; temporary files are gone
            fail(str(exc), exc.exit_code)
        except PosencError as exc:  # raised outside a command's error mapping
            fail(str(exc), 2 if isinstance(exc, SpecError) else 1)
        except BrokenPipeError:  # the reader went away (| head): what it wanted it has; the rest is not wanted
            with contextlib.suppress(OSError):
                sys.stdout = None  # no flush at exit into the broken pipe
            sys.exit(1)
        except OSError as exc:  # one the library did not map: still one line, naming the file
            fail(f"{exc.filename!r}: {exc.strerror}" if exc.filename and exc.strerror else str(exc), 1)
        except MemoryError:
            fail("out of memory: the table does not fit; use a smaller --seq-len or --d-model", 1)
        except Exception as exc:  # a bug: still one line, with the way to see the traceback
            if os.environ.get("POSENC_DEBUG"):
                raise
            fail(f"internal error ({type(exc).__name__}: {exc}); rerun with POSENC_DEBUG=1 for details", 1)


def _no_such_option(exc: click.NoSuchOption) -> str:
    """posenc's own line for an unknown option, the same whatever click's version words it as (8.2.0 says
    ``No such option: -d``, later ones ``No such option '-d'.``): ``No such option '--seqlen'; did you mean
    '--seq-len'?``, the options offered being those of the command typed."""
    command = exc.ctx.command if exc.ctx is not None else None
    flags = [flag for p in getattr(command, "params", ()) for flag in [*p.opts, *p.secondary_opts]]
    close = _nearest(exc) or did_you_mean(exc.option_name, [f for f in flags if f.startswith("--")])
    return f"No such option {exc.option_name!r}" + (f"; {close.lstrip('; ')}" if close else "")


def _nearest(exc: click.NoSuchOption) -> str:
    """For an option typed as another command spells it (``posenc rope -d``, ``posenc sincos2d -n``): the option
    meant here, ``; posenc rope takes --head-dim (dimension per head (even))``."""
    command = exc.ctx.command if exc.ctx is not None else None
    for param in getattr(command, "params", ()):
        if command is not None and exc.option_name in getattr(param, "near", ()):
            return f"; posenc {command.name} takes {_spelled(param)} ({_what(param)})"
    return ""


def _former_short(exc: click.UsageError, argv: Sequence[str]) -> str:
    """The one line for a command line that uses a short option in its meaning of the last release (an option's
    :attr:`~posenc_cli.params.Param.formerly`: ``posenc relative -q 8``, which now reads as ``--quiet`` and a stray
    ``8``), or ``""``.

    Only a short option followed by a value is its old use (the new ones are flags): ``-q 8`` or ``-q8``, before
    any ``--``."""
    command = exc.ctx.command if exc.ctx is not None else None
    if command is None:
        return ""
    words = list(argv[: argv.index("--")] if "--" in argv else argv)
    records = [getattr(p, "record", None) for p in command.params]
    for short, former in ((r.formerly, r.name) for r in records if r is not None and r.formerly is not None):
        name = command.name
        values = [
            words[i + 1] if word == short else word[len(short) :]
            for i, word in enumerate(words)
            if (word == short and i + 1 < len(words) and not words[i + 1].startswith("-"))
            or (word.startswith(short) and word[len(short) :][:1].isdigit())
        ]
        now = next((p for p in command.params if short in getattr(p, "opts", ())), None)
        was = next((p for p in command.params if p.name == former), None)
        if values and now is not None and was is not None:
            long_now = next(o for o in now.opts if o.startswith("--"))
            return (
                f"{short} is {long_now} now, as on every posenc command; the {former.replace('_', ' ')} is "
                f"{_spelled(was)}: posenc {name} {was.opts[0]} {shlex.quote(values[0])}"
            )
    return ""


def _spelled(param: click.Parameter) -> str:
    """An option's flags as its help shows them: ``-Q/--query-length``."""
    return "/".join(getattr(param, "opts", ()))


def _what(param: click.Parameter) -> str:
    """An option's help without its bracketed notes and final period, first letter lower-cased unless it starts an
    acronym: ``dimension per head (even)``."""
    text = str(getattr(param, "help", "") or "").split("  [")[0].strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


class ClosedStream:
    """What ``sys.stdout`` is when posenc was started with it closed: every write fails as it would on the closed
    descriptor (``EBADF``), so a command whose output is lost exits 1 with "stdout is closed"."""

    def write(self, data: object) -> int:
        raise OutputError("stdout is closed: nothing can be written to it (write to a file with -o FILE)")

    def flush(self) -> None:
        pass

    @property
    def buffer(self) -> ClosedStream:
        return self

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OutputError("stdout is closed")


def fail(message: str, code: int) -> NoReturn:
    """Print ``Error: message`` as one line on stderr and exit with ``code``."""
    # One line, and nothing a file put in the message (a name, a key) can drive the terminal.
    with contextlib.suppress(OSError, ValueError):  # a closed stderr: the exit code still tells
        click.echo(f"Error: {printable(' '.join(message.split()))}", err=True)
    sys.exit(code)


@contextlib.contextmanager
def mapped_errors(ctx: click.Context) -> Iterator[None]:
    """Turn library errors into click errors that name the command-line option."""
    try:
        yield
    except SpecError as exc:
        option = next((p for p in ctx.command.params if p.name == exc.param), None)
        raise click.BadParameter(str(exc), ctx=ctx, param=option) from None
    except PosencError as exc:
        raise click.ClickException(str(exc)) from None


@contextlib.contextmanager
def notes(*, quiet: bool) -> Iterator[None]:
    """posenc's notes (:class:`~posenc_cli.errors.PosencWarning`: a renamed manifest key) raised inside, printed
    after it as ``Note: ...`` lines on stderr, each once, unless ``quiet``. Advice
    (:class:`~posenc_cli.errors.PosencAdvice`) is :func:`advice`'s to print, when the output it is about was
    written: here it is dropped. Every other warning was never posenc's to print (:func:`no_warnings`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PosencWarning)
        yield
    said = [note for note in caught if issubclass(note.category, PosencWarning)]
    _say_notes([note for note in said if not issubclass(note.category, PosencAdvice)], quiet)


@contextlib.contextmanager
def advice(paths: Sequence[Path] | None, *, quiet: bool) -> Iterator[None]:
    """posenc's advice (:class:`~posenc_cli.errors.PosencAdvice`: a C table that will compile slowly, and what to
    write instead) raised inside, printed after it as ``Note: ...`` lines on stderr, each once, only when the block
    created or changed one of the output files ``paths`` (``None``: the output is stdout, always written) and not
    ``quiet``. So it is said once, where users see it, when the file is made: not for a rewrite that left the file
    as it was, not under ``--check`` (which writes nothing). Other warnings raised inside go on to the enclosing
    :func:`notes`."""
    before = [atomic.identity(path) for path in paths or ()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PosencAdvice)
        yield
    written = paths is None or any(atomic.identity(p) != old for p, old in zip(paths, before, strict=True))
    for note in caught:
        if not issubclass(note.category, PosencAdvice):
            warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    if written:
        _say_notes([n for n in caught if issubclass(n.category, PosencAdvice)], quiet)


def _say_notes(caught: Sequence[warnings.WarningMessage], quiet: bool) -> None:
    """Each note once, as a ``Note:`` line on stderr; none when ``quiet``."""
    said: set[str] = set()
    for note in caught:
        if quiet or str(note.message) in said:
            continue
        said.add(str(note.message))
        click.echo(f"Note: {printable(str(note.message))}", err=True)  # a name in it cannot drive the terminal


@contextlib.contextmanager
def no_warnings() -> Iterator[None]:
    """No Python warning reaches the terminal from inside: a library's (numpy's overflow, matplotlib's missing
    glyph, a deprecation), whatever ``PYTHONWARNINGS`` or ``-W`` ask for, ``error`` included (a library's warning
    never becomes posenc's failure). posenc's own are turned on again, and printed, only by :func:`notes` and
    :func:`advice`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def say(message: str) -> None:
    """A line for a person, on stderr (``-v``)."""
    from rich.console import Console  # only when there is something to say

    # soft_wrap: a path is never broken across lines; markup=False: a path with [brackets] is printed as it is.
    Console(stderr=True, highlight=False, soft_wrap=True).print(printable(message), markup=False)
