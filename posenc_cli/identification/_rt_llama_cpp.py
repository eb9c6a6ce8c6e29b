"""Hypotheses for ``--runtime llama.cpp``'s arrays: Llama 3's ``rope_freqs`` (:mod:`posenc_cli.kinds.runtimes.
llama_cpp`), the divisor of each of ``head_dim / 2`` frequencies.

A ``rope_freqs`` is 1-D, starts at exactly 1 (the fastest frequencies are unscaled), ends at ``factor > 1`` (the
slowest are divided by it) and never decreases; between lie the band values ``1 / ((1 - s) / factor + s)``, ``s =
(original / wavelen_k - 1) / (4 - 1)``, ``wavelen_k = 2 pi theta**(2k / head_dim)`` (the default band edges, 1 and 4,
of every Llama 3.x configuration). ``factor`` is the last value; ``theta`` and ``original`` are taken from the round
bases and pre-training lengths configurations use, each pair kept where its float64 factors lie within ``1e-4
factor`` of every stored value (a float16 or bfloat16 array too). At most :data:`MAX_VALUES` values are read, and
the work is ``len(values)`` per pair tried.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis
from ._readoff import COMMON

__all__ = ["MAX_VALUES", "hypotheses"]

#: The longest ``rope_freqs`` read: half of posenc's largest head_dim.
MAX_VALUES = 1 << 15
#: Pre-training context lengths (``original_max_position_embeddings``) tried, Llama 3's first.
ORIGINALS = (8192, 4096, 16384, 32768, 2048, 65536, 131072)
#: Readings kept for one array: where no value lies in the band, every theta and length agree.
_MOST = 4


def _factors(head_dim: int, theta: float, factor: float, original: float) -> np.ndarray:
    """llama3's divisors in float64 for the default band edges (low 1, high 4)."""
    k = np.arange(head_dim // 2, dtype=np.float64)
    wavelen = 2 * math.pi * np.power(theta, 2 * k / head_dim)
    smooth = (original / wavelen - 1.0) / 3.0
    band = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < original / 4.0, 1.0, np.where(wavelen > original, factor, band))


def hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """``rope_freqs`` readings of a 1-D array (the module docstring); nothing for any other array."""
    if values.ndim != 1 or not 2 <= values.size <= MAX_VALUES or not np.all(np.isfinite(values)):
        return
    factor = float(values[-1])
    if values[0] != 1.0 or not 1 < factor <= 1e6 or not np.all(np.diff(values) >= 0):
        return
    head_dim = 2 * values.size
    found = 0
    for original in ORIGINALS:
        for theta in COMMON:
            if np.max(np.abs(_factors(head_dim, theta, factor, original) - values)) > 1e-4 * factor:
                continue
            over = {"scaling": "llama3", "factor": factor, "original_max_positions": original, "runtime": "llama.cpp"}
            if theta != 10000.0:
                over["theta"] = theta
            yield Hypothesis("rope", {"head_dim": head_dim, **over}, "rope_freqs", "rope", factor, len(over))
            found += 1
            if found == _MOST:
                return
