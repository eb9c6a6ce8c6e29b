"""``posenc build``: the click command over :mod:`posenc_cli.manifest` (every table of a manifest, and a depfile).

Errors are one line, exit 2 for a bad manifest or usage, 1 for a failed write; ``--check`` exits 1 when an output
would change.

For build systems that must know a manifest's outputs before they run it (CMake's ``posenc_add_manifest``, Meson):
``--list-outputs`` prints every file the build writes, one absolute path a line, and writes nothing, not even the
folders ``--make-dirs`` creates for a build (inside the output root only, so that a fresh build tree, which has
none of them, can be built). ``--list-outputs``, ``--depfile`` and so CMake refuse the same names
(:mod:`posenc_cli.manifest.names`), before anything is written. For make, ``--stamp`` updates a stamp at every
successful build (:mod:`posenc_cli.manifest.stamp`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from .. import manifest as building
from ..errors import SpecError
from ..kinds import RUN
from ..system import atomic
from ..table import Table
from ._run import advice, mapped_errors, notes, say
from .options import option
from .write import progress, shapes_text

__all__ = ["build_command"]


@click.command("build", short_help="Write every table of a manifest (posenc.toml).")
@click.argument("manifest", required=False, default=building.DEFAULT_MANIFEST, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if an output would change, 0 if all are up to date.")
@click.option(
    "--depfile",
    type=click.Path(dir_okay=False),
    help="Also write a make/Ninja depfile (every output depends on MANIFEST), for CMake's DEPFILE. Not with --check.",
)
@click.option(
    "--stamp",
    type=click.Path(dir_okay=False),
    help="Update this stamp at every successful build, and make it the depfile's target: make's rule for the "
    "outputs (docs/build.md). Not with --check or --only.",
)
@click.option(
    "--output-dir",
    "output_dir",
    type=click.Path(file_okay=False),
    help="Write the outputs relative to this directory.  [default: the manifest's]",
)
@click.option(
    "--allow-outside",
    "allow_outside",
    is_flag=True,
    help="Let the manifest write outside its folder (or --output-dir), and the depfile and the stamp go anywhere.",
)
@click.option(
    "--list-outputs",
    "list_outputs",
    is_flag=True,
    help="Write nothing, not even folders; print every file the build writes, one absolute path a line (for "
    "CMake, Meson).",
)
@click.option(
    "--make-dirs",
    "make_dirs",
    is_flag=True,
    help="Create the folders the outputs go in, when missing (only inside the output root).",
)
@click.option("--only", multiple=True, metavar="OUTPUT", help="Build only this output (as the manifest spells it).")
@click.option("--json", "as_json", is_flag=True, help="Print a report (outputs, status, shapes, sha256) on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No notes, and --check names nothing.")
@click.option("-v", "--verbose", is_flag=True, help="Say what was written and what was already up to date (stderr).")
@option(next(p for p in RUN if p.name == "force"))  # the same switch as on every table command
@click.pass_context
def build_command(
    ctx: click.Context,
    /,
    manifest: str,
    check: bool,
    depfile: str | None,
    stamp: str | None,
    output_dir: str | None,
    allow_outside: bool,
    list_outputs: bool,
    make_dirs: bool,
    only: tuple[str, ...],
    as_json: bool,
    quiet: bool,
    verbose: bool,
    force: bool,
) -> None:
    """Write every table of MANIFEST (default: posenc.toml), each exactly as its posenc command would.

    A [[table]] entry names the command (a table command: generate, rope, ...), the output (relative to the
    manifest's directory) and that command's options with underscores (seq_len = 2048, float_literal = "hex");
    [defaults] holds keys for every entry. The whole manifest is checked before anything is written; unchanged
    outputs are left untouched, so make, Ninja and CMake rebuild nothing downstream.

    \b
    Example posenc.toml:
      [defaults]
      dtype = "float32"
      [[table]]
      command = "generate"
      output = "pe.h"
      seq_len = 2048
      d_model = 512
      [[table]]
      command = "rope"
      output = "rope.npz"
      seq_len = 4096
      head_dim = 128

    \b
    Examples:
      posenc build                                   # posenc.toml in this directory
      posenc build tables.toml --check               # CI: exit 1 if a table is out of date
      posenc build posenc.toml --depfile tables.d    # add_custom_command(... DEPFILE tables.d)
      posenc build --depfile t.d --stamp t.stamp     # make: the rule's target is the stamp
      posenc build --list-outputs                    # every file it writes, one a line
    """
    if list_outputs:
        given = (("--check", check), ("--depfile", depfile), ("--stamp", stamp), ("--json", as_json))
        clash = next((flag for flag, value in given if value), None)
        if clash is not None:
            raise click.UsageError(f"--list-outputs writes nothing and prints paths: it does not take {clash}", ctx)
    if stamp is not None and only:
        raise click.UsageError("--stamp says that every output is built: it does not take --only", ctx)
    with mapped_errors(ctx), _manifest_errors(ctx), notes(quiet=quiet):
        # Read for a run that writes nothing first: no folder is made before every check below has passed.
        plan = building.load_manifest(manifest, output_dir=output_dir, allow_outside=allow_outside, check=True)
        if list_outputs:
            # A name a build tool cannot be given is refused before a build system declares it; then the files a
            # --check run reports are exactly those a build writes (a .npy's sidecar only when its table needs
            # one): the same code decides both.
            try:
                building.depfile_text(plan, manifest)
            except SpecError as exc:  # a folder of the command line: no --depfile to blame here
                raise SpecError(str(exc)) if exc.param == "depfile" else exc from None
            listed = building.build(plan, check=True, only=list(only) if only else None)
            for path in listed.paths:
                click.echo(os.path.abspath(path))
            return
        if not check:  # the depfile and the stamp can be written, and name every path: before any work
            for flag, side in (("depfile", depfile), ("stamp", stamp)):
                if side is not None and not side.strip():
                    raise SpecError(f"the {flag} must be a file name, got {side!r}", param=flag)
            if depfile is not None and stamp is not None and os.path.realpath(depfile) == os.path.realpath(stamp):
                raise SpecError(f"the depfile and the stamp are one file, {depfile!r}: name two", param="stamp")
            if depfile is not None:
                building.check_depfile(plan, depfile)
                atomic.check_writable(Path(depfile))
                building.depfile_text(plan, manifest, stamp=stamp)
            if stamp is not None:
                building.check_stamp(plan, stamp)
            building.prepare(plan, make_dirs=make_dirs)

        @contextlib.contextmanager
        def follow(entry: building.Entry, table: Table) -> Iterator[Table]:
            """Each entry's write: its progress bar, and its advice, said when the entry's files are written."""
            label = f"writing {entry.path.name}" if not check else f"checking {entry.path.name}"
            with advice(entry.plan.paths, quiet=quiet), progress(table, label=label, text=entry.plan.format.text,
                                                                 quiet=quiet) as shown:  # fmt: skip
                yield shown

        report = building.build(plan, check=check, only=list(only) if only else None, progress=follow, force=force)
        if depfile is not None and not check:
            building.write_depfile(depfile, report, manifest, stamp=stamp)
        if stamp is not None and not check:  # last: the stamp says that the whole build succeeded
            building.touch_stamp(stamp)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    if check:
        if not quiet:
            for file in report.changed:
                click.echo(f"would {'create' if file.status == 'missing' else 'rewrite'} {file.path}", err=True)
        if report.changed:
            sys.exit(1)
        return
    if verbose:
        for table in report.tables:
            shapes = shapes_text(list(table.arrays.values()))
            for file in table.files:
                what = "wrote" if file.status == "written" else "unchanged:"
                say(f"{what} {file.path} ({table.entry.plan.format.name}, {shapes}, {file.bytes:,} bytes)")


@contextlib.contextmanager
def _manifest_errors(ctx: click.Context) -> Iterator[None]:
    """A bad manifest is a usage error (exit 2) whose message already names the file, the entry and the key."""
    try:
        yield
    except SpecError as exc:
        if exc.param != "manifest":
            raise
        raise click.UsageError(str(exc), ctx) from None
