"""``posenc relative``: the relative-position index of T5, DeBERTa and Shaw (:mod:`posenc_cli.encodings.relative`),
with the bias a checkpoint's learned table gives: parameters, maker, record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..encodings.names import RELATIVE_SCHEMES
from ..errors import SpecError
from ..params import BOOLEAN, INTEGER, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..read import PathLike
from ..system.capacity import check_memory
from ..table import Array, Table
from ..table import Param as Value
from ._bias import BIAS_PARAMS, BIAS_RECORDED, gather, index_dtype
from ._shared import INDEX_ELEMENT, Kind, arithmetic, check, same_names

__all__ = ["KIND", "PARAMS", "relative"]

_LENGTH = Range(
    "1 <= x <= 2**22", "query and key positions: past any model's context, and a (Q, K) index is the caller's to afford"
)


LENGTH = INTEGER.within(_LENGTH)


OFFSET = INTEGER.within(Range("0 <= x <= 2**22", "tokens already cached before the first query"))


BUCKETS = INTEGER.within(
    Range("2 <= x <= 2**10", "T5 32, DeBERTa-v3 256 (at least 4, and 2 for T5's decoder: checked by scheme)")
)


MAX_DISTANCE = INTEGER.within(Range("1 <= x <= 2**20", "T5 128, DeBERTa-v3 512, Shaw 16 to 64"))


PARAMS: tuple[Param, ...] = (
    Param("scheme", Choice(RELATIVE_SCHEMES), "Whose relative positions.", required=True),
    Param(
        "query_length",
        LENGTH,
        "Query positions (rows).",
        required=True,
        short="-Q",
        always_recorded=True,
        formerly="-q",  # until 0.1.0; -q is --quiet, as on every command
        near=("-n", "--seq-len"),
    ),
    Param("key_length", LENGTH, "Key positions (columns).  [default: offset + query length]", short="-k"),
    Param("buckets", BUCKETS, "t5, deberta: number of buckets.  [default: 32 for t5]"),
    Param(
        "max_distance",
        MAX_DISTANCE,
        "t5, deberta: the log buckets' reach; shaw: the clipping distance.  [default: 128 for t5]",
    ),
    Param("causal", BOOLEAN, "t5: the decoder's unidirectional buckets.", default=False),
    Param("offset", OFFSET, "Position of the first query (tokens already cached).  [default: 0; shaw: K - Q]"),
    arithmetic("HF T5Attention._relative_position_bucket (deberta: make_log_bucket_position; shaw: integers only)"),
    *BIAS_PARAMS,
)


DOC = """Write a relative-position index: T5's buckets, DeBERTa's log buckets or Shaw's clipped distances.

index[i, j] for query i (at position offset + i) and key j, as the framework computes it: t5 is HF
T5Attention._relative_position_bucket of k - q (bidirectional, or --causal for the decoder); deberta is HF
build_relative_position, q - k, log-bucketed with --buckets and --max-distance (values past max_distance keep
growing, as HF's); shaw is tensor2tensor's clip(k - q, -max_distance, max_distance) + max_distance. Every bucket
is exact. --bias FILE gathers a learned table (T5's relative_attention_bias.weight) into bias[h, i, j], HF's
compute_bias without the batch axis. --arithmetic framework gives the buckets HF's float32 code computes (its
log correctly rounded), which differ from the exact ones at a few distances of some settings; shaw's are the same.

\b
Examples:
  posenc relative --scheme t5 -Q 512 -o t5_buckets.h
  posenc relative --scheme t5 -Q 1 --offset 99 --causal -o step100.npy     # one decoder step, 99 cached
  posenc relative --scheme deberta -Q 512 --buckets 256 --max-distance 512 -o deberta.npy
  posenc relative --scheme t5 -Q 128 --bias model.safetensors \\
      --key encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight -o t5_bias.npz
"""


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
    arithmetic: str = "exact",
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

    ``arithmetic="framework"`` gives the buckets transformers' float32 code computes
    (:mod:`posenc_cli.encodings.framework_grids`: a bucket boundary whose float32 value falls on the other side of
    an integer moves by one); Shaw's index has no floating point, so its framework index is its exact one. It is
    recorded; ``"exact"`` (the default) is not.

    Examples
    --------
    >>> t = relative("t5", 4, buckets=32, max_distance=128)
    >>> t.arrays["index"].tolist()[0], t.params["dtype"]
    ([0, 17, 18, 19], 'int8')
    """
    from ..encodings import relative as relative_encoding

    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    check(  # each keyword against its own range first: an offset past it is the offset's fault
        KIND.inputs,
        query_length=query_length,
        key_length=key_length,
        offset=offset,
        buckets=buckets,
        max_distance=max_distance,
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
    params: dict[str, Value] = {"scheme": scheme, "query_length": q, "key_length": k, "offset": o}
    check_memory(q * k * KIND.work_per_value, f"the relative index ({q} x {k})")
    rows, what = 0, ""
    if scheme == "t5":
        b, d = relative_encoding.check_t5(
            32 if buckets is None else buckets, 128 if max_distance is None else max_distance, bool(causal)
        )
        params.update(buckets=b, max_distance=d, causal=bool(causal))
        if arithmetic == "framework":
            index = _t5_framework(q, k, o, b, d, bool(causal))
        else:
            index = relative_encoding.t5_index(q, k, buckets=b, max_distance=d, causal=bool(causal), offset=o)
        rows, what = b, "T5's relative_attention_bias (buckets, heads)"
    elif scheme == "deberta":
        setting = relative_encoding.check_deberta(buckets, max_distance)
        if setting is not None:
            params.update(buckets=setting[0], max_distance=setting[1])
        index = relative_encoding.deberta_index(q, k, buckets=buckets, max_distance=max_distance, offset=o)
        if setting is not None and arithmetic == "framework":
            from ..encodings import framework_grids

            index = framework_grids.deberta_buckets(relative_encoding.deberta_index(q, k, offset=o), *setting)
    else:
        d = relative_encoding.check_shaw(max_distance)
        params["max_distance"] = d
        index = relative_encoding.shaw_index(q, k, max_distance=d, offset=o)
        rows, what = 2 * d + 1, "Shaw's relative table (2 * max_distance + 1, heads)"
    stored = index_dtype(index, dtype)
    params["dtype"] = stored.dtype.name
    extra, bias_params = gather(stored, bias, key, rows, what)
    params.update(bias_params)
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    arrays: dict[str, Array] = {"index": stored, **extra}
    axes = {"index": ("query", "key"), "bias": ("heads", "query", "key")}
    return Table("relative", arrays, params, {name: axes[name] for name in arrays})


def _t5_framework(q: int, k: int, o: int, buckets: int, max_distance: int, causal: bool) -> np.ndarray:
    """T5's index as HF's float32 code computes it (the exact index's arrangement, the framework's buckets)."""
    from ..encodings import framework_grids

    r = np.arange(k, dtype=np.int64)[None, :] - np.arange(o, o + q, dtype=np.int64)[:, None]
    n = buckets if causal else buckets // 2
    a = np.maximum(-r, 0) if causal else np.abs(r)
    table = framework_grids.t5_buckets(np.arange(int(a.max()) + 1, dtype=np.int64), n, max_distance)  # each once
    out: np.ndarray = table[a] if causal else (r > 0) * n + table[a]
    return out


def _relative_work(p: Mapping[str, Any]) -> int:
    return int(p["query_length"]) * int(p.get("key_length", p["query_length"])) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "scheme": TEXT, "query_length": LENGTH, "key_length": LENGTH, "offset": OFFSET,
    "buckets": BUCKETS, "max_distance": MAX_DISTANCE, "causal": BOOLEAN, "dtype": TEXT,
    "bias_key": TEXT, "bias_heads": INTEGER, "bias_sha256": TEXT, "arithmetic": TEXT,
}

# fmt: on

KIND = Kind(
    command="relative",
    table="relative",
    short_help="Write a relative-position index (T5, DeBERTa, Shaw).",
    doc=DOC,
    params=PARAMS,
    make=relative,
    lazy=False,
    recorded=RECORDED,
    recorded_as=BIAS_RECORDED,
    from_record=same_names(
        ("scheme", "query_length", "key_length", "offset", "buckets", "max_distance", "causal", "dtype", "arithmetic")
    ),
    work_per_value=48,
    work=_relative_work,
    element=INDEX_ELEMENT,
    files=("bias",),
)
