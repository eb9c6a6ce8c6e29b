"""What the index kinds (``posenc relative``, ``posenc window``) share: the index's integer type, and a learned table
taken from a checkpoint and gathered by the index (``--bias``, ``--key``): T5's ``relative_attention_bias.weight``,
Swin's and BEiT's ``relative_position_bias_table``.

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

from ..dtypes import INDEX_DTYPES, decode
from ..errors import SpecError
from ..params import TEXT, Param
from ..read import PathLike, existing, load, names
from ..system.capacity import check_memory
from ..table import Array, RowSource, array_sha256
from ..table import Param as Value

__all__ = ["BIAS_PARAMS", "BIAS_RECORDED", "LEARNED_SUFFIXES", "Weights", "gather", "index_dtype", "weight_table"]

BIAS_PARAMS: tuple[Param, ...] = (
    Param(
        "bias",
        TEXT,
        "A checkpoint's learned table to gather (.safetensors, .npz, .npy, .h5): adds the array bias.",
    ),
    Param("key", TEXT, "The array of --bias to take (needed when the file holds several)."),
)


#: A gathered bias records the gathered array's sha256 and the key it was read under (not the file's path).
BIAS_RECORDED = {"bias": ("bias_sha256",), "key": ("bias_key",)}


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


def index_dtype(index: np.ndarray, dtype: str | None) -> np.ndarray:
    """``index`` stored as ``dtype``, or as the smallest of int8, int16, int32 (then int64) that holds it."""
    low, high = int(index.min(initial=0)), int(index.max(initial=0))
    fits = [t for t in INDEX_DTYPES if np.iinfo(t).min <= low and high <= np.iinfo(t).max]
    if dtype is None:
        return index.astype(fits[0])
    if dtype not in INDEX_DTYPES:
        raise SpecError(
            f"dtype of an index table must be one of {', '.join(INDEX_DTYPES)}, got {dtype!r}", param="dtype"
        )
    if dtype not in fits:
        raise SpecError(
            f"this index runs from {low} to {high}, which {dtype} cannot hold; use {fits[0]} or wider", param="dtype"
        )
    return index.astype(dtype)


def gather(
    index: np.ndarray, bias: PathLike | np.ndarray | None, key: str | None, rows: int, what: str
) -> tuple[dict[str, Array], dict[str, Value]]:
    """The ``bias`` array ``(heads, *index.shape)``, ``weights[index]`` with heads first, and its parameters."""
    if bias is None:
        if key is not None:
            raise SpecError("key names the bias table in a file: give the file too (--bias)", param="key")
        return {}, {}
    weights = weight_table(bias, key, rows=rows, what=what)
    heads = weights.values.shape[1]
    check_memory(
        2 * heads * index.size * weights.values.dtype.itemsize,
        f"the bias ({heads} x {' x '.join(map(str, index.shape))})",
    )
    gathered = np.ascontiguousarray(np.moveaxis(weights.values[index], -1, 0))
    params: dict[str, Value] = {"bias_heads": heads, "bias_sha256": array_sha256(gathered)}
    if weights.key is not None:
        params["bias_key"] = weights.key
    return {"bias": gathered}, params
