"""Hypotheses for TensorRT-LLM's fused RoPE table, ``embed_positions_for_gpt_attention`` (``posenc rope --runtime
tensorrt-llm``, :mod:`posenc_cli.kinds.runtimes.tensorrt_llm`).

The table is stored ``(1, rows * dim)``, which identify reads as its ``rows * dim`` values: for each position the
pairs ``cos, sin`` of each of the ``dim / 2`` frequencies. Position 0 is ``A, 0, A, 0, ...`` (``A`` the attention
scaling, 1 without one) and position 1's first sine is the first frequency's, never 0: the first nonzero odd entry
is where row 1 starts, which gives ``dim`` (it must divide the size, and leave at least three rows). The cosines,
read as a ``(rows, dim / 2)`` cache of each frequency once (``half-width``), give every scaling mode's reading
(:func:`~posenc_cli.identification._rope.rope_hypotheses`; the sines give LongRoPE's once more, a slow column's sine
telling its rate better). Each becomes the same options with ``--runtime tensorrt-llm``, whose table is the fused
one; a YaRN reading without its scaling takes ``mscale`` and ``mscale_all_dim`` 1 (DeepSeek's equal pair cancels
it: TensorRT-LLM's only unscaled YaRN table). Work: a few passes over the values, and the cache readings'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._hypothesis import Hypothesis

__all__ = ["hypotheses"]

RUNTIME = "tensorrt-llm"
#: The runtime's name of the fused table (:data:`posenc_cli.kinds.runtimes.tensorrt_llm.TABLE`, not imported here:
#: identify does not load the RoPE machinery to read a file).
TABLE = "embed_positions_for_gpt_attention"


def _dim(values: np.ndarray) -> int | None:
    """The rotary dim of a fused table (module docstring), or ``None`` when ``values`` cannot be one."""
    if values.ndim != 1 or values.size < 12 or values.size % 2:
        return None
    amplitude = values[0]
    if not amplitude > 0:
        return None
    nonzero = np.flatnonzero(values[1::2])
    if not nonzero.size:
        return None
    half = int(nonzero[0])  # pairs in row 0
    dim = 2 * half
    if half < 2 or values.size % dim or values.size // dim < 3:
        return None
    if not np.all(values[0:dim:2] == amplitude):
        return None
    return dim


def _fused_angle(rates: np.ndarray, dim: int) -> Callable[[np.ndarray], np.ndarray]:
    """The angle of entry ``i``: position ``i // dim`` times the frequency of pair ``(i % dim) // 2``."""

    def angle(entries: np.ndarray) -> np.ndarray:
        entries = np.asarray(entries, np.int64)
        return np.asarray((entries // dim).astype(np.float64) * rates[(entries % dim) // 2], np.float64)

    return angle


def _options(read: dict[str, Any], rows: int, amplitude: float) -> dict[str, Any] | None:
    """A cache reading's options as TensorRT-LLM's (``None``: a table TensorRT-LLM does not make, or not one of
    ``rows`` rows at ``amplitude``): no layout; YaRN and LongRoPE without ``max_positions`` (which neither reads
    once the factor is given), YaRN always truncated, LongRoPE's scaling from ``rows`` and its original length."""
    options = {k: v for k, v in read.items() if k not in ("layout", "max_positions")}
    scaling = options.get("scaling")
    if scaling == "yarn":
        if options.get("truncate") is False:
            return None
        if options.pop("attention_scaling", True) is False:
            options.update(mscale=1.0, mscale_all_dim=1.0)  # unscaled: DeepSeek's equal mscales cancel
    elif scaling == "dynamic":
        return None  # TensorRT-LLM's dynamic table is the one at theta: read as none
    elif scaling == "longrope":
        original = int(options["original_max_positions"])
        if original > rows or original < 2:
            return None
        want = 1.0 if rows <= original else math.sqrt(1 + math.log(rows / original) / math.log(original))
        if abs(want - amplitude) > 1e-3 * want:
            return None
    options["runtime"] = RUNTIME
    return options


def _readings(pairs: np.ndarray) -> Iterator[Hypothesis]:
    """The cache readings of the cosines, then LongRoPE's of the sines (a slow column's sine tells its frequency
    where its cosine, near 1, barely does: LongRoPE's per-frequency factors)."""
    from ._rope import rope_hypotheses

    for part, array in ((0, "cos"), (1, "sin")):
        for found in rope_hypotheses(np.ascontiguousarray(pairs[:, :, part])):
            if found.command != "rope" or found.array != array or "runtime" in found.values or found.angle is None:
                continue
            if array == "cos" or found.values.get("scaling") == "longrope":
                yield found


def hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """TensorRT-LLM readings of ``values`` (a fused table's values, 1-D), none for any other array."""
    dim = _dim(values)
    if dim is None:
        return
    rows = values.size // dim
    pairs = values.reshape(rows, dim // 2, 2)
    seen: set[tuple[tuple[str, str], ...]] = set()
    for found in _readings(pairs):
        options = _options(found.values, rows, found.amplitude)
        key = tuple(sorted((k, repr(v)) for k, v in (options or {}).items()))
        if options is None or key in seen:
            continue
        seen.add(key)
        assert found.angle is not None
        rates = np.asarray(found.angle(np.array([1])), np.float64).reshape(-1)
        if rates.size != dim // 2:
            continue
        angle = _fused_angle(rates, dim)
        yield Hypothesis("rope", options, TABLE, "rope", found.amplitude, found.overrides + 1, angle, columns=dim)
