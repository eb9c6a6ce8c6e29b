"""Hypotheses for ALiBi (``posenc alibi``: slopes, or the bias of BLOOM or MPT). The 2-D tables (sincos, DETR,
axial RoPE) are :mod:`._vision`'s.

ALiBi
    ``heads`` positive slopes, each at most 1 (``2**(-8/heads)`` and its powers), or a ``(heads, seq)`` bias
    whose first column (BLOOM: positions ``0 .. seq-1``) or last (MPT: ``1-seq .. 0``) is zero. Compared by the
    relative rule: no angle.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis

__all__ = ["alibi_hypotheses"]


def alibi_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """ALiBi slopes (1-D) or bias (2-D, heads first)."""
    if values.ndim == 1:
        heads = len(values)
        if 1 <= heads <= 4096 and (values > 0).all() and (values < 1).all():  # 2**(-8/heads) < 1 is the largest
            yield Hypothesis("alibi", {"heads": heads}, "slopes", "alibi")
        return
    heads, seq = values.shape
    if seq < 2 or heads > 4096:
        return
    for variant, column in (("bloom", 0), ("mpt", -1)):
        if not values[:, column].any() and (values[:, 1 if column == 0 else -2] != 0).all():
            over = {"variant": variant} if variant != "bloom" else {}
            yield Hypothesis("alibi", {"heads": heads, "seq_len": seq, **over}, "bias", "alibi", overrides=len(over))
