"""RoPE caches as HF transformers defines them: ``cos``, ``sin`` and ``inv_freq``, every value correctly rounded.

The model (``LlamaRotaryEmbedding`` and ``ROPE_INIT_FUNCTIONS`` in ``modeling_rope_utils``, transformers 5)::

    inv_freq[k] = m_k * theta**(-2k / head_dim)                  k = 0 .. head_dim/2 - 1
    cos[p, j]   = attention_scaling * cos(p * inv_freq[k(j)])    p = 0 .. seq_len - 1
    sin[p, j]   = attention_scaling * sin(p * inv_freq[k(j)])

``k(j) = j mod head_dim/2`` for the ``half`` layout (HF/GPT-NeoX ``rotate_half``: ``cat(freqs, freqs)``) and
``j // 2`` for ``interleaved`` (GPT-J, llama.cpp normal mode: each frequency twice side by side); ``half-width``
is each frequency once, ``k(j) = j`` for ``j < head_dim/2``: the ``(seq, head_dim/2)`` caches of the ONNX
``RotaryEmbedding`` op, ONNX Runtime's ``RotaryEmbedding``/``GroupQueryAttention`` and TensorRT's rotary layer.
The scaling modes give the multiplier ``m_k``, the base and ``attention_scaling`` (1 unless said otherwise):

``none``
    ``m_k = 1`` (HF's ``compute_default_rope_parameters``).
``linear``
    ``m_k = 1 / factor`` (position interpolation).
``dynamic``
    NTK: the base becomes ``theta * (factor * L / max_positions - (factor - 1)) ** (dim / (dim - 2))`` with
    ``L = max(seq_len, max_positions)``: the float64 HF computes (basic operations in its order, the power
    correctly rounded), evaluated at the requested ``seq_len``.
``yarn``
    ``low``, ``high`` = HF's ``find_correction_range(beta_fast, beta_slow, dim, theta, original_max_positions,
    truncate)`` in float64 (``floor``/``ceil`` when ``truncate``, clamped to ``[0, dim - 1]``; ``high += 0.001`` when
    equal); ``ramp_k = clamp((k - low) / (high - low), 0, 1)`` exactly; ``m_k = ramp_k / factor + (1 - ramp_k)``.
    ``attention_scaling``: ``attention_factor`` if given, else ``get_mscale(factor, mscale) /
    get_mscale(factor, mscale_all_dim)`` when both are given, else ``0.1 * ln(factor) + 1`` (1 for factor <= 1).
``llama3``
    With ``wavelen_k = 2 pi / f_k`` (``f_k`` the unscaled frequency): ``m_k = 1`` where ``wavelen_k <
    original_max_positions / high_freq_factor``, ``1 / factor`` where ``wavelen_k > original_max_positions /
    low_freq_factor``, else ``(1 - s) / factor + s`` with ``s = (original_max_positions / wavelen_k -
    low_freq_factor) / (high_freq_factor - low_freq_factor)``; this ``s`` (a transcendental number) is taken to
    80 significant digits, and that rational is the multiplier.
``proportional`` (Gemma 4)
    ``m_k = 1 / factor`` (default 1) for the first ``angles = rotary_dim / 2`` frequencies, still over ``head_dim``
    (``theta**(-2k / head_dim)``), and frequency 0 for the rest: the caches stay ``head_dim`` wide, with cos 1 and sin
    0 in the dimensions not rotated (HF's ``_compute_proportional_rope_parameters``).
``longrope``
    ``m_k = 1 / long_factor[k]`` when ``seq_len > original_max_positions``, else ``1 / short_factor[k]``;
    ``attention_scaling``: ``attention_factor`` if given, else ``sqrt(1 + ln(factor) / ln(original_max_positions))``
    (1 for ``factor <= 1``), ``factor`` defaulting to ``max_positions / original_max_positions``.

Every float64 step above that HF takes with ``math.log``/``**`` is evaluated correctly rounded here (HF's libm
agrees with it to the last bit in practice; posenc's bits do not depend on a platform's libm).  HF then computes
``inv_freq`` and the angles in float32: its tables differ from these exact ones by its own float32 error (checked
against its goldens in ``tests/test_rope.py``), and for llama3 a frequency within float32 error of a band edge may
fall in the other band in HF.

Examples
--------
>>> spec = resolve(seq_len=4, head_dim=4, scaling="linear", factor=4.0)
>>> inv_freq(spec, "float64").tolist()
[0.25, 0.0025]
>>> cache_rows(spec, "cos", 1, 2, "float64").round(6).tolist()  # cos(0.25), cos(0.0025), repeated (half layout)
[[0.968912, 0.999997, 0.968912, 0.999997]]
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings._exact import pi_decimal
from posenc_cli.encodings.names import ROPE_LAYOUTS, ROPE_SCALINGS
from posenc_cli.encodings.sinusoid import MAX_POSITION, check_base, count, prepare_rows, show, sinusoid_rows
from posenc_cli.errors import SpecError

__all__ = [
    "LAYOUTS", "SCALINGS", "RopeSpec", "cache_rows", "columns", "frequencies", "inv_freq", "resolve", "width"
]  # fmt: skip

LAYOUTS = ROPE_LAYOUTS
SCALINGS = ROPE_SCALINGS
MAX_HEAD_DIM = 2**16

#: Which optional parameters each scaling mode reads (others given with it are refused: they would be ignored).
USES: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "linear": frozenset({"factor"}),
    "dynamic": frozenset({"factor", "max_positions"}),
    "yarn": frozenset(
        {
            "factor",
            "original_max_positions",
            "max_positions",
            "beta_fast",
            "beta_slow",
            "truncate",
            "mscale",
            "mscale_all_dim",
            "attention_factor",
        }
    ),  # fmt: skip
    "llama3": frozenset({"factor", "original_max_positions", "low_freq_factor", "high_freq_factor"}),
    "longrope": frozenset(
        {"factor", "original_max_positions", "max_positions", "short_factor", "long_factor", "attention_factor"}
    ),
    "proportional": frozenset({"factor"}),
}
#: Parameters a mode cannot do without.
NEEDS: dict[str, tuple[str, ...]] = {
    "linear": ("factor",),
    "dynamic": ("factor", "max_positions"),
    "yarn": ("original_max_positions",),
    "llama3": ("factor", "original_max_positions"),
    "longrope": ("original_max_positions", "short_factor", "long_factor"),
}


@dataclass(frozen=True)
class RopeSpec:
    """A resolved RoPE cache: the HF parameters and what they give (``base``, ``mults``, ``attention_scaling``)."""

    seq_len: int
    head_dim: int
    theta: float
    layout: str
    scaling: str
    base: float  # theta, or dynamic's rescaled base
    mults: tuple[Fraction, ...] | None
    attention_scaling: float
    fold_scaling: bool = True
    given: dict[str, object] = field(default_factory=dict, compare=False)
    #: proportional: the frequencies rotated (``k < angles``); the others are 0 (cos 1, sin 0). ``None``: all.
    angles: int | None = None
    #: yarn: the correction range ``(low, high)`` (truncated and clamped, before the ``+ 0.001`` of an empty one)
    #: and the factor used (given, or ``max_positions / original_max_positions``): framework arithmetic's inputs.
    yarn_range: tuple[float, float] | None = field(default=None, compare=False)
    yarn_factor: float | None = field(default=None, compare=False)
    #: longrope: the factor list taken (short or long).
    ext_factors: tuple[float, ...] | None = field(default=None, compare=False)

    @property
    def amplitude(self) -> float:
        """What multiplies cos and sin: ``attention_scaling``, or 1 when it is left out."""
        return self.attention_scaling if self.fold_scaling else 1.0

    def params(self) -> dict[str, int | float | str | bool]:
        out: dict[str, int | float | str | bool] = {
            "seq_len": self.seq_len,
            "head_dim": self.head_dim,
            "theta": self.theta,
            "layout": self.layout,
            "scaling": self.scaling,
            "attention_scaling": self.attention_scaling,
            "attention_scaling_folded": self.fold_scaling,
        }
        for key, value in sorted(self.given.items()):
            out[key] = ",".join(repr(float(v)) for v in value) if isinstance(value, tuple) else value  # type: ignore[assignment]
        if self.scaling == "dynamic":
            out["dynamic_base"] = self.base
        return out


# ---------------------------------------------------------------------------------------- correctly rounded math
def _ln(x: float | Fraction, digits: int = 60) -> Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        q = Fraction(x)
        return (Decimal(q.numerator) / Decimal(q.denominator)).ln()


def _f64(value: Decimal) -> float:
    """The float64 nearest to a 60-digit ``value`` (60 digits decide the rounding of every HF constant here)."""
    return float(value)


def _pow(x: float, y: float) -> float:
    """``x ** y`` correctly rounded to float64 (``x > 0``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return _f64((Decimal(y) * _ln(x)).exp())


def _real(value: object, name: str, *, positive: bool = True, minimum: float | None = None) -> float:
    out = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        try:
            out = float(value)
        except OverflowError:  # an integer past every float64
            pass
    if not math.isfinite(out) or (positive and out <= 0) or (minimum is not None and out < minimum):
        what = f", at least {minimum:g}" if minimum is not None else ", positive" if positive else ""
        raise SpecError(f"{name} must be a finite number{what}, got {show(value)}", param=name)
    return out


def _factors(value: object, name: str, h: int) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != h:
        got = f"{len(value)} values" if isinstance(value, Sequence) and not isinstance(value, str) else show(value)
        raise SpecError(f"{name} must be head_dim/2 = {h} numbers, got {got}", param=name)
    out = tuple(_real(v, name) for v in value)
    if not all(2.0**-32 <= v <= 2.0**64 for v in out):
        raise SpecError(f"{name} values must be in [2**-32, 2**64], got {min(out)!r} .. {max(out)!r}", param=name)
    return out


def _num(p: dict[str, object], key: str, default: float | None = None) -> float:
    """A checked number of ``p`` (validated by :func:`resolve`), or ``default``."""
    value = p.get(key, default)
    assert isinstance(value, (int, float)), key
    return float(value)


def _opt(p: dict[str, object], key: str) -> float | None:
    return _num(p, key) if key in p else None


# ------------------------------------------------------------------------------------------------- resolution
def resolve(
    *,
    seq_len: int,
    head_dim: int,
    theta: float = 10000.0,
    layout: str = "half",
    scaling: str = "none",
    fold_scaling: bool = True,
    factor: float | None = None,
    original_max_positions: int | None = None,
    max_positions: int | None = None,
    low_freq_factor: float | None = None,
    high_freq_factor: float | None = None,
    beta_fast: float | None = None,
    beta_slow: float | None = None,
    truncate: bool | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
    short_factor: Sequence[float] | None = None,
    long_factor: Sequence[float] | None = None,
    longrope_cache: str | None = None,
    angles: int | None = None,
) -> RopeSpec:
    """Check the parameters of a RoPE cache (names as HF's ``rope_parameters``) and work out what they give.

    ``longrope_cache`` (``"short"`` or ``"long"``) takes that factor list whatever ``seq_len`` is: the two caches a
    runtime bakes (ONNX Runtime GenAI's ``cos_cache_short``/``cos_cache_long``); by default HF's rule picks one.

    Raises :class:`SpecError` naming the parameter: an unknown ``layout``/``scaling``, a parameter the mode does
    not read (it would silently do nothing), a missing one, or a value outside its domain.
    """
    seq_len = count(seq_len, "seq_len", 1, MAX_POSITION)
    head_dim = count(head_dim, "head_dim", 2, MAX_HEAD_DIM)
    if head_dim % 2:
        raise SpecError(f"head_dim must be even (RoPE rotates pairs), got {head_dim}", param="head_dim")
    theta = check_base(theta, "theta")
    if layout not in LAYOUTS:
        raise SpecError(f"layout must be one of {', '.join(LAYOUTS)}, got {show(layout)}", param="layout")
    if scaling not in SCALINGS:
        raise SpecError(f"scaling must be one of {', '.join(SCALINGS)}, got {show(scaling)}", param="scaling")
    raw = {
        "factor": factor, "original_max_positions": original_max_positions, "max_positions": max_positions,
        "low_freq_factor": low_freq_factor, "high_freq_factor": high_freq_factor, "beta_fast": beta_fast,
        "beta_slow": beta_slow, "truncate": truncate, "mscale": mscale, "mscale_all_dim": mscale_all_dim,
        "attention_factor": attention_factor, "short_factor": short_factor, "long_factor": long_factor,
    }  # fmt: skip
    given = {key: value for key, value in raw.items() if value is not None}
    for key in given:
        if key not in USES[scaling]:
            modes = [m for m in SCALINGS if key in USES[m]]
            raise SpecError(f"{key} applies to scaling {' or '.join(modes)}, not {scaling}", param=key)
    for key in NEEDS.get(scaling, ()):
        if key not in given and not (key == "factor" and scaling in ("yarn", "longrope")):
            raise SpecError(f"scaling {scaling} needs {key}", param=key)
    h = head_dim // 2
    clean: dict[str, object] = {}
    for key in ("original_max_positions", "max_positions"):
        if key in given:
            clean[key] = count(given[key], key, 1, MAX_POSITION)
    for key in ("factor", "low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow", "attention_factor"):
        if key in given:
            clean[key] = _real(given[key], key)
    for key in ("mscale", "mscale_all_dim"):
        if key in given:
            clean[key] = _real(given[key], key, positive=False)
    if "truncate" in given:
        clean["truncate"] = bool(given["truncate"])
    for key in ("short_factor", "long_factor"):
        if key in given:
            clean[key] = _factors(given[key], key, h)
    base, mults, attention = theta, None, 1.0
    extra: dict[str, object] = {}
    f = _opt(clean, "factor")
    if scaling in ("linear", "dynamic", "llama3", "yarn") and f is not None and f < 1:
        raise SpecError(f"factor must be at least 1 for {scaling} scaling, got {f!r}", param="factor")
    if scaling == "linear":
        mults = (1 / Fraction(_num(clean, "factor")),) * h
    elif scaling == "dynamic":
        base = _dynamic_base(theta, _num(clean, "factor"), seq_len, int(_num(clean, "max_positions")), head_dim)
    elif scaling == "yarn":
        mults, attention, extra["yarn_range"], extra["yarn_factor"] = _yarn(theta, head_dim, clean)
    elif scaling == "llama3":
        mults = _llama3(theta, head_dim, clean)
    elif scaling == "longrope":
        mults, attention, extra["ext_factors"] = _longrope(seq_len, clean, longrope_cache)
    elif scaling == "proportional":
        f = 1.0 if f is None else f
        mults = (1 / Fraction(f),) * h
    if angles is not None and (scaling != "proportional" or not 0 <= angles <= h):
        raise SpecError(f"angles applies to proportional scaling, from 0 to head_dim/2 = {h}", param="rotary_dim")
    if mults is not None and all(m == 1 for m in mults):
        mults = None
    return RopeSpec(
        seq_len,
        head_dim,
        theta,
        layout,
        scaling,
        base,
        mults,
        attention,
        bool(fold_scaling),
        clean,
        angles,
        **extra,  # type: ignore[arg-type]
    )


def _dynamic_base(theta: float, factor: float, seq_len: int, max_positions: int, dim: int) -> float:
    if dim == 2:
        raise SpecError("dynamic scaling needs head_dim > 2 (its exponent is dim / (dim - 2))", param="head_dim")
    length = max(seq_len, max_positions)
    ratio = (factor * length / max_positions) - (factor - 1)  # float64, HF's order
    base = theta * _pow(ratio, dim / (dim - 2)) if math.isfinite(ratio) else math.inf
    if not math.isfinite(base):  # the float64 HF computes overflows: there is no such table
        raise SpecError(
            f"factor {show(factor)} rescales theta {show(theta)} past the largest float64 at seq_len {seq_len} "
            f"(dynamic's base is theta * (factor * seq_len / max_positions - (factor - 1)) ** (dim / (dim - 2)))",
            param="factor",
        )
    return base


def _yarn(
    theta: float, dim: int, p: dict[str, object]
) -> tuple[tuple[Fraction, ...], float, tuple[float, float], float]:
    original = _num(p, "original_max_positions")
    factor = _opt(p, "factor")
    if factor is None:
        if "max_positions" not in p:
            raise SpecError("scaling yarn needs factor (or max_positions to derive it)", param="factor")
        factor = _num(p, "max_positions") / original
        if factor < 1:
            raise SpecError(f"factor must be at least 1 for yarn scaling, got {factor!r}", param="factor")

    def mscale_of(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * _f64(_ln(scale)) + 1.0

    attention = _opt(p, "attention_factor")
    if attention is None:
        ms, ms_all = _opt(p, "mscale"), _opt(p, "mscale_all_dim")
        if ms and ms_all:
            divisor = mscale_of(factor, ms_all)
            if divisor == 0 or not math.isfinite(mscale_of(factor, ms) / divisor):
                raise SpecError(
                    f"mscale_all_dim {show(ms_all)} makes YaRN's divisor 0.1 * mscale_all_dim * ln(factor) + 1 "
                    f"{show(divisor)} at factor {show(factor)}: no attention scaling",
                    param="mscale_all_dim",
                )
            attention = mscale_of(factor, ms) / divisor
        else:
            attention = mscale_of(factor)
    if attention == 0:  # cos and sin times 0: no table (HF's own would be all zeros)
        raise SpecError(
            f"mscale {show(_opt(p, 'mscale'))} makes YaRN's attention scaling 0.1 * mscale * ln(factor) + 1 zero at "
            f"factor {show(factor)}",
            param="mscale",
        )
    beta_fast, beta_slow = _opt(p, "beta_fast") or 32.0, _opt(p, "beta_slow") or 1.0
    two_pi = 2 * math.pi  # HF: the float64 pi

    def correction_dim(rotations: float, name: str) -> float:
        arg = original / (rotations * two_pi)
        if not 0 < arg < math.inf:  # HF's float64 quotient overflows or underflows: its logarithm is no number
            raise SpecError(
                f"{name} must leave original_max_positions / ({name} * 2 pi) a finite positive float64, got "
                f"{show(rotations)}",
                param=name,
            )
        return (dim * _f64(_ln(arg))) / (2 * _f64(_ln(theta)))

    low, high = correction_dim(beta_fast, "beta_fast"), correction_dim(beta_slow, "beta_slow")
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    taken = (float(low), float(high))
    if low == high:
        high += 0.001
    mults = []
    for k in range(dim // 2):
        ramp = min(max((Fraction(k) - Fraction(low)) / (Fraction(high) - Fraction(low)), Fraction(0)), Fraction(1))
        mults.append(ramp / Fraction(factor) + (1 - ramp))
    return tuple(mults), attention, taken, factor


def _llama3(theta: float, dim: int, p: dict[str, object]) -> tuple[Fraction, ...]:
    factor, original = Fraction(_num(p, "factor")), Fraction(_num(p, "original_max_positions"))
    low, high = Fraction(_num(p, "low_freq_factor", 1.0)), Fraction(_num(p, "high_freq_factor", 4.0))
    if high < low:  # equal (Llama 4): no band between, as transformers computes it
        raise SpecError(
            f"high_freq_factor must be at least low_freq_factor, got {show(float(high))} and {show(float(low))}",
            param="high_freq_factor",
        )
    mults = []
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        two_pi, ln_theta = 2 * pi_decimal(90), _ln(theta, 90)
        for k in range(dim // 2):
            f = (-(Decimal(2 * k) / dim) * ln_theta).exp()
            cycles = Fraction(Decimal(original.numerator) / original.denominator * f / two_pi)  # original / wavelen
            if cycles > high:  # wavelen < original / high: high frequency, kept
                mults.append(Fraction(1))
            elif cycles < low:  # wavelen > original / low: low frequency, interpolated
                mults.append(1 / factor)
            else:
                s = (cycles - low) / (high - low)
                mults.append((1 - s) / factor + s)
    return tuple(mults)


def _longrope(
    seq_len: int, p: dict[str, object], cache: str | None
) -> tuple[tuple[Fraction, ...], float, tuple[float, ...]]:
    original = _num(p, "original_max_positions")
    long = seq_len > original if cache is None else cache == "long"
    ext = p["long_factor"] if long else p["short_factor"]
    assert isinstance(ext, tuple)
    mults = tuple(1 / Fraction(e) for e in ext)
    attention = _opt(p, "attention_factor")
    if attention is None:
        factor = _opt(p, "factor")
        if factor is None:
            if "max_positions" not in p:
                raise SpecError("scaling longrope needs factor (or max_positions to derive it)", param="factor")
            factor = _num(p, "max_positions") / original
        if factor > 1 and original < 2:  # ln(1) = 0 divides
            raise SpecError(
                "longrope's attention scaling divides by ln(original_max_positions): it must be at least 2, got 1 "
                "(or give attention_factor)",
                param="original_max_positions",
            )
        attention = 1.0 if factor <= 1 else math.sqrt(1 + _f64(_ln(factor)) / _f64(_ln(original)))
    return mults, attention, ext


# ---------------------------------------------------------------------------------------------------- values
def frequencies(spec: RopeSpec) -> list[int]:
    """Column ``j``'s frequency index ``k(j)`` of the caches (the layout's order)."""
    h = spec.head_dim // 2
    if spec.layout == "half":
        return [j % h for j in range(spec.head_dim)]
    if spec.layout == "half-width":
        return list(range(h))
    return [j // 2 for j in range(spec.head_dim)]


def columns(spec: RopeSpec, trig: str) -> list[tuple[int, str] | None]:
    """Column ``j`` of the ``cos`` or ``sin`` cache: ``(k(j), trig)``, or ``None`` for a frequency of 0 (proportional
    RoPE's unrotated dimensions, filled with cos 1 and sin 0 by :func:`cache_rows`)."""
    top = spec.head_dim if spec.angles is None else spec.angles
    return [(k, trig) if k < top else None for k in frequencies(spec)]


def _with_ones(spec: RopeSpec, part: str, rows: np.ndarray, element: ElementType) -> np.ndarray:
    """A zero frequency's cosine is 1 (times the amplitude): the columns :func:`columns` left at 0."""
    if spec.angles is None or part != "cos":
        return rows
    one = element.from_exact(Fraction(spec.amplitude))
    unrotated = [j for j, c in enumerate(columns(spec, part)) if c is None]
    rows[:, unrotated] = one
    return rows


def width(spec: RopeSpec) -> int:
    """The caches' number of columns: ``head_dim``, or ``head_dim / 2`` for the ``half-width`` layout."""
    return spec.head_dim // 2 if spec.layout == "half-width" else spec.head_dim


def cache_rows(
    spec: RopeSpec,
    part: str,
    first_row: int,
    stop_row: int,
    dtype: str = "float32",
    *,
    quant_scale: float | None = None,
    zero_point: int | None = None,
) -> np.ndarray:
    """Rows ``first_row .. stop_row - 1`` of the ``cos`` or ``sin`` cache, in the output type's storage."""
    rows = sinusoid_rows(
        first_row, stop_row, columns(spec, part), denom=Fraction(spec.head_dim, 2), base=spec.base,
        scale=spec.amplitude, dtype=dtype, quant_scale=quant_scale, zero_point=zero_point, mults=spec.mults,
    )  # fmt: skip
    return _with_ones(spec, part, rows, ElementType.of(dtype, scale=quant_scale, zero_point=zero_point))


def cache_rows_of(
    spec: RopeSpec,
    part: str,
    dtype: str = "float32",
    *,
    quant_scale: float | None = None,
    zero_point: int | None = None,
) -> Callable[[int, int], np.ndarray]:
    """``rows(lo, hi)``: blocks of the ``cos`` or ``sin`` cache, each bit-identical to :func:`cache_rows` of the same
    rows, with the parameters checked once, here, and never again per block."""
    rows = prepare_rows(
        spec.seq_len, columns(spec, part), denom=Fraction(spec.head_dim, 2), base=spec.base, scale=spec.amplitude,
        dtype=dtype, quant_scale=quant_scale, zero_point=zero_point, mults=spec.mults,
    )  # fmt: skip
    if spec.angles is None or part != "cos":
        return rows
    element = ElementType.of(dtype, scale=quant_scale, zero_point=zero_point)
    return lambda lo, hi: _with_ones(spec, part, rows(lo, hi), element)


def inv_freq(
    spec: RopeSpec, dtype: str = "float32", *, quant_scale: float | None = None, zero_point: int | None = None
) -> np.ndarray:
    """``inv_freq`` (head_dim/2,), each ``m_k * base**(-2k/head_dim)`` correctly rounded (Ziv: the working precision
    doubles until both ends of the value's enclosure round alike; ``k > 0`` values are transcendental)."""
    element = ElementType.of(dtype, scale=quant_scale, zero_point=zero_point)
    out = np.empty(spec.head_dim // 2, element.storage)
    for k in range(len(out)):
        m = Fraction(1) if spec.mults is None else spec.mults[k]
        if spec.angles is not None and k >= spec.angles:  # proportional: not rotated
            out[k] = element.from_exact(Fraction(0))
            continue
        if k == 0:
            out[k] = element.from_exact(m)
            continue
        digits = 40
        while True:
            with decimal.localcontext() as ctx:
                ctx.prec = digits
                f = (-(Decimal(2 * k) / spec.head_dim) * _ln(spec.base, digits + 5)).exp()
                v = Fraction(f * (Decimal(m.numerator) / Decimal(m.denominator)))
            err = abs(v) * Fraction(1, 10 ** (digits - 4))  # a few ulps of the working precision, generously
            lo, hi = element.from_exact(v - err), element.from_exact(v + err)
            if lo == hi:
                out[k] = lo
                break
            digits *= 2
    return out
