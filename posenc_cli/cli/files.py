"""``posenc convert``, ``inspect`` and ``verify``: the commands that read a table file and write, describe or
check it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .. import api
from .. import verify as checking
from .._printable import printable
from ..describe import describe
from ..errors import SpecError
from ..formats import C_OPTIONS, Format
from ..kinds import CONVERT, OUTPUT, REGISTRY
from ..params import command_line
from ..read import opened
from ..table import Table
from ._run import fail, mapped_errors
from .options import ClickChoice, max_memory, options, with_format_lists, write_options
from .write import write

__all__ = ["convert_command", "inspect_command", "json_safe", "verify_command"]


@with_format_lists
@click.command(
    "convert", context_settings={"show_default": True}, short_help="Write any table posenc reads in another format."
)
@click.argument("input_", metavar="IN", type=click.Path(dir_okay=False))
@click.argument("output_arg", metavar="OUT", required=False)
@options(CONVERT, dtype={"default": None})
@write_options(required=False)
@max_memory
@click.pass_context
def convert_command(ctx: click.Context, /, input_: str, output_arg: str | None, **_: Any) -> None:
    """Write a table from any file posenc reads ({readable}: posenc's own, or a learned position embedding taken
    from a checkpoint) to any output format, with the usual options (--dtype, --name, C variants).

    \b
    Examples:
      posenc convert model.safetensors --key model.embed_positions.weight pos.h
      posenc convert pe.npy pe.h --dtype q15
      posenc convert rope.npz --key cos -o cos.csv
    """
    p = ctx.params
    with mapped_errors(ctx):
        if (output_arg is None) == (p["output"] is None):
            raise SpecError("give the output once: convert IN OUT, or convert IN -o OUT", param="output")
        p["output"] = p["output"] if p["output"] is not None else output_arg

        def recorded(name: str) -> str:
            given = [(o, name if o.name == "name" else p[o.name]) for o in CONVERT + OUTPUT]
            return command_line("convert", [Path(input_).name], given, p["output"])

        def make() -> Any:
            table = api.load(input_, max_memory=p["max_memory"])
            if p["key"] is None and p["part"] is None and len(table.arrays) > 1:
                out = api.plan(p["output"], format=p["format"], check_paths=False)
                _check_all_fit(input_, table, out.format)
            return api.convert(table, **{param.name: p[param.name] for param in CONVERT})  # the registry's keywords

        write(ctx, make, recorded, lazy=False)


def _check_all_fit(file: str, table: Table, fmt: Format) -> None:
    """``SpecError`` (``--key``) when the arrays of ``table`` cannot all be written to ``fmt`` together: it holds
    one array (npy, csv), or it is C, whose arrays share one size macro per axis name, and two arrays give an axis
    two sizes (the tensors of a checkpoint, all named ``seq_len x d_model``)."""
    sizes: dict[str, int] = {}
    clash = any(
        sizes.setdefault(axis, size) != size
        for key, array in table.arrays.items()
        for axis, size in zip(table.axes_of(key), array.shape, strict=True)
    )
    if fmt.single or (C_OPTIONS <= fmt.options and clash):
        names = ", ".join(table.arrays)
        raise SpecError(f"{file} holds {len(table.arrays)} arrays ({names}): pick one with --key", param="key")


@with_format_lists
@click.command("inspect", short_help="Show what a table file holds.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON on stdout.")
@max_memory
@click.pass_context
def inspect_command(ctx: click.Context, /, file: str, as_json: bool, max_memory: int | None) -> None:
    """Show what FILE holds: kind, parameters and, per array, shape, element type, min and max (real values),
    size and the sha256 of its stored values. FILE is any file posenc reads ({readable}), posenc's own or not
    (posenc writes {write_only} but does not read them); for a file posenc did not write, also the formula behind
    each table (posenc identify).

    \b
    Examples:
      posenc inspect pe.h
      posenc inspect model.safetensors --json
    """
    with mapped_errors(ctx), opened(file, max_memory=max_memory) as table:  # read a block at a time
        info = describe(table)
    if as_json:
        import json

        click.echo(json.dumps(json_safe(info), indent=2, sort_keys=True, allow_nan=False))
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
        low, high = (_number(a[k]) for k in ("min", "max"))
        shape = " x ".join(map(str, a["shape"]))
        out.add_row(Text(printable(key)), shape, a["dtype"], low, high, f"{a['nbytes']:,}")
    console.print(out)
    for key, a in info["arrays"].items():  # a digest is never folded: it is meant to be copied
        console.print(f"sha256 {a['sha256']}  {printable(key)}", markup=False, soft_wrap=True)
    for key, a in info["arrays"].items():  # a file posenc did not write: which formula made each table
        if "identified" in a:
            found = a["identified"]
            said = f"`{found['command']}` ({found['agreement']})" if found else "no formula posenc knows"
            console.print(f"identified {printable(key)}: {said}", markup=False, soft_wrap=True)
    if any("identified" in a for a in info["arrays"].values()):
        console.print(printable(f"details: posenc identify {file}"), markup=False, soft_wrap=True)


def _number(value: float | int | None) -> str:
    """A min or max as the table shows it: integers exactly, floats to 9 significant digits."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.9g}"


def json_safe(value: Any) -> Any:
    """``value`` with every infinite or NaN float written as the string ``"inf"``, ``"-inf"`` or ``"nan"``: JSON
    has no such numbers (Python's ``Infinity`` is not JSON), and a table may hold them."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


@click.command("verify", short_help="Check a table file against its parameters, bit for bit.")
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
    type=ClickChoice(tuple(table for _, table in REGISTRY.values())),
    help="The table's kind, for files without one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@max_memory
@click.pass_context
def verify_command(
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
    with mapped_errors(ctx), opened(file, max_memory=max_memory) as table:  # read a block at a time
        given = checking.parse_settings(settings)
        params = {**table.params, **given}
        part = params.pop("part", None)
        what = kind or (table.kind if table.kind != "array" else "sinusoidal")
        if not given and table.kind == "array":
            raise SpecError(
                f"{file} records no parameters: give them, e.g. -s seq_len=2048 -s d_model=512 (and --kind for "
                "tables other than sinusoidal)",
                param="settings",
            )
        reference = checking.regenerate(what, params, max_memory=max_memory)
        if len(table.arrays) == 1 and len(reference.arrays) > 1:  # one array of a RoPE or ALiBi table
            key = str(part) if part is not None else next(iter(table.arrays))
            if key not in reference.arrays:
                raise SpecError(
                    f"{file} holds one array of a {what} table: say which with -s part=NAME "
                    f"({', '.join(reference.arrays)})",
                    param="settings",
                )
            reference = reference.part(key)
        result = checking.verify(table, reference)
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
        click.echo(json.dumps(json_safe(doc), indent=2, sort_keys=True, allow_nan=False))
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
        fail(f"{file} does not hold the table its parameters give: {what_failed}", 1)
