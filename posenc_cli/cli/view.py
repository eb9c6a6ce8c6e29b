"""``posenc plot`` and ``show``: a table drawn as a PNG heatmap, or shown in the terminal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .. import api
from .._cli_types import IntRange
from ..errors import SpecError
from ..kinds import by_command
from ..kinds.sinusoid import VIEWED
from ..system import atomic
from ..table import Table
from ._run import mapped_errors
from .options import max_memory, option

__all__ = ["plot_command", "show_command"]


def _source_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """A table to look at: a FILE posenc can read, or the parameters of a 1-D sinusoidal table (``posenc
    generate``'s own: the same flags, types and ranges, none required, no default that would count as given)."""
    generate = {p.name: p for p in by_command("generate").params}
    given = [dataclasses.replace(generate[name], required=False, default=None) for name in VIEWED]
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.argument("file", required=False, type=click.Path(dir_okay=False)),
        *(option(param, help=VIEWED[param.name]) for param in given),
        click.option("--part", help="Which array of a table that holds several (cos, sin, bias, ...)."),
        max_memory,
    ]
    for decorate in reversed(options):
        f = decorate(f)
    return f


def _source(p: dict[str, Any]) -> Table:
    """The table ``_source_options`` name: loaded from FILE, or generated (lazily: only the rows shown are made)."""
    made = {key: p[key] for key in VIEWED if p[key] is not None}
    if p["file"] is not None:
        if made:
            flags = ", ".join("--" + key.replace("_", "-") for key in made)
            raise SpecError(f"give a FILE or the table's parameters, not both (got FILE and {flags})", param="file")
        return api.load(p["file"], max_memory=p["max_memory"])
    if p["seq_len"] is None or p["d_model"] is None:
        raise SpecError("give a FILE to look at, or -n/--seq-len and -d/--d-model for a generated table", param="file")
    return by_command("generate").build(made)  # lazily, as every generated table is built


class _Dims(click.ParamType):  # type: ignore[type-arg]
    """Comma-separated column indices."""

    name = "J,K,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        parts = [v.strip() for v in str(value).split(",")]
        if all(v.isascii() and v.isdigit() for v in parts):
            return tuple(int(v) for v in parts)
        self.fail(f"expected comma-separated column indices, e.g. 0,1,5, got {value!r}", param, ctx)


@click.command("plot", short_help="Draw a table as a PNG heatmap (needs matplotlib).")
@_source_options
@click.option("-o", "--output", required=True, type=str, help="The PNG file to write.")
@click.option("--dims", type=_Dims(), help="Also plot these columns against position, in a second panel.")
@click.option("--title", help="The title.  [default: the table's kind and parameters]")
@click.option("--dpi", type=IntRange(20, 600), default=100, show_default=True, help="Pixels per inch (8x6 in).")
@click.pass_context
def plot_command(
    ctx: click.Context, /, output: str, dims: tuple[int, ...] | None, title: str | None, dpi: int, **_: Any
) -> None:
    """Draw a table as the classic heatmap: position down, dimension across, a diverging colour map centred on 0,
    labelled axes and a colour bar; --dims adds a line plot of chosen dimensions against position.

    FILE is any file posenc reads; without it, -n and -d (and --preset, --base) generate a table. matplotlib is an
    optional extra: pip install 'posenc[plot]'.

    \b
    Examples:
      posenc plot -n 128 -d 64 -o pe.png
      posenc plot pe.npy --dims 0,1,10 -o pe.png
      posenc plot rope.npz --part cos -o rope_cos.png
    """
    from .. import plot as plotting

    with mapped_errors(ctx):
        plotting.require_matplotlib()  # before any work
        out = Path(output)
        if out.suffix.lower() != ".png":
            raise SpecError(f"the output must be a .png file, got {output!r}", param="output")
        atomic.check_writable(out)
        table = _source(ctx.params)
        if title is not None:  # bytes that are not UTF-8 (a shell's $'\xff') arrive as lone surrogates
            title = title.encode("utf-8", "replace").decode("utf-8")
        plotting.heatmap_png(table, out, part=ctx.params["part"], dims=dims, title=title, dpi=dpi)


@click.command("show", short_help="Show a small heatmap of a table in the terminal.")
@_source_options
@click.option("--width", type=IntRange(20, 1000), help="Columns of text.  [default: 80]")
@click.option("--height", type=IntRange(3, 1000), help="Lines of text.  [default: 24]")
@click.pass_context
def show_command(ctx: click.Context, /, width: int | None, height: int | None, **_: Any) -> None:
    """Show a downsampled heatmap of a table in the terminal (two rows per line, one column per character), with
    its kind, shape, element type and range.

    \b
    Examples:
      posenc show -n 256 -d 64
      posenc show pe.h5
      posenc show alibi.npz --part bias
    """
    from rich.console import Console

    from .. import plot as plotting

    with mapped_errors(ctx):
        table = _source(ctx.params)
        view = plotting.terminal_heatmap(table, part=ctx.params["part"], width=width, height=height)
    Console(highlight=False, soft_wrap=True).print(view)
