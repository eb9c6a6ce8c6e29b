"""The numbers vLLM's rotary classes compute beside posenc's RoPE engine: ``posenc rope --runtime vllm``.

vLLM builds its ``cos_sin_cache`` with the same float32 operations as transformers (``inv_freq``, one float32
product per angle, ``cos`` and ``sin``, the attention scaling as one float32 product), which
:mod:`posenc_cli.encodings.rope_framework` already follows, except for two steps of its own
(``vllm/model_executor/layers/rotary_embedding/``, vLLM 0.34.0):

- :func:`linear_positions`: ``LinearScalingRotaryEmbedding`` divides the positions, not the frequencies:
  ``t = torch.arange(max_len, dtype=torch.float) / scaling_factor``, then ``t * inv_freq``. In float32 that is
  ``fl32(fl32(fl32(p) / fl32(factor)) * inv_freq)``, which differs from transformers' ``fl32(p * fl32(inv_freq /
  factor))`` unless the factor is a power of two. (The real value, ``p * inv_freq / factor``, is the same.)
- :func:`deepseek_mscale`: ``DeepseekScalingRotaryEmbedding`` folds ``yarn_get_mscale(factor, mscale) /
  yarn_get_mscale(factor, mscale_all_dim)`` into cos and sin with its defaults ``mscale = 1``,
  ``mscale_all_dim = 0`` (so a lone ``mscale`` counts, where the YaRN class and transformers take the default
  ``0.1 ln(factor) + 1`` unless both are given); ``yarn_get_mscale(s, m) = 0.1 * m * ln(s) + 1`` (1 for
  ``s <= 1``). The float64 operations in vLLM's order, ``ln`` correctly rounded.

Examples
--------
>>> linear_positions(0, 4, 3.0).tolist()  # fl32(p / 3): 1/3 rounded to float32, ...
[0.0, 0.3333333432674408, 0.6666666865348816, 1.0]
>>> round(deepseek_mscale(40.0, 0.707, 0.0), 12)  # 0.1 * 0.707 * ln 40 + 1
1.260803777406
>>> deepseek_mscale(40.0, 1.0, 1.0)
1.0
"""

from __future__ import annotations

import decimal
from decimal import Decimal

import numpy as np

__all__ = ["deepseek_mscale", "linear_positions", "yarn_get_mscale"]


def linear_positions(first: int, stop: int, factor: float) -> np.ndarray:
    """``fl32(fl32(p) / fl32(factor))`` for ``p = first .. stop - 1``: the float32 positions vLLM's linear scaling
    multiplies ``inv_freq`` by (IEEE division, as torch's CPU ``div`` of a float32 tensor by a Python float)."""
    p = np.arange(first, stop, dtype=np.int64).astype(np.float32)
    out: np.ndarray = (p / np.float32(factor)).astype(np.float32)
    return out


def _ln(x: float) -> float:
    """``ln x`` correctly rounded to float64 (60 digits decide it; ``x > 0``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return float(Decimal(x).ln())


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    """vLLM's ``yarn_get_mscale``: ``0.1 * mscale * ln(scale) + 1.0`` in float64, 1 for ``scale <= 1``."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * _ln(scale) + 1.0


def deepseek_mscale(factor: float, mscale: float = 1.0, mscale_all_dim: float = 0.0) -> float:
    """``DeepseekScalingRotaryEmbedding.mscale``: ``yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor,
    mscale_all_dim)``, vLLM's defaults 1 and 0."""
    return yarn_get_mscale(factor, float(mscale)) / yarn_get_mscale(factor, float(mscale_all_dim))
