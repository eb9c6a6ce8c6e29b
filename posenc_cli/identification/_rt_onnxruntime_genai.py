"""Hypotheses for ONNX Runtime GenAI's ``cos_cache``/``sin_cache`` (``posenc rope --runtime onnxruntime-genai``).

The model builder bakes a cache of ``context_length`` rows and one column per frequency (the ``half-width`` layout:
:mod:`posenc_cli.kinds.runtimes.onnxruntime_genai`), so the RoPE reader's own readings of a half-width cache
(:func:`~posenc_cli.identification._rope.cache_hypotheses`) are its readings too, renamed, where they follow the
builder's conventions:

- the cache is one a model configures: its rows a context length (a power of two from 256, or a multiple of 1024;
  LongRoPE's small cache, ``original_max_position_embeddings`` rows, is one of those too), so that a short test
  table keeps posenc's own name (``--layout half-width``);
- ``none``, ``linear`` and ``llama3`` readings as they are (``cos_cache``, ``sin_cache``);
- YaRN only untruncated, its scaling folded, over ``max_positions`` rows, with the ``beta_fast`` 32 and
  ``beta_slow`` 1 the builder needs given (every YaRN reading assumes them);
- LongRoPE as the small cache when the rows are ``original_max_positions`` (``cos_cache_small``: the hypothesis's
  ``seq_len`` is the context length its scaling was read for), as the large one when they are ``max_positions``.

Dynamic NTK and proportional readings are not the builder's. The work is the RoPE reader's, once more, and only for
a 2-D array of such a length whose columns are not repeated (``half`` or ``interleaved`` caches are not read here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis
from ._rope import cache_hypotheses

__all__ = ["context_length", "hypotheses"]

RUNTIME = "onnxruntime-genai"


def context_length(rows: int) -> bool:
    """Whether ``rows`` is a context length a model configures: a power of two from 256, or a multiple of 1024."""
    return rows >= 256 and (rows & (rows - 1) == 0 or rows % 1024 == 0)


def _repeated(values: np.ndarray) -> bool:
    """Whether the columns repeat as in a ``half`` or ``interleaved`` cache."""
    c = values.shape[1]
    if c % 2:
        return False
    return bool(
        np.array_equal(values[:, : c // 2], values[:, c // 2 :]) or np.array_equal(values[:, 0::2], values[:, 1::2])
    )


def hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """The builder's readings of a half-width cos or sin cache (module docstring)."""
    if values.ndim != 2 or not context_length(values.shape[0]) or values.shape[1] < 2 or _repeated(values):
        return
    rows = values.shape[0]
    for reading in cache_hypotheses(values):
        given = reading.values
        part = reading.array
        if given.get("layout") != "half-width" or part not in ("cos", "sin"):
            continue
        named = {key: value for key, value in given.items() if key != "layout"}
        named["runtime"] = RUNTIME
        scaling = given.get("scaling", "none")
        array = f"{part}_cache"
        if scaling == "yarn":
            if given.get("truncate") is not False or given.get("attention_scaling") is False:
                continue
            if given.get("max_positions") != rows:
                continue
            named.pop("max_positions")
            named.update(beta_fast=32.0, beta_slow=1.0)
        elif scaling == "longrope":
            original, maximum = given["original_max_positions"], given["max_positions"]
            if maximum <= original or rows not in (original, maximum):
                continue
            named["seq_len"] = maximum
            array = f"{part}_cache_small" if rows == original else f"{part}_cache_large"
        elif scaling not in ("none", "linear", "llama3"):
            continue
        yield dataclasses.replace(reading, values=named, array=array, overrides=reading.overrides + 1)
