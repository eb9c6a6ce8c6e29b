"""posenc: positional-encoding tables for Transformers, correctly rounded, written in every format of its registry
(:data:`FORMATS`).

The Python API (the CLI ``posenc`` is a thin layer over it)::

    import posenc_cli
    pe = posenc_cli.sinusoidal(2048, 512)            # numpy array (seq_len, d_model), float32
    posenc_cli.save(pe, "pe.h")                      # any registered format, atomically
    table = posenc_cli.load("pe.npy")                # a Table of named arrays and parameters
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:  # the names below, imported on first use (PEP 562) so that `posenc` starts without them
    from .api import alibi, convert, generate, identify, load, plan, relative, rope, save, sincos2d, window
    from .encodings import sinusoidal
    from .errors import FormatError, OutputError, PosencError, SpecError
    from .formats import FORMATS
    from .table import Table

_WHERE = {
    **dict.fromkeys(
        ("alibi", "convert", "generate", "identify", "load", "plan", "relative", "rope", "save", "sincos2d", "window"),
        ".api",
    ),
    "sinusoidal": ".encodings",
    **dict.fromkeys(("FormatError", "OutputError", "PosencError", "SpecError"), ".errors"),
    "FORMATS": ".formats",
    "Table": ".table",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'posenc_cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "FormatError",
    "OutputError",
    "PosencError",
    "SpecError",
    "Table",
    "__version__",
    "alibi",
    "convert",
    "generate",
    "identify",
    "load",
    "plan",
    "relative",
    "rope",
    "save",
    "sincos2d",
    "sinusoidal",
    "window",
]


def __dir__() -> list[str]:
    return sorted(__all__)
