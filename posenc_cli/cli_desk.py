"""``posenc convert``, ``inspect``, ``verify``, ``plot`` and ``show``: the commands that read tables.

Registered on :data:`posenc_cli.cli.cli` when :mod:`posenc_cli.cli` is imported; the helpers they share (output
options, ``_write``, error mapping) live there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import _atomic, api
from ._cli_types import FLOAT, INT, SIZE, IntRange
from ._printable import printable
from .cli import _fail, _mapped_errors, _output_options, _write, cli
from .dtypes import DTYPES
from .encodings import presets
from .errors import SpecError
from .table import Table


def _max_memory(f: Callable[..., Any]) -> Callable[..., Any]:
    """--max-memory: how much a hostile or huge input may make posenc allocate (formats/limits.py)."""
    return click.option(
        "--max-memory",
        "max_memory",
        type=SIZE,
        help="The most memory reading FILE may take, e.g. 512M or 8G.  [default: half the available memory]",
    )(f)


@cli.command(context_settings={"show_default": True}, short_help="Write any table posenc reads in another format.")
@click.argument("input_", metavar="IN", type=click.Path(dir_okay=False))
@click.argument("output_arg", metavar="OUT", required=False)
@click.option("--key", help="The array to take from a file that holds several (an .npz or .safetensors tensor).")
@click.option("--dtype", type=click.Choice(DTYPES), help="Re-encode the values.  [default: as stored]")
@click.option("--scale", type=FLOAT, help="int8 only: the real value of one quantisation step.")
@click.option("--zero-point", "zero_point", type=INT, help="int8 only: the integer that stands for 0.0.  [default: 0]")
@(lambda f: _output_options(f, required=False))
@_max_memory
@click.pass_context
def convert(
    ctx: click.Context,
    /,
    input_: str,
    output_arg: str | None,
    key: str | None,
    dtype: str | None,
    scale: float | None,
    zero_point: int | None,
    **_: Any,
) -> None:
    """Write a table posenc can read (its own files, any .npy, .npz or .safetensors: a learned position
    embedding taken from a checkpoint) to any output format, with the usual options (--dtype, --name, C variants).

    \b
    Examples:
      posenc convert model.safetensors --key model.embed_positions.weight pos.h
      posenc convert pe.npy pe.h --dtype q15
      posenc convert rope.npz --key cos -o cos.csv
    """
    p = ctx.params
    with _mapped_errors(ctx):
        if (output_arg is None) == (p["output"] is None):
            raise SpecError("give the output once: convert IN OUT, or convert IN -o OUT", param="output")
        p["output"] = p["output"] if p["output"] is not None else output_arg
        limit = p["max_memory"]
        _write(
            ctx,
            lambda: api.convert(
                api.load(input_, max_memory=limit), dtype=dtype, scale=scale, zero_point=zero_point, key=key
            ),
        )


@cli.command(short_help="Show what a table file holds.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON on stdout.")
@_max_memory
@click.pass_context
def inspect(ctx: click.Context, /, file: str, as_json: bool, max_memory: int | None) -> None:
    """Show what FILE holds: kind, parameters and, per array, shape, element type, min and max (real values),
    size and the sha256 of its stored values. Reads every format posenc writes, its C outputs included, and any
    .npy, .npz, .safetensors, .h5 or CSV.

    \b
    Examples:
      posenc inspect pe.h
      posenc inspect model.safetensors --json
    """
    from . import inspect as facts

    with _mapped_errors(ctx):
        info = facts.describe(api.load(file, max_memory=max_memory))
    if as_json:
        import json

        click.echo(json.dumps(_json_safe(info), indent=2, sort_keys=True, allow_nan=False))
        return
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    # Everything from the file is data: control characters escaped (printable), never read as rich markup (Text).
    console = Console(highlight=False, soft_wrap=False)
    params = ", ".join(f"{k}={v}" for k, v in info["params"].items()) or "none recorded"
    console.print(printable(f"{file}: {info['kind']} table; parameters: {params}"), markup=False, soft_wrap=True)
    out = RichTable(show_header=True)
    for column in ("array", "shape", "dtype", "min", "max", "bytes"):
        out.add_column(column, overflow="fold", justify="right" if column in ("min", "max", "bytes") else "left")
    for key, a in info["arrays"].items():
        low, high = (f"{a[k]:.9g}" if a[k] is not None else "-" for k in ("min", "max"))
        shape = " x ".join(map(str, a["shape"]))
        out.add_row(Text(printable(key)), shape, a["dtype"], low, high, f"{a['nbytes']:,}")
    console.print(out)
    for key, a in info["arrays"].items():  # a digest is never folded: it is meant to be copied
        console.print(f"sha256 {a['sha256']}  {printable(key)}", markup=False, soft_wrap=True)


def _json_safe(value: Any) -> Any:
    """``value`` with every infinite or NaN float written as the string ``"inf"``, ``"-inf"`` or ``"nan"``: JSON
    has no such numbers (Python's ``Infinity`` is not JSON), and a table may hold them."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


@cli.command(short_help="Check a table file against its parameters, bit for bit.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "-s",
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter the file does not record (or to override).",
)
@click.option(
    "--kind",
    type=click.Choice(("sinusoidal", "rope", "alibi", "sincos2d")),
    help="The table's kind, for files without one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@_max_memory
@click.pass_context
def verify(
    ctx: click.Context,
    /,
    file: str,
    settings: tuple[str, ...],
    kind: str | None,
    as_json: bool,
    max_memory: int | None,
) -> None:
    """Recompute the table from the parameters FILE records (or those given with -s, for files that record none,
    like CSV) and compare every value bit for bit: exit 0 when all match, 1 with the first mismatches.

    \b
    Examples:
      posenc verify pe.h
      posenc verify pe.csv -s seq_len=2048 -s d_model=512
      posenc verify cos.npy --kind rope -s seq_len=4096 -s head_dim=128
    """
    from . import inspect as facts

    with _mapped_errors(ctx):
        table = api.load(file, max_memory=max_memory)
        given = facts.parse_settings(settings)
        params = {**table.params, **given}
        part = params.pop("part", None)
        what = kind or (table.kind if table.kind != "array" else "sinusoidal")
        if not given and table.kind == "array":
            raise SpecError(
                f"{file} records no parameters: give them, e.g. -s seq_len=2048 -s d_model=512 (and --kind for "
                "tables other than sinusoidal)",
                param="settings",
            )
        reference = facts.regenerate(what, params, max_memory=max_memory)
        if len(table.arrays) == 1 and len(reference.arrays) > 1:  # one array of a RoPE or ALiBi table
            key = str(part) if part is not None else next(iter(table.arrays))
            if key not in reference.arrays:
                raise SpecError(
                    f"{file} holds one array of a {what} table: say which with -s part=NAME "
                    f"({', '.join(reference.arrays)})",
                    param="settings",
                )
            reference = reference.part(key)
        result = facts.verify(table, reference)
    if as_json:
        import json

        doc = {
            "ok": result.ok,
            "compared": result.compared,
            "mismatched": result.mismatched,
            "problems": list(result.problems),
            "notes": list(result.notes),
            "mismatches": [
                {"array": m.array, "index": list(m.index), "stored": m.stored, "expected": m.expected}
                for m in result.mismatches
            ],
        }
        click.echo(json.dumps(_json_safe(doc), indent=2, sort_keys=True, allow_nan=False))
    else:
        for m in result.mismatches:
            where = ", ".join(map(str, m.index))
            click.echo(printable(f"{m.array}[{where}]: file {m.stored_value!r}, parameters give {m.expected_value!r}"))
        for problem in result.problems:
            click.echo(printable(problem))
    if not result.ok:
        what_failed = (
            f"{result.mismatched:,} of {result.compared:,} values differ"
            if result.mismatched
            else "; ".join(result.problems)
        )
        _fail(f"{file} does not hold the table its parameters give: {what_failed}", 1)


def _source_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """A table to look at: a FILE posenc can read, or the parameters of a 1-D sinusoidal table."""
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.argument("file", required=False, type=click.Path(dir_okay=False)),
        click.option("-n", "--seq-len", "seq_len", type=INT, help="Without FILE: positions of a generated table."),
        click.option("-d", "--d-model", "d_model", type=INT, help="Without FILE: its model dimension."),
        click.option("-p", "--preset", type=click.Choice(list(presets.PRESETS)), help="Without FILE: its preset."),
        click.option("--base", type=FLOAT, help="Without FILE: its base.  [default: 10000]"),
        click.option("--part", help="Which array of a table that holds several (cos, sin, bias, ...)."),
        _max_memory,
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _source(p: dict[str, Any]) -> Table:
    """The table ``_source_options`` name: loaded from FILE, or generated (lazily: only the rows shown are made)."""
    made = {key: p[key] for key in ("seq_len", "d_model", "preset", "base") if p[key] is not None}
    if p["file"] is not None:
        if made:
            flags = ", ".join("--" + key.replace("_", "-") for key in made)
            raise SpecError(f"give a FILE or the table's parameters, not both (got FILE and {flags})", param="file")
        return api.load(p["file"], max_memory=p["max_memory"])
    if p["seq_len"] is None or p["d_model"] is None:
        raise SpecError("give a FILE to look at, or -n/--seq-len and -d/--d-model for a generated table", param="file")
    return api.generate(p["seq_len"], p["d_model"], base=p["base"], preset=p["preset"], lazy=True)


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


@cli.command(short_help="Draw a table as a PNG heatmap (needs matplotlib).")
@_source_options
@click.option("-o", "--output", required=True, type=str, help="The PNG file to write.")
@click.option("--dims", type=_Dims(), help="Also plot these columns against position, in a second panel.")
@click.option("--title", help="The title.  [default: the table's kind and parameters]")
@click.option("--dpi", type=IntRange(20, 600), default=100, show_default=True, help="Pixels per inch (8x6 in).")
@click.pass_context
def plot(
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
    from . import plot as plotting

    with _mapped_errors(ctx):
        plotting.require_matplotlib()  # before any work
        out = Path(output)
        if out.suffix.lower() != ".png":
            raise SpecError(f"the output must be a .png file, got {output!r}", param="output")
        _atomic.check_writable(out)
        table = _source(ctx.params)
        if title is not None:  # bytes that are not UTF-8 (a shell's $'\xff') arrive as lone surrogates
            title = title.encode("utf-8", "replace").decode("utf-8")
        plotting.heatmap_png(table, out, part=ctx.params["part"], dims=dims, title=title, dpi=dpi)


@cli.command(short_help="Show a small heatmap of a table in the terminal.")
@_source_options
@click.option("--width", type=IntRange(20, 1000), help="Columns of text.  [default: 80]")
@click.option("--height", type=IntRange(3, 1000), help="Lines of text.  [default: 24]")
@click.pass_context
def show(ctx: click.Context, /, width: int | None, height: int | None, **_: Any) -> None:
    """Show a downsampled heatmap of a table in the terminal (two rows per line, one column per character), with
    its kind, shape, element type and range.

    \b
    Examples:
      posenc show -n 256 -d 64
      posenc show pe.h5
      posenc show alibi.npz --part bias
    """
    from rich.console import Console

    from . import plot as plotting

    with _mapped_errors(ctx):
        table = _source(ctx.params)
        view = plotting.terminal_heatmap(table, part=ctx.params["part"], width=width, height=height)
    Console(highlight=False, soft_wrap=True).print(view)
