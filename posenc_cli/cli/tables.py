"""``posenc generate``, ``rope``, ``alibi``, ``sincos2d``, ``relative``, ``window`` (one command per kind of
:data:`~posenc_cli.kinds.KINDS`, made from its record) and ``presets``."""

from __future__ import annotations

from typing import Any

import click

from ..errors import SpecError
from ..kinds import Kind, by_command
from ..params import command_line
from ._run import mapped_errors
from .options import options, write_options
from .write import write

__all__ = ["presets_command", "table_command", "table_command_named"]


def table_command(kind: Kind) -> click.Command:
    """The click command of ``kind``: its options, then the element type, the output options and the switches."""

    @click.pass_context
    def run(ctx: click.Context, /, **values: Any) -> None:
        def recorded(name: str) -> str:
            given = [(p, name if p.name == "name" else values[p.name]) for p in kind.keys]
            return command_line(kind.command, [], given, values["output"])

        with mapped_errors(ctx):
            write(ctx, lambda: kind.build(values), recorded, lazy=kind.lazy)

    run.__doc__ = kind.doc
    decorated = options(kind.inputs)(write_options()(run))  # the kind's options first, then the output's
    return click.command(kind.command, context_settings={"show_default": True}, short_help=kind.short_help)(decorated)


@click.command("presets", short_help="List the framework presets of posenc generate.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON on stdout.")
def presets_command(as_json: bool) -> None:
    """List every --preset of posenc generate: its parameters and the framework functions it reproduces."""
    from ..kinds.sinusoid import listed_presets

    rows = listed_presets()
    if as_json:
        import json

        doc = [{"name": p.name, "params": v, "reproduces": p.reproduces, "agreement": p.agreement} for p, v in rows]
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    out = RichTable(title="posenc generate --preset NAME", show_lines=True)
    for column in ("preset", "parameters", "reproduces"):
        out.add_column(column, overflow="fold")
    for preset, values in rows:
        text = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        out.add_row(preset.name, text, f"{preset.reproduces}\n[dim]{preset.agreement}[/dim]")
    Console(soft_wrap=False).print(out)


def table_command_named(command: str) -> click.Command:
    """The click command of the kind whose command is ``command`` (``KeyError`` for none); no other kind's module is
    imported."""
    try:
        kind = by_command(command)
    except SpecError:
        raise KeyError(command) from None
    return table_command(kind)
