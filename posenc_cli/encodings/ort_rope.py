"""RoPE caches as ONNX Runtime GenAI's model builder computes them: float32, its operations in its order.

The spec is the builder's ``Model`` class (microsoft/onnxruntime-genai, ``src/python/py/models/builders/base.py``,
commit ``a0c04eb``): ``make_rotary_embedding_caches_from_scratch``, ``make_inv_freq_rescaled_with_freq_factors``
(llama3, reached from ``LlamaModel.make_rope_init`` in ``llama.py``) and ``make_inv_freq_rescaled_with_ntk`` (YaRN).
It computes in torch float32 on the CPU; here ``+ - * /`` are numpy's float32 operations (the same IEEE ones) and
``pow``, ``cos``, ``sin`` are correctly rounded in float32 (:mod:`posenc_cli.encodings.float32`), where torch's are
within an ulp. A Python float met by a float32 tensor is rounded to float32 first (torch's scalar promotion)::

    e_k          = fl32(2k) / fl32(dim)                       torch.arange(0, dim, 2).float() / dim
    inv_freq     = 1 / (rescale_factors * pow(fl32(theta), e_k))
    rescale_factors: 1 (none, llama3, yarn), fl32(factor) (linear), fl32(long_factor) or fl32(short_factor) (LongRoPE)
    cos[p, k]    = cos(fl32(fl32(p) * inv_freq[k])) * fl32(mscale)     (an mscale of 1 leaves the value as it is)

so the default, llama3 and LongRoPE frequencies are transformers' own
(:func:`posenc_cli.encodings.rope_framework.inv_freq` computes them), while linear scaling is one float32 product
before the reciprocal (``1 / (factor * pw)``, not transformers' ``(1 / pw) / factor``). YaRN blends with the
builder's own expressions, its correction range ``low``, ``high`` never floored, ceiled or clamped
(``d_half * log(original / (beta * 2 pi)) / log(theta)`` in float64, the same float64 as transformers' untruncated
range)::

    interpolation = inv_freq / fl32(factor);   extrapolation = inv_freq
    ramp          = (fl32(k) - fl32(low)) / fl32(high - low)          k = 0 .. d_half - 1
    mask          = 1 - clamp(ramp, 0, 1)
    inv_freq      = interpolation * (1 - mask) + extrapolation * mask

The caches hold the first ``dim / 2`` columns of ``cat(freqs, freqs)``: one per frequency (the ``half-width``
layout). Other element types are rounded from these float32 values, as the builder's ``.to(io_dtype)`` does.

Examples
--------
>>> from posenc_cli.encodings.rope import resolve
>>> spec = resolve(seq_len=4, head_dim=4, layout="half-width", scaling="linear", factor=3.0)
>>> inv_freq(spec).tolist()  # 1 / (3 * 1) and 1 / (3 * 100), each one float32 division
[0.3333333432674408, 0.0033333334140479565]
>>> float(cache_rows(spec, "cos", 1, 2)[0, 0])  # cos(fl32(1 * fl32(1/3)))
0.9449569582939148
"""

from __future__ import annotations

import numpy as np

from . import float32 as f32ops
from . import rope_framework
from .float32 import f32
from .rope import RopeSpec

__all__ = ["cache_rows", "inv_freq"]


def _powers(spec: RopeSpec) -> np.ndarray:
    """``pow(fl32(theta), fl32(2k) / fl32(dim))`` for ``k < dim / 2``."""
    dim = spec.head_dim
    exponents = np.arange(0, 2 * (dim // 2), 2, dtype=np.float32) / np.float32(dim)
    return f32ops.pow_(np.full(exponents.shape, f32(spec.theta)), exponents)


def _factor(spec: RopeSpec) -> np.float32:
    value = spec.yarn_factor if spec.scaling == "yarn" else spec.given.get("factor", 1.0)
    assert isinstance(value, (int, float))
    return np.float32(f32(float(value)))


def inv_freq(spec: RopeSpec) -> np.ndarray:
    """``inv_freq`` (``dim / 2``,) in float32 as the builder computes it for ``spec`` (its scaling ``none``,
    ``linear``, ``llama3``, ``yarn`` or ``longrope``; ``half-width``)."""
    if spec.scaling == "linear":
        linear: np.ndarray = (np.float32(1) / (_factor(spec) * _powers(spec))).astype(np.float32)
        return linear
    if spec.scaling != "yarn":
        return rope_framework.inv_freq(spec)
    assert spec.yarn_range is not None
    low, high = spec.yarn_range
    extrapolation = (np.float32(1) / _powers(spec)).astype(np.float32)
    interpolation = extrapolation / _factor(spec)
    k = np.arange(spec.head_dim // 2, dtype=np.float32)
    ramp = (k - f32(low)) / f32(high - low)
    mask = np.float32(1) - np.clip(ramp, np.float32(0), np.float32(1))
    blended: np.ndarray = (interpolation * (np.float32(1) - mask) + extrapolation * mask).astype(np.float32)
    return blended


def cache_rows(spec: RopeSpec, part: str, first_row: int, stop_row: int, inv: np.ndarray | None = None) -> np.ndarray:
    """Rows ``first_row .. stop_row - 1`` of the builder's float32 ``cos`` or ``sin`` cache (``dim / 2`` columns),
    times ``fl32(attention_scaling)`` (its ``mscale``) when it is not 1; ``inv``: :func:`inv_freq`, when known."""
    at = np.arange(first_row, stop_row, dtype=np.int64)
    theta = rope_framework.angles(spec, at, inv_freq(spec) if inv is None else inv)
    values = (f32ops.cos if part == "cos" else f32ops.sin)(theta)
    if spec.fold_scaling and spec.attention_scaling != 1:
        values = (values * f32(spec.attention_scaling)).astype(np.float32)
    return values
