"""posenc: positional-encoding tables for Transformers, correctly rounded, exported to .npy, .h5, .csv and C.

The Python API (the CLI ``posenc`` is a thin layer over it)::

    import posenc_cli
    pe = posenc_cli.sinusoidal(2048, 512)            # numpy array (seq_len, d_model), float32
    posenc_cli.save(pe, "pe.h")                      # any registered format, atomically
    table = posenc_cli.load("pe.npy")                # a Table of named arrays and parameters
"""

from ._version import __version__
from .api import alibi, convert, generate, load, plan, rope, save, sincos2d
from .encodings import sinusoidal
from .errors import FormatError, OutputError, PosencError, SpecError
from .formats import FORMATS
from .table import Table

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
    "load",
    "plan",
    "rope",
    "save",
    "sincos2d",
    "sinusoidal",
]
