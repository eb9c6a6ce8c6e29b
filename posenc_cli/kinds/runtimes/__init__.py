"""The serving runtimes' own RoPE caches (``posenc rope --runtime NAME``): each runtime keeps its precomputed RoPE
table in arrays of its own (names, layout, length, element type) and computes them with code of its own; one module
here per runtime reproduces them, :data:`MODULES` names it, and :func:`runtime_table` dispatches.

A runtime module defines ``table(request: Request) -> Table``: the table of kind ``"rope"`` holding the runtime's
arrays under the runtime's names, whose parameters record everything needed to make it again (the rope keywords,
``runtime``, and what the runtime adds), in ``request.arithmetic``: ``exact`` (every value correctly rounded from the
real formula the runtime's code computes) or ``framework`` (the runtime's own floating-point operations, each
elementary function correctly rounded in its type). Its docstring is the layout's spec, naming the runtime's file and
function it follows; docs/toolchains.md has a section for each.

Imported when a runtime's table is made, never by the registry.
"""

from __future__ import annotations

import importlib

from ...encodings.names import ROPE_RUNTIMES
from ...errors import SpecError
from ...table import Table
from .request import Request

__all__ = ["MODULES", "Request", "runtime_table"]

#: Each runtime's module in this package.
MODULES: dict[str, str] = {
    "vllm": "vllm",
    "tensorrt-llm": "tensorrt_llm",
    "llama.cpp": "llama_cpp",
    "onnxruntime-genai": "onnxruntime_genai",
}
assert tuple(MODULES) == ROPE_RUNTIMES


def runtime_table(request: Request) -> Table:
    """The table ``request.runtime``'s module makes, its parameters recording ``runtime``."""
    if request.runtime not in MODULES:
        raise SpecError(f"runtime must be one of {', '.join(ROPE_RUNTIMES)}, got {request.runtime!r}", param="runtime")
    module = importlib.import_module(f".{MODULES[request.runtime]}", __package__)
    table: Table = module.table(request)
    return Table(table.kind, table.arrays, {**table.params, "runtime": request.runtime}, table.axes)
