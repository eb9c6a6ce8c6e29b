"""The ``posenc`` command: parse arguments, call the library, report, map errors to exit codes.

This package is the only one that uses click and rich, and the only place errors become exit codes
(:mod:`posenc_cli.cli._run` has the table). Its modules:

- :mod:`~posenc_cli.cli.options`: click options made from the registry (:mod:`posenc_cli.kinds`);
- :mod:`~posenc_cli.cli.write`: the write path every table command shares;
- :mod:`~posenc_cli.cli.tables`: one table command per kind of the registry (:data:`posenc_cli.kinds.KINDS`), and
  presets;
- :mod:`~posenc_cli.cli.files`: convert, inspect, verify;
- :mod:`~posenc_cli.cli.identify`: identify;
- :mod:`~posenc_cli.cli.view`: plot, show;
- :mod:`~posenc_cli.cli.build`: build.

This module makes the group; no module of posenc imports it (the console script, :mod:`posenc_cli._entry`, calls
:func:`main`). The group's commands are a table command for each kind of :data:`posenc_cli.kinds.KINDS` (a kind added
there is a command without a line here) and the commands that are no kind (:data:`OTHER_COMMANDS`); a command's
module is imported only when that command is asked for (:class:`_Commands`): ``posenc generate`` never imports the
build, file or view commands, nor what they stand on (the manifest reader, tomllib, the verifier, rich), and
``posenc --version`` does not read the registry. ``posenc --help`` and ``cli.commands`` see every command.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping, Sequence

import click

from .._version import __version__
from ._run import PosencGroup

__all__ = ["OTHER_COMMANDS", "cli", "command_names", "main"]

#: The commands that make no kind's table: the module of this package that defines each and the attribute that
#: holds it. Every kind's command is made by :func:`posenc_cli.cli.tables.table_command` from its kind.
OTHER_COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("build", "build_command"),
    "convert": ("files", "convert_command"),
    "identify": ("identify", "identify_command"),
    "inspect": ("files", "inspect_command"),
    "plot": ("view", "plot_command"),
    "presets": ("tables", "presets_command"),
    "show": ("view", "show_command"),
    "verify": ("files", "verify_command"),
}


def command_names() -> list[str]:
    """Every command of ``posenc``, sorted: each kind's (:data:`posenc_cli.kinds.REGISTRY`) and the others."""
    from ..kinds import REGISTRY  # the commands' names: no kind's module is imported

    return sorted({*REGISTRY, *OTHER_COMMANDS})


class _Commands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported the first time it is looked up (click's ``Group.commands``)."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name in OTHER_COMMANDS:
                module, attribute = OTHER_COMMANDS[name]
                self._loaded[name] = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
            elif name in command_names():
                self._loaded[name] = importlib.import_module(f"{__name__}.tables").table_command_named(name)
            else:
                raise KeyError(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*command_names(), *self._loaded}))

    def __len__(self) -> int:
        return len({*command_names(), *self._loaded})


class _Posenc(PosencGroup):
    """The ``posenc`` group: its description names every format of the registry."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The description, its ``{formats}`` filled from the registry the first time the help is shown: not on
        import, which would load the registry (and numpy) for ``posenc --version`` and ``--cmake-dir`` too."""
        if "{formats}" in (self.help or ""):
            from .options import with_format_lists

            with_format_lists(self)
        super().format_help_text(ctx, formatter)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: ``posenc X.Y.Z (compiled core)``, or ``(pure core)`` where posenc runs without its compiled
    modules (not built, or ``POSENC_CORE=pure``: :mod:`posenc_cli._native`); exit 0. Under ``POSENC_CORE=compiled``
    without them, the error of :func:`~posenc_cli._native.native` (exit 1)."""
    if not value or ctx.resilient_parsing:
        return
    from .. import _native

    _native.native("_core")  # raises for a bad POSENC_CORE, or a compiled core required and missing
    click.echo(f"posenc {__version__} ({_native.CORE} core)")
    ctx.exit(0)


def _print_cmake_dir(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--cmake-dir``: the folder on stdout, nothing else; exit 0 (1 if the install lacks its CMake files)."""
    if not value or ctx.resilient_parsing:
        return
    from ..cmake import FOLDER as CMAKE_DIR  # only for this option

    if not (CMAKE_DIR / "posenc-config.cmake").is_file():
        raise click.ClickException(
            f"posenc's CMake files are missing from {str(CMAKE_DIR)!r}: this installation is incomplete; "
            "reinstall posenc (pip install --force-reinstall posenc)"
        )
    click.echo(str(CMAKE_DIR))
    ctx.exit(0)


@click.group(
    cls=_Posenc,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
    no_args_is_help=False,
)
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which core runs (compiled or pure), and exit.",
)
@click.option(
    "--cmake-dir",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_cmake_dir,
    help="Print the folder of posenc's CMake package (for find_package(posenc CONFIG): -Dposenc_DIR=...) and exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Positional-encoding tables for Transformers, every value correctly rounded, written as {formats}.

    \b
    Example:
      posenc generate -n 2048 -d 512 -o pe.h
    """
    if ctx.invoked_subcommand is None:  # plain `posenc`: the help, as --help shows it
        click.echo(ctx.get_help())


cli.commands = _Commands()


def main(args: Sequence[str] | None = None, prog_name: str = "posenc") -> None:
    """Console-script entry point."""
    cli.main(args, prog_name=prog_name)
