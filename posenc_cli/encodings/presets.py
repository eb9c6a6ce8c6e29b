"""Every framework's 1-D sinusoidal table: a small parameter space on the general engine, and named presets.

A table of ``d`` columns and rows ``r = 0 .. n-1`` is defined by:

``layout``
    ``interleaved``: ``[sin f0, cos f0, sin f1, cos f1, ...]``; ``sin-cos``: all sines, then all cosines;
    ``cos-sin``: all cosines, then all sines.
``freq`` (the frequencies ``f_k``, ``k = 0, 1, ...``; ``base`` is ``max_period``/``max_timescale``)
    ``paper``: ``base**(-2k/d)``; ``shift`` (``freq_shift = s``): ``base**(-k/(h - s))`` with ``h = d // 2``
    (``s = 1`` tensor2tensor/fairseq/DDPM, ``s = 0`` OpenAI diffusion: diffusers' ``downscale_freq_shift``);
    ``timescales`` (``min_timescale = m``): tensor2tensor's ``m * (base/m)**(-k/max(h - 1, 1))``, where
    ``base/m`` is the float64 quotient tensor2tensor itself computes and ``m`` *multiplies*, as tensor2tensor
    does (t2t#1923: the timescales are not ``[m, base]`` unless ``m = 1``).
``odd`` (odd ``d``)
    ``natural``: the layout continued to ``d`` columns (interleaved: the last column is a sine; sin-cos: one more
    sine than cosines, Marian's "sentinel"; cos-sin: one more cosine), frequencies from ``d`` (``paper``: ``d/2``
    in the denominator); ``zero``: the table of ``d - 1`` columns and a zero column (tensor2tensor, fairseq,
    diffusers' ``F.pad``); ``error``: odd ``d`` is refused (Whisper).
``start``, ``step``
    Row ``r`` is at position ``start + step * r`` (tensor2tensor's ``start_index``, strided or fractional
    diffusion timesteps, diffusers' ``scale`` as ``step``).
``padding_idx``
    This row is all zeros (fairseq/M2M100: row ``padding_idx``; the first real token is row ``padding_idx + 1``).
``amplitude``
    Every entry times this (exact float64).

Every entry is the exact value of this definition correctly rounded to the output type (the engine's contract:
:mod:`~posenc_cli.encodings.sinusoid`).  A preset (:data:`PRESETS`) is a named set of these values; explicit
values override it.  Frameworks that compute in float32 differ from the exact table by their own rounding
(checked against their goldens in ``tests/test_presets.py``); the ones that compute in float64 and round once
(DistilBERT/XLM, Marian/Pegasus) give the same bits.

Examples
--------
>>> spec = resolve("fairseq", d_model=5)
>>> spec.layout, spec.freq, spec.odd, spec.padding_idx
('sin-cos', 'shift', 'zero', 1)
>>> preset_rows(spec, 0, 3, "float64")[2].round(4).tolist()  # position 2: sin 2, sin 2e-4, cos 2, cos 2e-4, 0
[0.9093, 0.0002, -0.4161, 1.0, 0.0]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings.sinusoid import MAX_POSITION, check_base, count, prepare_rows, show, sinusoid_rows
from posenc_cli.errors import SpecError

__all__ = ["LAYOUTS", "ODD", "PRESETS", "Preset", "SinusoidSpec", "frequency_law", "preset_rows", "resolve"]

LAYOUTS = ("interleaved", "sin-cos", "cos-sin")
ODD = ("natural", "zero", "error")
MAX_D_MODEL = 2**20


@dataclass(frozen=True)
class SinusoidSpec:
    """A resolved point of the parameter space (see the module docstring); build it with :func:`resolve`."""

    d_model: int
    base: float = 10000.0
    layout: str = "interleaved"
    freq: str = "paper"  # "paper", "shift" or "timescales"
    freq_shift: float = 0.0  # freq == "shift"
    min_timescale: float = 1.0  # freq == "timescales"
    odd: str = "natural"
    start: float = 0.0
    step: float = 1.0
    padding_idx: int | None = None
    amplitude: float = 1.0

    def params(self) -> dict[str, int | float | str]:
        """The values that differ from the paper's table (what a file records besides seq_len, d_model, base)."""
        default = SinusoidSpec(self.d_model, self.base)
        out: dict[str, int | float | str] = {"layout": self.layout}
        for key, value in asdict(self).items():
            if key in ("d_model", "base", "layout") or value is None or value == getattr(default, key):
                continue
            if key in ("freq_shift",) and self.freq != "shift" or key == "min_timescale" and self.freq != "timescales":
                continue
            out[key] = value
        if self.freq == "shift":
            out["freq_shift"] = self.freq_shift
        return out


@dataclass(frozen=True)
class Preset:
    """A named bundle of :class:`SinusoidSpec` values and the framework functions it reproduces."""

    name: str
    values: dict[str, object]
    reproduces: str
    agreement: str
    #: Row 0 is position ``seq_len - 1`` and each row one less (Transformer-XL's ``arange(klen - 1, -1, -1)``),
    #: unless ``start`` or ``step`` is given.
    descending: bool = False


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "vaswani",
            {"layout": "interleaved", "freq": "paper", "odd": "natural"},
            "the paper; PyTorch tutorial PositionalEncoding; HF DistilBERT/XLM create_sinusoidal_embeddings; "
            "keras-hub SinePositionEncoding",
            "DistilBERT/XLM bit-identical (float64, rounded once); float32 frameworks within their rounding",
        ),
        Preset(
            "tensor2tensor",
            {"layout": "sin-cos", "freq": "timescales", "min_timescale": 1.0, "odd": "zero"},
            "tensor2tensor common_attention.get_timing_signal_1d (--min-timescale, --start = start_index)",
            "within TensorFlow's float32 rounding",
        ),
        Preset(
            "fairseq",
            {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "zero", "padding_idx": 1},
            "fairseq SinusoidalPositionalEmbedding.get_embedding; HF M2M100/Speech2Text/FSMT get_embedding "
            "(row padding_idx zero, first token at row padding_idx + 1)",
            "within torch's float32 rounding",
        ),
        Preset(
            "marian",
            {"layout": "sin-cos", "freq": "paper", "odd": "natural"},
            "HF MarianSinusoidalPositionalEmbedding.create_weight (Marian, Pegasus)",
            "bit-identical (float64, rounded once)",
        ),
        Preset(
            "whisper",
            {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "error"},
            "openai-whisper / HF Whisper sinusoids (--base = max_timescale)",
            "within torch's float32 rounding",
        ),
        Preset(
            "ddpm",
            {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "zero"},
            "DDPM get_timestep_embedding; diffusers get_timestep_embedding defaults (flip_sin_to_cos=False, "
            "downscale_freq_shift=1; --step = scale)",
            "within torch's float32 rounding",
        ),
        Preset(
            "openai-diffusion",
            {"layout": "cos-sin", "freq": "shift", "freq_shift": 0.0, "odd": "zero"},
            "improved/guided-diffusion and LDM timestep_embedding; diffusers get_timestep_embedding with "
            "flip_sin_to_cos=True, downscale_freq_shift=0 (Stable Diffusion UNets)",
            "within torch's float32 rounding",
        ),
        Preset(
            "musicgen",
            {"layout": "cos-sin", "freq": "shift", "freq_shift": 1.0, "odd": "zero"},
            "HF MusicgenSinusoidalPositionalEmbedding.get_embedding",
            "within torch's float32 rounding",
        ),
        Preset(
            "transformer-xl",
            {"layout": "sin-cos", "freq": "paper", "odd": "error"},
            "Transformer-XL mem_transformer.PositionalEmbedding and XLNet relative_positional_encoding: the "
            "relative positions klen-1 down to 0 (start = seq_len - 1, step = -1), [sin | cos]",
            "within torch's float32 rounding",
            descending=True,
        ),
    )
}


def _real(value: object, name: str) -> float:
    out = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        try:
            out = float(value)
        except OverflowError:  # an integer past every float64
            pass
    if not math.isfinite(out):
        raise SpecError(f"{name} must be a finite number, got {show(value)}", param=name)
    return out


def _choice(value: object, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise SpecError(f"{name} must be one of {', '.join(allowed)}, got {show(value)}", param=name)
    return str(value)


def resolve(
    preset: str | None = None,
    *,
    d_model: int,
    base: float | None = None,
    layout: str | None = None,
    freq_shift: float | None = None,
    min_timescale: float | None = None,
    odd: str | None = None,
    start: float | None = None,
    step: float | None = None,
    padding_idx: int | None = None,
    no_padding: bool = False,
    amplitude: float | None = None,
) -> SinusoidSpec:
    """The :class:`SinusoidSpec` of ``preset`` (default ``vaswani``) with every given value overriding it.

    ``freq_shift`` selects the ``shift`` frequencies and ``min_timescale`` the ``timescales`` form (not both);
    ``no_padding`` drops a preset's padding row.  Raises :class:`SpecError` naming the parameter.
    """
    name = "vaswani" if preset is None else preset
    if name not in PRESETS:
        raise SpecError(f"unknown preset {show(name)}; choose one of {', '.join(PRESETS)}", param="preset")
    values: dict[str, object] = dict(PRESETS[name].values)
    d = count(d_model, "d_model", 1, MAX_D_MODEL)
    if freq_shift is not None and min_timescale is not None:
        raise SpecError(
            "give --freq-shift or --min-timescale, not both: they are two frequency forms", param="freq_shift"
        )
    if freq_shift is not None:
        values.update(freq="shift", freq_shift=_real(freq_shift, "freq_shift"))
    if min_timescale is not None:
        m = _real(min_timescale, "min_timescale")
        if not 2.0**-64 <= m <= 2.0**32:
            raise SpecError(
                f"min_timescale must be in [2**-64, 2**32], got {show(min_timescale)}", param="min_timescale"
            )
        values.update(freq="timescales", min_timescale=m)
    for key, choice in (("layout", layout), ("odd", odd)):
        if choice is not None:
            values[key] = _choice(choice, key, LAYOUTS if key == "layout" else ODD)
    for key, number in (("start", start), ("step", step), ("amplitude", amplitude)):
        if number is not None:
            values[key] = _real(number, key)
    if padding_idx is not None:
        values["padding_idx"] = count(padding_idx, "padding_idx", 0, MAX_POSITION - 1)
    if no_padding:
        values["padding_idx"] = None
    spec = SinusoidSpec(d, check_base(10000.0 if base is None else base), **values)  # type: ignore[arg-type]
    if spec.amplitude == 0:
        raise SpecError("amplitude must be nonzero, got 0.0", param="amplitude")
    if d % 2 and spec.odd == "error":
        raise SpecError(
            f"d_model must be even for the {name} preset (the framework refuses odd widths), got {d}; "
            "--odd zero or --odd natural give a table anyway",
            param="d_model",
        )
    try:
        frequency_law(spec)  # checks the denominator
    except SpecError as exc:
        if freq_shift is None and min_timescale is None and exc.param == "freq_shift":  # the width is the culprit
            shift = spec.freq_shift
            least = 2 * (math.floor(shift) + 1)
            raise SpecError(
                f"d_model must be at least {least} for the {name} preset, got {d}: its frequencies are "
                f"base^(-k/(d_model//2 - {shift:g})), and d_model//2 - {shift:g} must be positive",
                param="d_model",
            ) from None
        raise
    return spec


def frequency_law(spec: SinusoidSpec) -> tuple[Fraction, float, float | None]:
    """``(denom, base, multiplier)`` of the engine for ``spec``."""
    d = spec.d_model - 1 if spec.d_model % 2 and spec.odd == "zero" else spec.d_model
    h = spec.d_model // 2
    if d == 0:  # d_model 1 with a zero column: no frequency at all, any denominator will do
        return Fraction(1), spec.base, None
    if spec.freq == "paper":
        return Fraction(d, 2), spec.base, None
    if spec.freq == "timescales":
        ratio = spec.base / spec.min_timescale  # one float64 division, as tensor2tensor does it
        if not ratio > 1:
            raise SpecError(
                f"base (max_timescale) must exceed min_timescale, got {spec.base!r} and {spec.min_timescale!r}",
                param="min_timescale",
            )
        return Fraction(max(h - 1, 1)), ratio, spec.min_timescale
    denom = Fraction(h) - Fraction(spec.freq_shift)
    if denom <= 0:
        raise SpecError(
            f"d_model // 2 - freq_shift must be positive (it divides the exponent), got {h} - {spec.freq_shift!r}; "
            "use a wider d_model (tensor2tensor's --min-timescale form guards d_model 2 and 3 with max(h - 1, 1))",
            param="freq_shift",
        )
    return denom, spec.base, None


def columns(spec: SinusoidSpec) -> list[tuple[int, str] | None]:
    """The engine's column list for ``spec``'s layout and odd rule."""
    d = spec.d_model
    zero = d % 2 == 1 and spec.odd == "zero"
    n = d - 1 if zero else d
    if spec.layout == "interleaved":
        cols: list[tuple[int, str] | None] = [(j // 2, "sin" if j % 2 == 0 else "cos") for j in range(n)]
    else:
        first, second = ("sin", "cos") if spec.layout == "sin-cos" else ("cos", "sin")
        cols = [(k, first) for k in range((n + 1) // 2)]
        cols += [(k, second) for k in range(n // 2)]
    return cols + [None] if zero else cols


def check_rows(
    spec: SinusoidSpec,
    stop_row: int,
    dtype: str = "float32",
    *,
    quant_scale: float | None = None,
    zero_point: int | None = None,
) -> None:
    """Check that rows ``0 .. stop_row - 1`` of ``spec``'s table are in the engine's domain (positions below
    ``2**32``, amplitude within the output type), without computing any: :class:`SpecError` otherwise."""
    rows_of(spec, stop_row, dtype, quant_scale=quant_scale, zero_point=zero_point)


def rows_of(
    spec: SinusoidSpec,
    stop_row: int,
    dtype: str = "float32",
    *,
    quant_scale: float | None = None,
    zero_point: int | None = None,
) -> Callable[[int, int], np.ndarray]:
    """``rows(lo, hi)``: blocks of rows ``0 .. stop_row - 1`` of ``spec``'s table, each bit-identical to
    :func:`preset_rows` of the same rows, with every parameter checked once, here (:class:`SpecError` naming the
    table's own parameter: ``seq_len``, ``step``, ``amplitude``, ``min_timescale``), and never again per block."""
    denom, base, mult = frequency_law(spec)
    cols = columns(spec)
    ks = [c[0] for c in cols if c is not None]
    mults = None if mult is None or not ks else [mult] * (max(ks) + 1)
    names = {"stop_row": "step" if spec.step != 1 else "seq_len", "scale": "amplitude", "mults": "min_timescale"}
    compute = prepare_rows(
        stop_row, cols, denom=denom, base=base, start=spec.start, step=spec.step, scale=spec.amplitude, dtype=dtype,
        quant_scale=quant_scale, zero_point=zero_point, mults=mults, names=names,
    )  # fmt: skip
    pad = spec.padding_idx
    zero = ElementType.of(dtype, scale=quant_scale, zero_point=zero_point).from_exact(Fraction(0))

    def rows(lo: int, hi: int) -> np.ndarray:
        out = compute(lo, hi)
        if pad is not None and lo <= pad < hi:
            out[pad - lo] = zero
        return out

    return rows


def preset_rows(
    spec: SinusoidSpec,
    first_row: int,
    stop_row: int,
    dtype: str = "float32",
    *,
    quant_scale: float | None = None,
    zero_point: int | None = None,
) -> np.ndarray:
    """Rows ``first_row .. stop_row - 1`` of ``spec``'s table in the output type's storage, every entry correctly
    rounded (a block is bit-identical to the same rows of a larger block)."""
    denom, base, mult = frequency_law(spec)
    cols = columns(spec)
    ks = [c[0] for c in cols if c is not None]
    mults = None if mult is None or not ks else [mult] * (max(ks) + 1)
    out = sinusoid_rows(
        first_row, stop_row, cols, denom=denom, base=base, start=spec.start, step=spec.step, scale=spec.amplitude,
        dtype=dtype, quant_scale=quant_scale, zero_point=zero_point, mults=mults,
    )  # fmt: skip
    pad = spec.padding_idx
    if pad is not None and first_row <= pad < stop_row:
        element = ElementType.of(dtype, scale=quant_scale, zero_point=zero_point)
        out[pad - first_row] = element.from_exact(Fraction(0))
    return out
