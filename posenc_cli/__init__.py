"""posenc: positional-encoding tables for Transformers, correctly rounded, written in the formats of
:data:`posenc_cli.FORMATS`.

The Python API (the CLI ``posenc`` is a thin layer over it)::

    import posenc_cli
    pe = posenc_cli.sinusoidal(2048, 512)            # numpy array (seq_len, d_model), float32
    posenc_cli.save(pe, "pe.h")                      # any registered format, atomically
    table = posenc_cli.load("pe.npy")                # a Table of named arrays and parameters

Every name of :mod:`posenc_cli.api` is one of this package's (``posenc_cli.generate``, ``posenc_cli.rope``: each
kind's maker, by its command's name), imported on first use (PEP 562) so that ``import posenc_cli`` and the command
line's start load nothing they do not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__  # noqa: F401  # one of __all__'s names

if TYPE_CHECKING:  # for type checkers, which do not run __getattr__ (a kind added to KINDS is a name without a line)
    from .api import alibi, convert, generate, identify, load, plan, relative, rope, save, sincos2d, window  # noqa: F401
    from .encodings import sinusoidal  # noqa: F401
    from .errors import FormatError, OutputError, PosencError, SpecError  # noqa: F401
    from .formats import FORMATS  # noqa: F401
    from .table import Table  # noqa: F401

#: The names that are not the API's, and the module of each; every other name is :mod:`posenc_cli.api`'s.
_ELSEWHERE = {
    "sinusoidal": ".encodings",
    **dict.fromkeys(("FormatError", "OutputError", "PosencError", "SpecError"), ".errors"),
    "FORMATS": ".formats",
    "Table": ".table",
}


#: The API's names that are not the package's: what the layers above the API use.
_NOT_HERE = frozenset({"Output", "c_write_options", "check_companion"})


def _names() -> list[str]:
    """Every name of the package: :data:`_ELSEWHERE`'s and the API's (each kind's maker among them)."""
    api = importlib.import_module(".api", __name__)  # a module being imported is returned as it stands
    return sorted({"__version__", *_ELSEWHERE, *getattr(api, "__all__", ())} - _NOT_HERE)


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return _names()
    if name in _ELSEWHERE:
        value = getattr(importlib.import_module(_ELSEWHERE[name], __name__), name)
    elif name.startswith("_") or name not in _names():  # a submodule not imported yet is looked up so too
        raise AttributeError(f"module 'posenc_cli' has no attribute {name!r}")
    else:
        value = getattr(importlib.import_module(".api", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return _names()
