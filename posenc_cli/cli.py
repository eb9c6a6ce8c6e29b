"""The ``posenc`` command: parse arguments, call :mod:`posenc_cli.api`, report, map errors to exit codes.

This is the only module that uses click and rich, and the only place errors become exit codes:

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

from . import _atomic, api
from ._version import __version__
from .encodings import check_params, presets
from .encodings.dtypes import DTYPES
from .errors import PosencError, PosencWarning, SpecError
from .formats import FORMATS, WriteOptions
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
        except OSError as exc:  # one the library did not map: still one line, naming the file
            _fail(f"{exc.filename!r}: {exc.strerror}" if exc.filename and exc.strerror else str(exc), 1)
        except MemoryError:
            _fail("out of memory: the table does not fit; use a smaller --seq-len or --d-model", 1)
        except Exception as exc:  # a bug: still one line, with the way to see the traceback
            if os.environ.get("POSENC_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with POSENC_DEBUG=1 for details", 1)


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"Error: {' '.join(message.split())}", err=True)
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
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)


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
        "--zero-point", "zero_point", type=int, help="int8 only: the integer that stands for 0.0.  [default: 0]"
    )(f)
    f = click.option("--scale", type=float, help="int8 only: the real value of one quantisation step.")(f)
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
        click.option("--align", type=int, help="C: align the table to N bytes (a power of two)."),
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


_C_OPTIONS = ("lang", "namespace", "align", "progmem", "float_literal", "half_type")


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


class _PaddingIdx(click.ParamType):  # type: ignore[type-arg]
    """A row index, or ``none`` (drop a preset's padding row)."""

    name = "ROW|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if isinstance(value, int) or value == "none":
            return value  # type: ignore[no-any-return]
        text = str(value).strip()
        if text.isascii() and text.isdigit():
            return int(text)
        self.fail(f"expected a row index (a non-negative integer) or none, got {value!r}", param, ctx)


@cli.command(context_settings={"show_default": True}, short_help="Write a 1-D sinusoidal table (any framework's).")
@click.option("-n", "--seq-len", "seq_len", required=True, type=int, help="Number of positions (rows).")
@click.option("-d", "--d-model", "d_model", required=True, type=int, help="Model dimension (columns).")
@click.option("--base", type=float, default=10000.0, help="Wavelength base (max_period, max_timescale), > 1.")
@click.option(
    "-p", "--preset", type=click.Choice(list(presets.PRESETS)), help="A framework's convention (posenc presets)."
)
@click.option("--layout", type=click.Choice(presets.LAYOUTS), help="Column order.  [default: the preset's]")
@click.option("--freq-shift", "freq_shift", type=float, help="Frequencies base^(-k/(d_model//2 - S)).")
@click.option(
    "--min-timescale", "min_timescale", type=float, help="tensor2tensor's frequencies m * (base/m)^(-k/(h-1))."
)
@click.option("--odd", type=click.Choice(presets.ODD), help="Odd d_model: natural, zero column or error.")
@click.option("--start", type=float, help="Position of row 0 (fractional allowed).  [default: 0]")
@click.option("--step", type=float, help="Position step between rows (fractional allowed).  [default: 1]")
@click.option("--padding-idx", "padding_idx", type=_PaddingIdx(), help="Zero this row (fairseq); none: no zero row.")
@click.option("--amplitude", type=float, help="Multiply every value by this.  [default: 1]")
@_element_options
@_output_options
@click.pass_context
def generate(
    ctx: click.Context,
    /,
    seq_len: int,
    d_model: int,
    base: float,
    dtype: str,
    scale: float | None,
    zero_point: int | None,
    padding_idx: int | str | None,
    **_: Any,
) -> None:
    """Write a 1-D sinusoidal table: the paper's, or a framework's with --preset.

    The paper (preset vaswani): PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos /
    base^(2i/d_model)), for pos = 0 .. seq_len-1; an odd d_model ends with a sine column. Other frameworks
    differ in layout, frequencies, positions, padding row and odd widths: --preset picks one (list them with
    posenc presets) and the other options override it. Every value is the exact value correctly rounded.

    \b
    Examples:
      posenc generate -n 2048 -d 512 -o pe.h             # C header, static const float pe[2048][512]
      posenc generate -n 2048 -d 512 -o pe.c --name pe   # pe.c (definition) + pe.h (extern declaration)
      posenc generate -n 1026 -d 1024 -p fairseq -o m2m100_pos.npy
      posenc generate -n 1000 -d 320 -p openai-diffusion -o timesteps.h
    """
    p = ctx.params
    with _mapped_errors(ctx):
        check_params(seq_len, d_model, base, dtype, scale=scale, zero_point=zero_point)
        shape = {key: p[key] for key in ("preset", "layout", "freq_shift", "min_timescale", "odd", "start", "step")}
        shape.update(
            amplitude=p["amplitude"],
            padding_idx=None if padding_idx == "none" else padding_idx,
            no_padding=padding_idx == "none",
        )
        presets.resolve(d_model=d_model, base=base, **shape)  # checks before any work
        _write(
            ctx,
            lambda: api.generate(
                seq_len,
                d_model,
                base=base,
                dtype=dtype,
                scale=scale,
                zero_point=zero_point,
                lazy=True,  # streams
                **shape,
            ),
        )


@cli.command("presets", short_help="List the framework presets of posenc generate.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON on stdout.")
def presets_command(as_json: bool) -> None:
    """List every --preset of posenc generate: its parameters and the framework functions it reproduces."""
    rows = []
    for preset in presets.PRESETS.values():
        spec = presets.resolve(preset.name, d_model=8)
        values = {k: v for k, v in spec.params().items()}
        values["odd"] = spec.odd
        values["freq"] = spec.freq
        rows.append((preset, values))
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


@cli.command(context_settings={"show_default": True}, short_help="Write ALiBi slopes and bias.")
@click.option("-H", "--heads", required=True, type=int, help="Number of attention heads.")
@click.option("-n", "--seq-len", "seq_len", type=int, help="Key positions of the bias matrix (omit for slopes only).")
@_element_options
@_output_options
@click.pass_context
def alibi(
    ctx: click.Context,
    /,
    heads: int,
    seq_len: int | None,
    dtype: str,
    scale: float | None,
    zero_point: int | None,
    **_: Any,
) -> None:
    """Write ALiBi slopes (Press et al.) and, with --seq-len, the bias matrix slope[h] * j.

    Slopes 2^(-8(h+1)/p) for the largest power of two p <= heads, then every other slope of 2p heads (HF BLOOM
    build_alibi_tensor). Arrays: slopes (heads), bias (heads, seq_len); every value correctly rounded.

    \b
    Examples:
      posenc alibi -H 12 -o slopes.h
      posenc alibi -H 40 -n 2048 -o alibi.npz
      posenc alibi -H 40 -n 2048 --part bias -o bias.npy
    """
    with _mapped_errors(ctx):
        _write(ctx, lambda: api.alibi(heads, seq_len, dtype=dtype, scale=scale, zero_point=zero_point))


class _Numbers(click.ParamType):  # type: ignore[type-arg]
    """Comma-separated numbers (LongRoPE's per-frequency factors)."""

    name = "X,Y,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[float, ...]:
        if isinstance(value, tuple):
            return value
        try:
            return tuple(float(v) for v in str(value).split(","))
        except ValueError:
            self.fail(f"expected comma-separated numbers, e.g. 1.0,1.5,2.0, got {value!r}", param, ctx)


#: posenc rope's scaling options, in HF's rope_parameters names (the API's keyword arguments).
_ROPE_SCALING = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip


@cli.command(context_settings={"show_default": True}, short_help="Write RoPE cos/sin caches and inv_freq.")
@click.option("-n", "--seq-len", "seq_len", required=True, type=int, help="Positions (rows) of the caches.")
@click.option("--head-dim", "head_dim", required=True, type=int, help="Rotary dimension per head (even).")
@click.option("--theta", type=float, default=10000.0, help="rope_theta, the wavelength base.")
@click.option(
    "--layout",
    type=click.Choice(("half", "interleaved")),
    default="half",
    help="half: HF/GPT-NeoX rotate_half; interleaved: GPT-J, llama.cpp normal mode.",
)
@click.option(
    "--scaling",
    type=click.Choice(("none", "linear", "dynamic", "yarn", "llama3", "longrope")),
    default="none",
    help="HF rope_type.",
)
@click.option("--factor", type=float, help="Scaling factor (linear, dynamic, yarn, llama3, longrope).")
@click.option("--original-max-positions", "original_max_positions", type=int, help="Pre-training context length.")
@click.option("--max-positions", "max_positions", type=int, help="max_position_embeddings (dynamic, yarn, longrope).")
@click.option("--low-freq-factor", "low_freq_factor", type=float, help="llama3.  [default: 1]")
@click.option("--high-freq-factor", "high_freq_factor", type=float, help="llama3.  [default: 4]")
@click.option("--beta-fast", "beta_fast", type=float, help="yarn.  [default: 32]")
@click.option("--beta-slow", "beta_slow", type=float, help="yarn.  [default: 1]")
@click.option("--truncate/--no-truncate", default=None, help="yarn: floor/ceil the correction range.  [default: on]")
@click.option("--mscale", type=float, help="yarn: DeepSeek's mscale.")
@click.option("--mscale-all-dim", "mscale_all_dim", type=float, help="yarn: DeepSeek's mscale_all_dim.")
@click.option("--attention-factor", "attention_factor", type=float, help="yarn/longrope: the scaling, given.")
@click.option("--short-factor", "short_factor", type=_Numbers(), help="longrope: head_dim/2 factors.")
@click.option("--long-factor", "long_factor", type=_Numbers(), help="longrope: head_dim/2 factors.")
@click.option(
    "--no-attention-scaling",
    "no_attention_scaling",
    is_flag=True,
    help="Leave the attention scaling HF folds into cos/sin (yarn, longrope) out of them.",
)
@_element_options
@_output_options
@click.pass_context
def rope(
    ctx: click.Context,
    /,
    seq_len: int,
    head_dim: int,
    theta: float,
    layout: str,
    scaling: str,
    no_attention_scaling: bool,
    dtype: str,
    scale: float | None,
    zero_point: int | None,
    **_: Any,
) -> None:
    """Write RoPE caches: cos and sin (seq_len, head_dim) and inv_freq (head_dim/2), as HF transformers'
    LlamaRotaryEmbedding and ROPE_INIT_FUNCTIONS compute them.

    cos[p, j] = a * cos(p * inv_freq[k]), sin[p, j] = a * sin(p * inv_freq[k]) with k = j mod head_dim/2 (half)
    or j // 2 (interleaved), inv_freq[k] = theta^(-2k/head_dim) scaled by the --scaling mode, and a the mode's
    attention scaling (1 except yarn and longrope; --no-attention-scaling leaves it out). dynamic is evaluated at
    --seq-len. Every value is the exact value correctly rounded.

    \b
    Examples:
      posenc rope -n 4096 --head-dim 128 -o rope.npz
      posenc rope -n 8192 --head-dim 128 --theta 500000 --scaling llama3 --factor 8 \\
          --original-max-positions 8192 -o llama31_rope.h
      posenc rope -n 4096 --head-dim 64 --scaling yarn --factor 4 --original-max-positions 4096 --part cos -o cos.npy
    """
    p = ctx.params
    given = {key: p[key] for key in _ROPE_SCALING if p[key] is not None}
    with _mapped_errors(ctx):
        check_params(1, 1, 10000.0, dtype, scale=scale, zero_point=zero_point)
        _write(
            ctx,
            lambda: api.rope(
                seq_len, head_dim, theta=theta, layout=layout, scaling=scaling,
                attention_scaling=not no_attention_scaling, dtype=dtype, scale=scale, zero_point=zero_point,
                lazy=True, **given,
            ),
        )  # fmt: skip


class _Grid(click.ParamType):  # type: ignore[type-arg]
    """``H`` or ``HxW``."""

    name = "H[xW]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        parts = str(value).lower().split("x")
        if len(parts) in (1, 2) and all(p.strip().isascii() and p.strip().isdigit() for p in parts):
            sides = [int(p) for p in parts]
            return (sides[0], sides[-1])
        self.fail(f"expected H or HxW (positive integers, e.g. 14 or 16x24), got {value!r}", param, ctx)


@cli.command(context_settings={"show_default": True}, short_help="Write a 2-D sincos (MAE) table.")
@click.option("-g", "--grid", required=True, type=_Grid(), help="Patches per side: H (square) or HxW.")
@click.option("-d", "--d-model", "d_model", required=True, type=int, help="Embedding width, a multiple of 4.")
@click.option("--cls-token", "cls_token", is_flag=True, help="Prepend MAE's all-zero class-token row.")
@click.option("--base", type=float, default=10000.0, help="Wavelength base, a finite number > 1.")
@_element_options
@_output_options
@click.pass_context
def sincos2d(
    ctx: click.Context,
    /,
    grid: tuple[int, int],
    d_model: int,
    cls_token: bool,
    base: float,
    dtype: str,
    scale: float | None,
    zero_point: int | None,
    **_: Any,
) -> None:
    """Write MAE's 2-D sincos position embedding (get_2d_sincos_pos_embed).

    Rows are the grid's patches in row-major order, after a zero row with --cls-token; columns are
    [sin x | cos x | sin y | cos y], each d_model/4 wide, frequencies base^(-k/(d_model/4)). Every value is the
    exact value correctly rounded.

    \b
    Examples:
      posenc sincos2d -g 14 -d 768 --cls-token -o vit_pos.npy      # ViT-B/16 at 224 px, MAE
      posenc sincos2d -g 16x24 -d 256 -o pos2d.h
    """
    with _mapped_errors(ctx):
        _write(
            ctx,
            lambda: api.sincos2d(
                grid[0],
                grid[1],
                d_model,
                cls_token=cls_token,
                base=base,
                dtype=dtype,
                scale=scale,
                zero_point=zero_point,
            ),
        )


@cli.command(context_settings={"show_default": True}, short_help="Write any table posenc reads in another format.")
@click.argument("input_", metavar="IN", type=click.Path(dir_okay=False))
@click.argument("output_arg", metavar="OUT", required=False)
@click.option("--key", help="The array to take from a file that holds several (an .npz or .safetensors tensor).")
@click.option("--dtype", type=click.Choice(DTYPES), help="Re-encode the values.  [default: as stored]")
@click.option("--scale", type=float, help="int8 only: the real value of one quantisation step.")
@click.option("--zero-point", "zero_point", type=int, help="int8 only: the integer that stands for 0.0.  [default: 0]")
@(lambda f: _output_options(f, required=False))
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
        _write(ctx, lambda: api.convert(api.load(input_), dtype=dtype, scale=scale, zero_point=zero_point, key=key))


@cli.command(short_help="Show what a table file holds.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON on stdout.")
@click.pass_context
def inspect(ctx: click.Context, /, file: str, as_json: bool) -> None:
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
        info = facts.describe(api.load(file))
    if as_json:
        import json

        click.echo(json.dumps(info, indent=2, sort_keys=True, allow_nan=False))
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console(highlight=False, soft_wrap=False)
    params = ", ".join(f"{k}={v}" for k, v in info["params"].items()) or "none recorded"
    console.print(f"{file}: {info['kind']} table; parameters: {params}", markup=False, soft_wrap=True)
    out = RichTable(show_header=True)
    for column in ("array", "shape", "dtype", "min", "max", "bytes"):
        out.add_column(column, overflow="fold", justify="right" if column in ("min", "max", "bytes") else "left")
    for key, a in info["arrays"].items():
        low, high = (f"{a[k]:.9g}" if a[k] is not None else "-" for k in ("min", "max"))
        shape = " x ".join(map(str, a["shape"]))
        out.add_row(key, shape, a["dtype"], low, high, f"{a['nbytes']:,}")
    console.print(out)
    for key, a in info["arrays"].items():  # a digest is never folded: it is meant to be copied
        console.print(f"sha256 {a['sha256']}  {key}", markup=False, soft_wrap=True)


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
@click.pass_context
def verify(ctx: click.Context, /, file: str, settings: tuple[str, ...], kind: str | None, as_json: bool) -> None:
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
        table = api.load(file)
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
        reference = facts.regenerate(what, params)
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
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        for m in result.mismatches:
            where = ", ".join(map(str, m.index))
            click.echo(f"{m.array}[{where}]: file {m.stored_value!r}, parameters give {m.expected_value!r}")
        for problem in result.problems:
            click.echo(problem)
    if not result.ok:
        what_failed = (
            f"{result.mismatched:,} of {result.compared:,} values differ"
            if result.mismatched
            else "; ".join(result.problems)
        )
        _fail(f"{file} does not hold the table its parameters give: {what_failed}", 1)


def _source_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """A table to look at: a FILE posenc can read, or the parameters of a 1-D sinusoidal table."""
    options = [
        click.argument("file", required=False, type=click.Path(dir_okay=False)),
        click.option("-n", "--seq-len", "seq_len", type=int, help="Without FILE: positions of a generated table."),
        click.option("-d", "--d-model", "d_model", type=int, help="Without FILE: its model dimension."),
        click.option("-p", "--preset", type=click.Choice(list(presets.PRESETS)), help="Without FILE: its preset."),
        click.option("--base", type=float, help="Without FILE: its base.  [default: 10000]"),
        click.option("--part", help="Which array of a table that holds several (cos, sin, bias, ...)."),
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
        return api.load(p["file"])
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
@click.option("--dpi", type=click.IntRange(20, 600), default=100, show_default=True, help="Pixels per inch (8x6 in).")
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
@click.option("--width", type=click.IntRange(20, 1000), help="Columns of text.  [default: 80]")
@click.option("--height", type=click.IntRange(3, 1000), help="Lines of text.  [default: 24]")
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
        if param.name in ("verbose", "quiet", "output", "check", "as_json") or value is None:
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


from .cli_build import build_command  # noqa: E402  (imports cli's helpers: registered last)

cli.add_command(build_command)
