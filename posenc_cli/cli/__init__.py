"""The ``posenc`` command: parse arguments, call the library, report, map errors to exit codes.

This package is the only one that uses click and rich, and the only place errors become exit codes
(:mod:`posenc_cli.cli._run` has the table). Its modules:

- :mod:`~posenc_cli.cli.options`: click options made from the registry (:mod:`posenc_cli.kinds`);
- :mod:`~posenc_cli.cli.write`: the write path every table command shares;
- :mod:`~posenc_cli.cli.tables`: generate, rope, alibi, sincos2d (one per kind) and presets;
- :mod:`~posenc_cli.cli.files`: convert, inspect, verify;
- :mod:`~posenc_cli.cli.view`: plot, show;
- :mod:`~posenc_cli.cli.build`: build.

This module makes the group and adds every command to it; no module of posenc imports it (the console script,
:mod:`posenc_cli._entry`, calls :func:`main`).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from .._version import __version__
from ..cmake import FOLDER as CMAKE_DIR
from ._run import PosencGroup
from .build import build_command
from .files import convert_command, inspect_command, verify_command
from .tables import COMMANDS
from .view import plot_command, show_command

__all__ = ["cli", "main"]


def _print_cmake_dir(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--cmake-dir``: the folder on stdout, nothing else; exit 0 (1 if the install lacks its CMake files)."""
    if not value or ctx.resilient_parsing:
        return
    if not (CMAKE_DIR / "posenc-config.cmake").is_file():
        raise click.ClickException(
            f"posenc's CMake files are missing from {str(CMAKE_DIR)!r}: this installation is incomplete; "
            "reinstall posenc (pip install --force-reinstall posenc)"
        )
    click.echo(str(CMAKE_DIR))
    ctx.exit(0)


@click.group(
    cls=PosencGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
    no_args_is_help=False,
)
@click.version_option(__version__, "-V", "--version", prog_name="posenc", message="%(prog)s %(version)s")
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
    """Positional-encoding tables for Transformers: correctly rounded, written as .npy, .h5, .csv or C.

    \b
    Example:
      posenc generate -n 2048 -d 512 -o pe.h
    """
    if ctx.invoked_subcommand is None:  # plain `posenc`: the help, as --help shows it
        click.echo(ctx.get_help())


for _command in (*COMMANDS, convert_command, inspect_command, verify_command, plot_command, show_command):
    cli.add_command(_command)
cli.add_command(build_command)


def main(args: Sequence[str] | None = None, prog_name: str = "posenc") -> None:
    """Console-script entry point."""
    cli.main(args, prog_name=prog_name)
