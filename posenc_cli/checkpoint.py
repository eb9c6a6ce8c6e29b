"""A learned table taken from a checkpoint: T5's ``relative_attention_bias.weight``, Swin's and BEiT's
``relative_position_bias_table``.

:func:`weight_table` reads one 2-D array from any file posenc reads (.safetensors, .npz, .npy, .h5; through
:func:`posenc_cli.read.load`, so the file is untrusted: a regular file, read within the memory limit; from a
``.safetensors`` model file only the tensor named is read, whatever else the file holds) and checks
it is what the caller gathers from: ``rows`` rows (one per bucket or relative offset), one column per head, finite
floating-point values. bfloat16 and float16 weights are widened to float32 and float32 ones kept, exactly; float64
stays float64. Nothing else is accepted.

Examples
--------
>>> import numpy as np
>>> w = weight_table(np.arange(6, dtype=np.float32).reshape(3, 2), None, rows=3, what="a test table")
>>> w.values.dtype.name, w.values.shape
('float32', (3, 2))
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .dtypes import decode
from .errors import SpecError
from .read import PathLike, existing, load, names
from .table import RowSource

__all__ = ["LEARNED_SUFFIXES", "Weights", "weight_table"]

#: How the tables posenc gathers from end in the state dicts of transformers and timm: the keys suggested when a
#: file holds several arrays and no key is given.
LEARNED_SUFFIXES = ("relative_attention_bias.weight", "relative_position_bias_table")
_SHOWN = 8  # keys named in a message, at most


@dataclass(frozen=True)
class Weights:
    """A checked learned table: ``values`` ``(rows, heads)`` and the key it was read under."""

    values: np.ndarray
    key: str | None


def _keys_hint(keys: list[str]) -> str:
    likely = [k for k in keys if k.endswith(LEARNED_SUFFIXES)] or keys
    shown = ", ".join(repr(k) for k in likely[:_SHOWN])
    more = f" and {len(likely) - _SHOWN} more" if len(likely) > _SHOWN else ""
    return f"{shown}{more}"


def _pick(source: PathLike, key: str | None, keys: list[str], what: str) -> str:
    """``key``, or the file's only array; ``SpecError`` naming the likely keys when there is no such choice."""
    if key is None and len(keys) == 1:
        return keys[0]
    if key is None:
        raise SpecError(
            f"{os.fspath(source)!r} holds {len(keys)} arrays; name {what} with --key (key=), e.g. {_keys_hint(keys)}",
            param="key",
        )
    if key not in keys:
        raise SpecError(f"{os.fspath(source)!r} has no array {key!r}; it holds {_keys_hint(keys)}", param="key")
    return key


def weight_table(source: PathLike | np.ndarray, key: str | None, *, rows: int, what: str) -> Weights:
    """The ``(rows, heads)`` table ``key`` of ``source`` (a file, or an array given in memory), checked.

    ``what`` names the table in messages (``"T5's relative_attention_bias (buckets, heads)"``). Raises
    :class:`~posenc_cli.errors.SpecError` (``param="bias"`` or ``"key"``) naming what is wrong and what is
    allowed; a file that cannot be read raises :class:`~posenc_cli.errors.FormatError`.
    """
    if isinstance(source, np.ndarray):
        if key is not None:
            raise SpecError("key names an array of a file; the bias was given as an array", param="key")
        stored, params = source, {}
    else:
        if not isinstance(source, (str, os.PathLike)):
            raise SpecError(f"bias must be a file or an array, got {type(source).__name__}", param="bias")
        existing(source, "bias", "the bias file")
        listed = names(source)  # a model file's tensors, listed without reading them (None: not listed)
        if listed is not None:
            key = _pick(source, key, listed, what)
        table = load(source, part=key)
        key = _pick(source, key, list(table.arrays), what)
        array = table.arrays[key]
        stored = np.asarray(array) if isinstance(array, RowSource) else array
        params = dict(table.params)
    bfloat16 = params.get("dtype") == "bfloat16" and stored.dtype.kind == "u" and stored.dtype.itemsize == 2
    if stored.dtype.kind != "f" and not bfloat16:
        raise SpecError(f"{what} must hold floating-point weights, got {stored.dtype.name}", param="bias")
    if stored.ndim != 2 or stored.shape[0] != rows or stored.shape[1] < 1:
        raise SpecError(
            f"{what} must have shape ({rows}, heads) for these settings, got {tuple(stored.shape)}", param="bias"
        )
    values = decode(stored, params) if bfloat16 else np.asarray(stored, np.float64)
    if not np.isfinite(values).all():
        raise SpecError(f"{what} holds NaN or infinite weights", param="bias")
    wide = stored.dtype == np.float64
    return Weights(np.ascontiguousarray(values, np.float64 if wide else np.float32), key)
