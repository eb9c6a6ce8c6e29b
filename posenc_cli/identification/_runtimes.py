"""Hypotheses for the serving runtimes' own RoPE arrays (``posenc rope --runtime``): one reader module per runtime,
``_rt_<runtime>`` (:data:`READERS`), each defining ``hypotheses(values) -> Iterator[Hypothesis]`` for the arrays its
runtime keeps (vLLM's ``cos_sin_cache``, TensorRT-LLM's fused cos/sin table, llama.cpp's ``rope_freqs``, ONNX
Runtime GenAI's ``cos_cache``/``sin_cache``). :func:`~posenc_cli.identification._rope.rope_hypotheses` asks them
first; each reads only what it can check with work bounded by the array, as every reader here.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis

__all__ = ["READERS", "runtime_hypotheses"]

#: The runtimes' reader modules, in the order they are asked.
READERS = ("_rt_vllm", "_rt_tensorrt_llm", "_rt_llama_cpp", "_rt_onnxruntime_genai")


def runtime_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every runtime reader's hypotheses for ``values``."""
    for name in READERS:
        yield from importlib.import_module(f".{name}", __package__).hypotheses(values)
