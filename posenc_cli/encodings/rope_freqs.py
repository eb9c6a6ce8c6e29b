"""llama.cpp's per-frequency RoPE factors: the ``rope_freqs`` tensor its converter writes for Llama 3's ``llama3``
scaling, and the ``rope.scaling.attn_factor`` it writes for Phi-3's LongRoPE.

ggml's rope divides each pair's angle by its factor (``ggml_rope_ext``'s ``freq_factors``: ``theta_extrap =
theta / freq_factors[i]``), so a GGUF stores llama3's scaling as divisors of the unscaled frequencies: llama.cpp's
``convert_hf_to_gguf.py`` (``LlamaModel.generate_extra_tensors``, ``conversion/llama.py`` of llama.cpp
0c1e57098bba, vendored in llama-cpp-python 0.3.36) computes, for each frequency ``f_k = theta**(-2k/d)``
(``k < d/2``) with ``wavelen = 2 pi / f_k``::

    1                                  where wavelen < original / high_freq_factor
    factor                             where wavelen > original / low_freq_factor
    1 / ((1 - smooth) / factor + smooth)   between, smooth = (original / wavelen - low) / (high - low)

the reciprocal of HF's llama3 multiplier ``m_k`` (``inv_freq_llama = f_k * m_k``). :func:`llama3_exact` gives the
real values (``1 / m_k`` of :mod:`posenc_cli.encodings.rope`'s multipliers) and :func:`llama3_converter` the
converter's own float32 operations, in its order (each one IEEE float32, as torch's CPU kernels; ``pow`` correctly
rounded, :mod:`posenc_cli.encodings.float32`)::

    freqs   = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=float32) / d))   # fl32(theta) ** fl32(2k / d)
    wavelen = 2 * math.pi / freq      # torch's __rdiv__: freq.reciprocal() * fl32(2 pi)
    wavelen < fl32(original / high), wavelen > fl32(original / low)          # the Python floats met in float32
    smooth  = (original / wavelen - low) / (high - low)
            = ((wavelen.reciprocal() * fl32(original)) - fl32(low)) / fl32(high - low)
    factor  = 1 / ((1 - smooth) / fl32(factor) + smooth)     # 1 - t: one rounding; 1 / t: t.reciprocal()

and ``torch.tensor(list, dtype=float32)`` of the entries (``1``, the Python ``factor``, or the float32 band values).

Examples
--------
>>> from posenc_cli.encodings.rope import resolve
>>> spec = resolve(seq_len=1, head_dim=8, theta=10000.0, scaling="llama3", factor=8.0, original_max_positions=1024)
>>> [round(float(v), 9) for v in llama3_exact(spec)]  # wavelengths 6.3, 63, 628 (in the band), 6283
[1.0, 1.0, 3.239641847, 8.0]
>>> llama3_converter(8, 10000.0, 8.0, 1.0, 4.0, 1024).tolist()  # float32: the band value 1 ulp above
[1.0, 1.0, 3.2396421432495117, 8.0]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .float32 import f32, pow_
from .rope import RopeSpec

__all__ = ["llama3_converter", "llama3_exact", "longrope_attn_factor"]

_F = np.float32


def llama3_exact(spec: RopeSpec) -> tuple[Fraction, ...]:
    """The real ``rope_freqs`` of a resolved ``llama3`` spec: ``1 / m_k`` for each multiplier (1 where unscaled)."""
    half = spec.head_dim // 2
    if spec.mults is None:
        return (Fraction(1),) * half
    return tuple(1 / m for m in spec.mults)


def llama3_converter(dim: int, theta: float, factor: float, low: float, high: float, original: float) -> np.ndarray:
    """``rope_freqs`` (``dim / 2`` float32 values) as ``LlamaModel.generate_extra_tensors`` computes them (module
    docstring): ``low`` and ``high`` are ``low_freq_factor`` and ``high_freq_factor``, ``original`` the
    ``original_max_position_embeddings``."""
    exponents = np.arange(0, 2 * (dim // 2), 2, dtype=_F) / _F(dim)
    freqs = _F(1) / pow_(np.full(exponents.shape, f32(theta)), exponents)
    low_wavelen, high_wavelen = f32(original / low), f32(original / high)
    out = np.empty(freqs.shape, _F)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        for k, freq in enumerate(freqs):
            wavelen = (_F(1) / freq) * f32(2 * math.pi)
            if wavelen < high_wavelen:
                out[k] = _F(1)
            elif wavelen > low_wavelen:
                out[k] = f32(factor)
            else:
                smooth = ((_F(1) / wavelen) * f32(original) - f32(low)) / f32(high - low)
                out[k] = _F(1) / ((_F(1) - smooth) / f32(factor) + smooth)
    return out


def longrope_attn_factor(max_positions: int, original: int) -> float:
    """``rope.scaling.attn_factor`` as ``Phi3MiniModel.generate_extra_tensors`` computes it, in Python floats:
    ``sqrt(1 + log(scale) / log(original))`` with ``scale = max_positions / original``, 1 where ``scale <= 1``
    (written as float32).

    >>> round(longrope_attn_factor(131072, 4096), 6)
    1.190238
    """
    scale = max_positions / original
    return math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1.0 else 1.0
