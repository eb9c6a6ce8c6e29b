"""``arithmetic="framework"``: the tables a framework's own code computes, for ``posenc generate`` and ``posenc alibi``.

An exact table (the default) holds every value correctly rounded from the real formula. A framework table holds
what the code a preset follows computes: its float32 operations in its order, ``+ - * /`` as IEEE float32 (numpy's
float32 arithmetic, bit for bit), and each elementary function (``exp``, ``pow``, ``sin``, ``cos``) correctly rounded
in float32 (:mod:`posenc_cli.encodings.float32`). A Python float that the code combines with a float32 tensor is
rounded to float32 first (torch and TensorFlow do this: ``tests/goldens/README.md``); a Python float computed from
Python floats (``math.log(10000) / (h - 1)``) is a float64 value, rounded once where it meets the tensor.

Sinusoid recipes (``f32`` rounds to float32; ``k`` is the frequency index, ``h = d_model // 2``, ``D = h - S`` the
denominator of the shift form, ``2c`` the paper form's ``d_model``, or ``d_model - 1`` for a trailing zero column):

- ``tutorial`` (preset ``vaswani``): PyTorch's tutorial ``PositionalEncoding`` (pytorch/tutorials,
  ``beginner_source/transformer_tutorial.py``) and harvardnlp/annotated-transformer ``PositionalEncoding``:
  ``div_term = exp(arange(0, d, 2) * (-math.log(base) / d))``: ``exp(f32(2k) * f32(-ln(base) / 2c))``.
- ``fairseq`` (presets ``fairseq``, ``musicgen``, ``whisper``): fairseq ``fairseq/modules/
  sinusoidal_positional_embedding.py`` ``SinusoidalPositionalEmbedding.get_embedding``, transformers
  ``models/m2m_100/modeling_m2m_100.py`` and ``models/musicgen/modeling_musicgen.py`` ``get_embedding``,
  ``models/whisper/modeling_whisper.py`` ``sinusoids``: ``exp(f32(k) * f32(-(ln(base) / D)))``.
- ``diffusers`` (presets ``ddpm``, ``openai-diffusion``): diffusers ``src/diffusers/models/embeddings.py``
  ``get_timestep_embedding``: ``exponent = -math.log(max_period) * arange(h, float32)``, ``exponent / (h - S)``,
  ``exp``: ``exp(f32(f32(-ln(base)) * k) / f32(D))``.
- ``tensor2tensor`` (preset ``tensor2tensor``): tensor2tensor ``tensor2tensor/layers/common_attention.py``
  ``get_timing_signal_1d``: ``increment = f32(ln(base / m)) / f32(max(h - 1, 1))`` (a float32 division),
  ``f32(m) * exp(f32(k) * -increment)``.
- ``transformer-xl`` (preset ``transformer-xl``): kimiyoung/transformer-xl ``pytorch/mem_transformer.py``
  ``PositionalEmbedding`` and transformers ``models/xlnet/modeling_xlnet.py`` ``relative_positional_encoding``:
  ``inv_freq = 1 / pow(base, arange(0, d, 2.0) / d)``: ``1 / pow(f32(base), f32(2k) / f32(2c))``.
- ``float64`` (preset ``marian``): transformers ``models/marian/modeling_marian.py``
  ``MarianSinusoidalPositionalEmbedding.create_weight`` computes in numpy float64 and rounds once. Its float64
  operations, each correctly rounded, stay within a few float64 ulps (``2**-49`` relative, the exponent's rounding
  times ``ln(base)``) of the exact value, and rounding that to float32 differs from rounding the exact value only
  where the exact value lies that close to a float32 rounding boundary: posenc's framework table for these presets
  is its exact table (the goldens: bit-identical in every entry).

Every recipe then multiplies in float32: the angle of row ``r`` is ``f32(p) * freq`` with the position
``p = start + step * r`` (``arange(n).float()``, a timestep tensor ``.float()``, tensor2tensor's ``range(length) +
start_index``), and the value is ``sin`` or ``cos`` of that angle, correctly rounded. A preset's frequency form given
another one (``--freq-shift`` on ``vaswani``) takes the recipe of that form: ``fairseq`` for ``shift``,
``tensor2tensor`` for ``timescales``, ``tutorial`` for ``paper``. ``amplitude`` (no framework has one) is one more
float32 multiply by ``f32(amplitude)``. Element types other than float32 round the float32 values, as ``.to(dtype)``
does.

ALiBi (:func:`alibi_arrays`):

- ``bloom``: transformers ``models/bloom/modeling_bloom.py`` ``_get_alibi_slopes`` and ``build_alibi_tensor``:
  ``base = torch.full((), 2 ** (-(2 ** -(math.log2(p) - 3))), float32)``, a Python (float64) power rounded to
  float32 (``f32(f64(2**(-8/p)))``, both roundings correct), ``slopes = torch.pow(base, arange(1, p + 1))`` (float32
  ``pow``), then the extra base ``f32(f64(2**(-4/p)))`` to the odd powers ``1, 3, ..``; the bias
  ``slopes[:, None] * j`` is one float32 product with ``f32(j)``.
- ``mpt``: transformers ``models/mpt/modeling_mpt.py`` ``build_mpt_alibi_tensor``: ``m = arange(1, P + 1).float() *
  (8 / P)`` (exact), ``slopes = 1.0 / torch.pow(2, m)`` (float32 ``pow``, float32 division), reordered as MPT does,
  the bias ``arange(1 - n, 1) * slopes`` in float32.

Examples
--------
>>> from posenc_cli.encodings.presets import resolve
>>> spec = resolve("whisper", d_model=4)
>>> frequencies(spec, "whisper").tolist()  # exp of the float32 exponent f32(-ln 1e4): not f32(1e-4) = 9.9999997e-05
[1.0, 9.99999901978299e-05]
>>> alibi_arrays(6, None)["slopes"].tolist()
[0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from ..dtypes import ElementType
from . import float32 as f
from .presets import SinusoidSpec, columns, frequency_law

__all__ = ["RECIPES", "alibi_arrays", "frequencies", "recipe", "sinusoid_rows", "to_element"]

#: The recipe each preset follows (``None``: no preset, the paper's table, PyTorch's tutorial).
RECIPES: dict[str | None, str] = {
    None: "tutorial",
    "vaswani": "tutorial",
    "fairseq": "fairseq",
    "musicgen": "fairseq",
    "whisper": "fairseq",
    "ddpm": "diffusers",
    "openai-diffusion": "diffusers",
    "tensor2tensor": "tensor2tensor",
    "transformer-xl": "transformer-xl",
    "marian": "float64",
}
#: The frequency form each recipe computes.
_FORM = {
    "tutorial": "paper", "transformer-xl": "paper", "fairseq": "shift", "diffusers": "shift",
    "tensor2tensor": "timescales", "float64": None,
}  # fmt: skip
#: The recipe of a form a preset's own recipe does not compute.
_OF_FORM = {"paper": "tutorial", "shift": "fairseq", "timescales": "tensor2tensor"}


def recipe(spec: SinusoidSpec, preset: str | None) -> str:
    """The recipe (:data:`RECIPES`) of ``preset`` for ``spec``'s frequency form."""
    own = RECIPES[preset]
    if _FORM[own] in (None, spec.freq):
        return own
    return _OF_FORM[spec.freq]


def frequencies(spec: SinusoidSpec, preset: str | None) -> np.ndarray:
    """The float32 frequencies ``freq[k]`` of ``spec`` as ``preset``'s code computes them (module docstring)."""
    kind = recipe(spec, preset)
    cols = columns(spec)
    n = max((c[0] for c in cols if c is not None), default=-1) + 1
    k = np.arange(n, dtype=np.float32)
    denom, base, mult = frequency_law(spec)
    if kind == "tutorial":
        return f.exp(k * 2 * f.f32(-math.log(spec.base) / float(2 * denom)))
    if kind == "transformer-xl":
        return (np.float32(1) / f.pow_(f.f32(spec.base), k * 2 / f.f32(float(2 * denom)))).astype(np.float32)
    if kind == "fairseq":
        return f.exp(k * f.f32(-(math.log(spec.base) / float(denom))))
    if kind == "diffusers":
        return f.exp(f.f32(-math.log(spec.base)) * k / f.f32(float(denom)))
    assert kind == "tensor2tensor" and mult is not None
    increment = f.f32(math.log(base)) / f.f32(float(denom))
    out: np.ndarray = (f.f32(mult) * f.exp(k * -increment)).astype(np.float32)
    return out


def to_element(values: np.ndarray, element: ElementType) -> np.ndarray:
    """Float32 ``values`` in ``element``'s storage: each rounded once (float64 holds them exactly), as ``.to(dtype)``
    does; a value on a rounding boundary of a fixed-point or int8 code is decided from its exact value."""
    wide = values.astype(np.float64)
    out, undecided = element.convert(wide)
    for index in zip(*np.nonzero(undecided), strict=True):
        out[index] = element.from_exact(Fraction(float(wide[index])))
    result: np.ndarray = out.astype(element.storage)
    return result


def sinusoid_rows(
    spec: SinusoidSpec, preset: str | None, element: ElementType
) -> Callable[[int, int], np.ndarray] | None:
    """``rows(lo, hi)``: blocks of ``spec``'s framework table in ``element``'s storage, or ``None`` where the
    framework table is the exact one (the ``float64`` recipe)."""
    if recipe(spec, preset) == "float64":
        return None
    freq = frequencies(spec, preset)
    cols = columns(spec)
    amplitude = f.f32(spec.amplitude)
    # each output column's source among [sin of each frequency | cos of each frequency | a zero column]: the block
    # is one gather (a loop over columns per block cost more than its cos and sin)
    k = len(freq)
    source = np.array([2 * k if c is None else c[0] + (0 if c[1] == "sin" else k) for c in cols], np.intp)

    def rows(lo: int, hi: int) -> np.ndarray:
        p = f.f32(spec.start + spec.step * np.arange(lo, hi, dtype=np.float64))
        angle = p[:, None] * freq[None, :]
        cosines, sines = f.cos_sin_columns(angle, np.arange(k))
        out = np.take(np.concatenate([sines, cosines, np.zeros((hi - lo, 1), np.float32)], axis=1), source, axis=1)
        if spec.amplitude != 1:
            out *= amplitude
        if spec.padding_idx is not None and lo <= spec.padding_idx < hi:
            out[spec.padding_idx - lo] = 0
        return to_element(out, element)

    return rows


def _python_power_f32(exponent: Fraction) -> np.float32:
    """``torch.full((), 2 ** x, dtype=float32)`` for a Python float ``x``: ``2**x`` correctly rounded to float64,
    then to float32 (50 digits decide the float64 rounding: ``2**x`` of a non-integer dyadic ``x`` is irrational)."""
    with localcontext() as ctx:
        ctx.prec = 50
        value = Decimal(2) ** (Decimal(exponent.numerator) / Decimal(exponent.denominator))
    return np.float32(float(value))


def alibi_arrays(heads: int, seq_len: int | None, variant: str = "bloom") -> dict[str, np.ndarray]:
    """``{"slopes": (H,), "bias": (H, seq_len)}`` in float32 as BLOOM's or MPT's code computes them (module
    docstring); ``bias`` only with a ``seq_len``."""
    if variant == "mpt":
        top = 1 << (heads - 1).bit_length()
        m = np.arange(1, top + 1, dtype=np.float32) * f.f32(8 / top)
        every = (np.float32(1) / f.pow_(np.float32(2), m)).astype(np.float32)
        slopes = every if top == heads else np.concatenate([every[1::2], every[::2]])[:heads]
        j = np.arange(1 - (seq_len or 0), 1, dtype=np.float32)
    else:
        p = 1 << (heads.bit_length() - 1)
        slopes = f.pow_(_python_power_f32(Fraction(-8, p)), np.arange(1, p + 1, dtype=np.float32))
        if p != heads:
            odd = np.arange(1, 1 + 2 * min(p, heads - p), 2, dtype=np.float32)
            slopes = np.concatenate([slopes, f.pow_(_python_power_f32(Fraction(-4, p)), odd)])
        j = np.arange(seq_len or 0, dtype=np.float32)
    out = {"slopes": slopes.astype(np.float32)}
    if seq_len is not None:
        out["bias"] = (out["slopes"][:, None] * j[None, :]).astype(np.float32)
    return out
