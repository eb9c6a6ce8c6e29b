"""``posenc identify``: which formula made the table stored in a file (:mod:`posenc_cli.identification`)."""

from __future__ import annotations

import sys

import click

from .._printable import printable
from ..identification import Candidate, Identification, TensorResult, identify
from ._run import mapped_errors
from .options import max_memory, with_format_lists

__all__ = ["identify_command"]


@with_format_lists
@click.command("identify", short_help="Name the formula behind a table in a checkpoint.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--key", default=None, help="The array to identify (default: every array that can be a table).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object on stdout.")
@max_memory
@click.pass_context
def identify_command(ctx: click.Context, /, file: str, key: str | None, as_json: bool, max_memory: int | None) -> None:
    """Name the formula, with its parameters, that made the positional table in FILE (any file posenc reads:
    {readable}; a checkpoint or posenc's own), or say that none does (a learned table).

    The parameters are read off the values (layout, frequencies, base, positions, amplitude, padding row), and
    the exact table of each reading is compared entry by entry: a match agrees bit for bit, or within the
    framework's own float rounding. The report gives the posenc command and the manifest entry that regenerate
    the table; without a match, the nearest readings and where the table departs from them (rows, columns).
    Exit 0 for a match, 1 for none.

    \b
    Examples:
      posenc identify model.safetensors
      posenc identify m2m100.safetensors --key model.encoder.embed_positions.weights --json
    """
    with mapped_errors(ctx):
        result = identify(file, key, max_memory=max_memory)
    if as_json:
        import json

        click.echo(json.dumps(result.to_json(), indent=2, sort_keys=True, allow_nan=False))
    else:
        _print(file, result)
    sys.exit(0 if result.match is not None else 1)


def _describe(tensor: TensorResult) -> str:
    name = "the array" if tensor.key is None else repr(tensor.key)
    return f"{name} {' x '.join(map(str, tensor.shape))} {tensor.dtype}"


def _closeness(candidate: Candidate) -> str:
    c = candidate.comparison
    return (
        f"{c.agreement}: max abs error {c.max_abs_error:.3g} ({c.max_amplitude_ulps:.3g} ulp of the amplitude, "
        f"{c.max_ulp_error:.3g} ulp of the entry)"
    )


def _print(file: str, result: Identification) -> None:
    lines: list[str] = []
    best = result.best
    if best is None:
        lines.append(f"{file}: no floating-point array with one or two axes (besides axes of size 1) to identify")
    elif best.match is not None:
        match = best.match
        lines.append(f"{file}: {_describe(best)} is a posenc {match.hypothesis.command} table")
        preset = match.hypothesis.preset
        if preset:
            also = match.hypothesis.equivalent
            same = f" (the same table as {', '.join(also)})" if also else ""
            lines.append(f"  preset: {preset}{same}")
        lines.append(f"  agreement: {_closeness(match)}")
        lines.append(f"  regenerate: {match.command}")
        lines.append("  manifest entry:")
        lines += [f"    {line}" for line in match.manifest.splitlines()]
    else:
        lines.append(f"{file}: {_describe(best)}: no match")
        if best.note:
            lines.append(f"  {best.note}")
        for candidate in best.nearest:
            c = candidate.comparison
            where = ""
            if c.departures:
                summary = c.summary()
                at = [f"{axis} {', '.join(summary[f'departure_{axis}'])}" for axis in ("rows", "columns")]  # type: ignore[arg-type]
                at = [text for text in at if not text.endswith(" ")]
                entries = "1 entry" if c.departures == 1 else f"{c.departures} entries"
                where = f"; departs in {entries} ({'; '.join(at)})"
            lines.append(f"  nearest: {candidate.command}")
            lines.append(
                f"    max abs error {c.max_abs_error:.3g} ({c.max_amplitude_ulps:.3g} ulp of the amplitude){where}"
            )
    for tensor in result.tensors:
        if tensor is best:
            continue
        if tensor.match is None and tensor.note and tensor.note.startswith("not tried"):
            lines.append(f"also {tensor.key!r}: {tensor.note}")
            continue
        found = f"posenc {tensor.match.hypothesis.command} ({tensor.match.command})" if tensor.match else "no match"
        lines.append(f"also {_describe(tensor)}: {found}")
    for line in lines:  # names and keys from the file are data: control characters escaped
        click.echo(printable(line))
