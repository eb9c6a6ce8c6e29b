"""``posenc generate``, ``presets``, ``rope``, ``alibi`` and ``sincos2d``: the commands that make tables.

Registered on :data:`posenc_cli.cli.cli` when :mod:`posenc_cli.cli` is imported; the helpers they share (output
options, ``_write``, error mapping) live there.
"""

from __future__ import annotations

from typing import Any

import click

from . import api
from ._cli_types import FLOAT, INT
from .cli import _element_options, _mapped_errors, _output_options, _write, cli
from .encodings import check_params, presets


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
@click.option("-n", "--seq-len", "seq_len", required=True, type=INT, help="Number of positions (rows).")
@click.option("-d", "--d-model", "d_model", required=True, type=INT, help="Model dimension (columns).")
@click.option("--base", type=FLOAT, default=10000.0, help="Wavelength base (max_period, max_timescale), > 1.")
@click.option(
    "-p", "--preset", type=click.Choice(list(presets.PRESETS)), help="A framework's convention (posenc presets)."
)
@click.option("--layout", type=click.Choice(presets.LAYOUTS), help="Column order.  [default: the preset's]")
@click.option("--freq-shift", "freq_shift", type=FLOAT, help="Frequencies base^(-k/(d_model//2 - S)).")
@click.option(
    "--min-timescale", "min_timescale", type=FLOAT, help="tensor2tensor's frequencies m * (base/m)^(-k/(h-1))."
)
@click.option("--odd", type=click.Choice(presets.ODD), help="Odd d_model: natural, zero column or error.")
@click.option("--start", type=FLOAT, help="Position of row 0 (fractional allowed).  [default: 0]")
@click.option("--step", type=FLOAT, help="Position step between rows (fractional allowed).  [default: 1]")
@click.option("--padding-idx", "padding_idx", type=_PaddingIdx(), help="Zero this row (fairseq); none: no zero row.")
@click.option("--amplitude", type=FLOAT, help="Multiply every value by this.  [default: 1]")
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
@click.option("-H", "--heads", required=True, type=INT, help="Number of attention heads.")
@click.option("-n", "--seq-len", "seq_len", type=INT, help="Key positions of the bias matrix (omit for slopes only).")
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
            if not str(value).isascii():
                raise ValueError("not ASCII")
            return tuple(float(v) for v in str(value).split(","))
        except ValueError:
            self.fail(f"expected comma-separated numbers, e.g. 1.0,1.5,2.0, got {value!r}", param, ctx)


#: posenc rope's scaling options, in HF's rope_parameters names (the API's keyword arguments).
_ROPE_SCALING = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip


@cli.command(context_settings={"show_default": True}, short_help="Write RoPE cos/sin caches and inv_freq.")
@click.option("-n", "--seq-len", "seq_len", required=True, type=INT, help="Positions (rows) of the caches.")
@click.option("--head-dim", "head_dim", required=True, type=INT, help="Rotary dimension per head (even).")
@click.option("--theta", type=FLOAT, default=10000.0, help="rope_theta, the wavelength base.")
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
@click.option("--factor", type=FLOAT, help="Scaling factor (linear, dynamic, yarn, llama3, longrope).")
@click.option("--original-max-positions", "original_max_positions", type=INT, help="Pre-training context length.")
@click.option("--max-positions", "max_positions", type=INT, help="max_position_embeddings (dynamic, yarn, longrope).")
@click.option("--low-freq-factor", "low_freq_factor", type=FLOAT, help="llama3.  [default: 1]")
@click.option("--high-freq-factor", "high_freq_factor", type=FLOAT, help="llama3.  [default: 4]")
@click.option("--beta-fast", "beta_fast", type=FLOAT, help="yarn.  [default: 32]")
@click.option("--beta-slow", "beta_slow", type=FLOAT, help="yarn.  [default: 1]")
@click.option("--truncate/--no-truncate", default=None, help="yarn: floor/ceil the correction range.  [default: on]")
@click.option("--mscale", type=FLOAT, help="yarn: DeepSeek's mscale.")
@click.option("--mscale-all-dim", "mscale_all_dim", type=FLOAT, help="yarn: DeepSeek's mscale_all_dim.")
@click.option("--attention-factor", "attention_factor", type=FLOAT, help="yarn/longrope: the scaling, given.")
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
@click.option("-d", "--d-model", "d_model", required=True, type=INT, help="Embedding width, a multiple of 4.")
@click.option("--cls-token", "cls_token", is_flag=True, help="Prepend MAE's all-zero class-token row.")
@click.option("--base", type=FLOAT, default=10000.0, help="Wavelength base, a finite number > 1.")
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
