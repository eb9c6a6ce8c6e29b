"""Hypotheses for --runtime onnxruntime_genai's arrays: being built (issue #29)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis

__all__ = ["hypotheses"]


def hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """None yet."""
    return iter(())
