"""The index kinds' tables: ``posenc relative`` (T5, DeBERTa, Shaw) and ``posenc window`` (Swin, BEiT, SwinV2),
with the bias a checkpoint's learned table gives. Re-exported by :mod:`posenc_cli.make` (and the API), like every
kind's maker; their keywords are the parameters of :data:`posenc_cli.kinds.KINDS`."""

from __future__ import annotations

import numpy as np

from . import _resources, checkpoint, ranges
from .dtypes import INDEX_DTYPES
from .encodings import relative as relative_encoding
from .encodings import window as window_encoding
from .errors import SpecError
from .read import PathLike
from .table import Array, Param, Table, array_sha256

__all__ = ["relative", "window"]


def _index_dtype(index: np.ndarray, dtype: str | None) -> np.ndarray:
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


def _gather(
    index: np.ndarray, bias: PathLike | np.ndarray | None, key: str | None, rows: int, what: str
) -> tuple[dict[str, Array], dict[str, Param]]:
    """The ``bias`` array ``(heads, *index.shape)``, ``weights[index]`` with heads first, and its parameters."""
    if bias is None:
        if key is not None:
            raise SpecError("key names the bias table in a file: give the file too (--bias)", param="key")
        return {}, {}
    weights = checkpoint.weight_table(bias, key, rows=rows, what=what)
    heads = weights.values.shape[1]
    _resources.check_memory(
        2 * heads * index.size * weights.values.dtype.itemsize,
        f"the bias ({heads} x {' x '.join(map(str, index.shape))})",
    )
    gathered = np.ascontiguousarray(np.moveaxis(weights.values[index], -1, 0))
    params: dict[str, Param] = {"bias_heads": heads, "bias_sha256": array_sha256(gathered)}
    if weights.key is not None:
        params["bias_key"] = weights.key
    return {"bias": gathered}, params


def relative(
    scheme: str,
    query_length: int,
    key_length: int | None = None,
    *,
    buckets: int | None = None,
    max_distance: int | None = None,
    causal: bool = False,
    offset: int | None = None,
    bias: PathLike | np.ndarray | None = None,
    key: str | None = None,
    dtype: str | None = None,
) -> Table:
    """A relative-position index (T5 buckets, DeBERTa log buckets, Shaw clipping) as a :class:`Table` of kind
    ``"relative"``: array ``index`` ``(query_length, key_length)``; with ``bias`` also ``bias`` ``(heads,
    query_length, key_length)``.

    Queries are at positions ``offset .. offset + query_length - 1`` (HF's ``cache_position``: the tokens already
    in the cache), keys at ``0 .. key_length - 1``; ``key_length`` defaults to ``offset + query_length`` and
    ``offset`` to 0 (``shaw``: ``key_length - query_length``, tensor2tensor's last queries).
    :mod:`posenc_cli.encodings.relative` defines each scheme exactly:

    - ``t5``: ``buckets`` (default 32), ``max_distance`` (default 128), ``causal`` (the decoder's unidirectional
      buckets).
    - ``deberta``: ``q - k``, log-bucketed when ``buckets`` and ``max_distance`` are both given.
    - ``shaw``: ``clip(k - q, -max_distance, max_distance) + max_distance``; ``max_distance`` is required.

    ``bias`` is a learned table ``(rows, heads)`` (a file posenc reads, the array ``key`` in it; or an array):
    T5's ``relative_attention_bias.weight`` (``buckets`` rows) or Shaw's ``2 * max_distance + 1`` rows;
    ``bias[h, i, j] = table[index[i, j], h]``, HF's ``compute_bias`` without the batch axis. ``dtype`` is the
    index's integer type (default: the smallest of int8, int16, int32 that holds it).

    Examples
    --------
    >>> t = relative("t5", 4, buckets=32, max_distance=128)
    >>> t.arrays["index"].tolist()[0], t.params["dtype"]
    ([0, 17, 18, 19], 'int8')
    """
    ranges.check(  # each keyword against its own range first: an offset past it is the offset's fault
        query_length=query_length, key_length=key_length, offset=offset, buckets=buckets, max_distance=max_distance
    )
    if scheme not in relative_encoding.SCHEMES:
        raise SpecError(f"scheme must be one of {', '.join(relative_encoding.SCHEMES)}, got {scheme!r}", param="scheme")
    if not isinstance(causal, (bool, np.bool_)):
        raise SpecError(f"causal must be true or false, got {causal!r}", param="causal")
    if causal and scheme != "t5":
        raise SpecError(f"causal applies to t5's decoder buckets, not {scheme}", param="causal")
    if scheme == "deberta" and bias is not None:
        raise SpecError(
            "a bias is gathered for t5 and shaw; DeBERTa's attention takes its embeddings, not a bias", param="bias"
        )
    if scheme == "shaw" and buckets is not None:
        raise SpecError("buckets applies to t5 and deberta; shaw clips at max_distance", param="buckets")
    if scheme == "shaw" and max_distance is None:
        raise SpecError(
            "shaw needs max_distance: the clipping distance K of its 2K + 1 embeddings", param="max_distance"
        )
    q, _, _ = relative_encoding.check_lengths(query_length, 1, 0)
    if key_length is None:
        key_length = q + (offset if isinstance(offset, int) else 0)
    if offset is None:
        k = relative_encoding.check_lengths(q, key_length, 0)[1]
        if scheme == "shaw" and q > k:
            raise SpecError(
                f"shaw puts the {q} queries at the last of the {k} key positions (tensor2tensor); with more queries "
                "than keys give the offset (--offset)",
                param="offset",
            )
        offset = k - q if scheme == "shaw" else 0
    q, k, o = relative_encoding.check_lengths(query_length, key_length, offset)
    params: dict[str, Param] = {"scheme": scheme, "query_length": q, "key_length": k, "offset": o}
    _resources.check_memory(q * k * _resources.WORK_BYTES_PER_VALUE["relative"], f"the relative index ({q} x {k})")
    rows, what = 0, ""
    if scheme == "t5":
        b, d = relative_encoding.check_t5(
            32 if buckets is None else buckets, 128 if max_distance is None else max_distance, bool(causal)
        )
        params.update(buckets=b, max_distance=d, causal=bool(causal))
        index = relative_encoding.t5_index(q, k, buckets=b, max_distance=d, causal=bool(causal), offset=o)
        rows, what = b, "T5's relative_attention_bias (buckets, heads)"
    elif scheme == "deberta":
        setting = relative_encoding.check_deberta(buckets, max_distance)
        if setting is not None:
            params.update(buckets=setting[0], max_distance=setting[1])
        index = relative_encoding.deberta_index(q, k, buckets=buckets, max_distance=max_distance, offset=o)
    else:
        d = relative_encoding.check_shaw(max_distance)
        params["max_distance"] = d
        index = relative_encoding.shaw_index(q, k, max_distance=d, offset=o)
        rows, what = 2 * d + 1, "Shaw's relative table (2 * max_distance + 1, heads)"
    stored = _index_dtype(index, dtype)
    params["dtype"] = stored.dtype.name
    extra, bias_params = _gather(stored, bias, key, rows, what)
    params.update(bias_params)
    arrays: dict[str, Array] = {"index": stored, **extra}
    axes = {"index": ("query", "key"), "bias": ("heads", "query", "key")}
    return Table("relative", arrays, params, {name: axes[name] for name in arrays})


def window(
    scheme: str,
    window: tuple[int, int],
    *,
    pretrained_window: tuple[int, int] | None = None,
    bias: PathLike | np.ndarray | None = None,
    key: str | None = None,
    dtype: str | None = None,
) -> Table:
    """Window attention's relative-position tables (Swin, BEiT, SwinV2) as a :class:`Table` of kind ``"window"``.

    ``window`` is ``(H, W)`` tokens. Arrays: ``index`` (timm's ``relative_position_index``: ``(HW, HW)``; BEiT
    ``(HW + 1, HW + 1)`` with its class-token row and column); for ``swinv2`` also ``coords`` ``(2H - 1, 2W - 1,
    2)``, the log-spaced coordinates its bias MLP reads (divided by ``pretrained_window``'s sides minus one when
    given); with ``bias`` (a ``relative_position_bias_table`` of ``(2H - 1)(2W - 1)`` rows, BEiT's 3 more, one
    column per head) also ``bias`` ``(heads, *index.shape)`` as the attention adds it. SwinV2 computes its table
    with an MLP, so it takes no ``bias``. :mod:`posenc_cli.encodings.window` defines each array.

    Examples
    --------
    >>> t = window("swin", (2, 2))
    >>> t.arrays["index"].tolist()[0], t.params["dtype"]
    ([4, 3, 1, 0], 'int8')
    """
    ranges.check(window=window, pretrained_window=pretrained_window)
    if scheme not in window_encoding.SCHEMES:
        raise SpecError(f"scheme must be one of {', '.join(window_encoding.SCHEMES)}, got {scheme!r}", param="scheme")
    height, width = window_encoding.check_window(tuple(window) if isinstance(window, list) else window)
    if pretrained_window is not None and tuple(pretrained_window) == (0, 0):
        pretrained_window = None  # timm's "no pretrained window"
    if pretrained_window is not None and scheme != "swinv2":
        raise SpecError(f"pretrained_window applies to swinv2's coordinates, not {scheme}", param="pretrained_window")
    if bias is not None and scheme == "swinv2":
        raise SpecError(
            "swinv2's bias table is the output of the model's cpb_mlp; posenc gathers stored tables (swin, beit) "
            "and writes swinv2's coords, the MLP's input",
            param="bias",
        )
    pretrained = None
    if pretrained_window is not None:
        pretrained = window_encoding.check_window(
            tuple(pretrained_window) if isinstance(pretrained_window, list) else pretrained_window, "pretrained_window"
        )
    tokens = height * width + (scheme == "beit")
    _resources.check_memory(
        tokens * tokens * _resources.WORK_BYTES_PER_VALUE["window"], f"the window index ({tokens} x {tokens})"
    )
    index = window_encoding.beit_index(height, width) if scheme == "beit" else window_encoding.swin_index(height, width)
    stored = _index_dtype(index, dtype)
    params: dict[str, Param] = {"scheme": scheme, "window_height": height, "window_width": width}
    arrays: dict[str, Array] = {"index": stored}
    if scheme == "swinv2":
        arrays["coords"] = window_encoding.swinv2_coords(height, width, pretrained)
        if pretrained is not None:
            params.update(pretrained_height=pretrained[0], pretrained_width=pretrained[1])
    params["dtype"] = stored.dtype.name
    rows = (2 * height - 1) * (2 * width - 1) + 3 * (scheme == "beit")
    what = f"the relative_position_bias_table ({rows}, heads)"
    extra, bias_params = _gather(stored, bias, key, rows, what)
    arrays.update(extra)
    params.update(bias_params)
    axes = {"index": ("query", "key"), "coords": ("dy", "dx", "yx"), "bias": ("heads", "query", "key")}
    return Table("window", arrays, params, {name: axes[name] for name in arrays})
