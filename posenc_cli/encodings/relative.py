"""Relative-position index tables: T5's buckets, DeBERTa's log buckets and Shaw et al.'s clipped distances.

Each is an integer matrix ``index[i, j]`` over query ``i`` (at position ``q = offset + i``) and key ``j`` (at
position ``k = j``), exactly as the framework builds it:

``t5`` (HF ``T5Attention._relative_position_bucket`` over ``compute_bias``'s ``memory - context``)
    ``r = k - q``. Bidirectional (the encoder): ``n = buckets // 2``, ``index = (r > 0) * n`` plus the bucket of
    ``a = |r|``; causal (``--causal``, the decoder): ``n = buckets`` and ``a = max(-r, 0)``. With ``e = n // 2``
    the bucket of ``a`` is ``a`` when ``a < e``, else
    ``min(e + floor((n - e) * ln(a / e) / ln(max_distance / e)), n - 1)``.
``deberta`` (HF ``deberta_v2`` ``build_relative_position`` and ``make_log_bucket_position``)
    ``r = q - k`` (note the order: query minus key). Without buckets the index is ``r``. With ``buckets`` and
    ``max_distance`` (HF's ``position_buckets`` and ``max_relative_positions``), ``m = buckets // 2``: ``r`` when
    ``|r| <= m``, else ``sign(r) * (m + ceil((m - 1) * ln(|r| / m) / ln((max_distance - 1) / m)))``. Nothing is
    clipped: past ``max_distance`` the values keep growing, as HF's do (its attention clips them afterwards).
``shaw`` (tensor2tensor ``_generate_relative_positions_matrix``; CTranslate2 ``make_relative_positions``)
    ``clip(k - q, -max_distance, max_distance) + max_distance``: the row of the ``2 * max_distance + 1`` learned
    embeddings. tensor2tensor's queries are the last ``Q`` of the ``K`` positions, so ``offset`` defaults to
    ``K - Q`` for this scheme.

Every bucket is the exact value of its formula: the logarithms are never evaluated in floating point. The buckets
are step functions of ``a``; each step's first ``a`` is found from a floating-point estimate and then proven by an
integer comparison (``floor((n - e) * ln(a / e) / ln(D / e)) >= s`` exactly when ``a**(n - e) * e**s >=
D**s * e**(n - e)``). HF computes the same formulas in float32 (``torch.log``); ``tests/test_relative_goldens.py``
checks every golden transformers itself made (sweeps of 80 T5 and 6 DeBERTa settings over every relative position to
four max distances among them), and they agree on every entry. They do not agree everywhere: float32 moves a
bucket boundary by one distance in 40 causal T5 settings (none of the published ones) and 58 DeBERTa ones (none
at 8 buckets, none of the published ones) among those ``tests/test_framework_grids.py`` searched; ``arithmetic=
"framework"`` (:mod:`posenc_cli.encodings.framework_grids`) gives transformers' buckets there.

Examples
--------
>>> t5_index(4, 4, buckets=32, max_distance=128).tolist()
[[0, 17, 18, 19], [1, 0, 17, 18], [2, 1, 0, 17], [3, 2, 1, 0]]
>>> deberta_index(3, 3).tolist()
[[0, -1, -2], [1, 0, -1], [2, 1, 0]]
>>> shaw_index(2, 4, max_distance=1, offset=2).tolist()
[[0, 0, 1, 2], [0, 0, 0, 1]]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from posenc_cli.encodings.names import RELATIVE_SCHEMES
from posenc_cli.encodings.sinusoid import show
from posenc_cli.errors import SpecError

__all__ = [
    "MAX_BUCKETS",
    "MAX_DISTANCE",
    "MAX_LENGTH",
    "SCHEMES",
    "check_lengths",
    "check_shaw",
    "deberta_buckets",
    "deberta_index",
    "shaw_index",
    "t5_buckets",
    "t5_index",
]

SCHEMES = RELATIVE_SCHEMES
#: The longest query or key axis posenc makes: past any model's context, and a (Q, K) matrix is the caller's to
#: afford (:func:`posenc_cli.kinds.relative.relative` checks the memory first).
MAX_LENGTH = 1 << 22
#: Bucket counts and distances far beyond any model's (T5 uses 32 and 128, DeBERTa-v3 256 and 512).
MAX_BUCKETS = 1 << 10
MAX_DISTANCE = 1 << 20
#: The most distinct log buckets posenc proves for one DeBERTa table (each is a big-integer comparison).
MAX_STEPS = 1 << 16


def _integer(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise SpecError(f"{name} must be an integer from {low} to {high}, got {show(value)}", param=name)
    return int(value)


def check_lengths(query_length: object, key_length: object, offset: object) -> tuple[int, int, int]:
    """Validate the query length, key length and query offset; ``SpecError`` names the culprit."""
    q = _integer(query_length, "query_length", 1, MAX_LENGTH)
    k = _integer(key_length, "key_length", 1, MAX_LENGTH)
    o = _integer(offset, "offset", 0, MAX_LENGTH)
    return q, k, o


def _distances(query_length: int, key_length: int, offset: int, sign: int) -> np.ndarray:
    """``sign * (k - q)`` for every query ``i`` (position ``offset + i``) and key ``k``, as int64."""
    q = np.arange(offset, offset + query_length, dtype=np.int64)[:, None]
    k = np.arange(key_length, dtype=np.int64)[None, :]
    out: np.ndarray = (k - q) * sign
    return out


# -------------------------------------------------------------------------------------------------------- T5
def _t5_steps(n: int, max_distance: int) -> np.ndarray:
    """The first ``a`` of each log bucket ``e + s``, ``s = 1 .. n - e - 1``, exactly (``e = n // 2``)."""
    e = n // 2
    span = n - e
    firsts = []
    for s in range(1, span):
        # smallest integer a with a**span * e**s >= max_distance**s * e**span (the exact floor reaching s)
        target = max_distance**s * e**span
        guess = max(e, math.floor(e * (max_distance / e) ** (s / span)) - 1)
        a = guess
        while a > e and (a - 1) ** span * e**s >= target:
            a -= 1
        while a**span * e**s < target:
            a += 1
        firsts.append(a)
    return np.array(firsts, dtype=np.int64)


def check_t5(buckets: object, max_distance: object, causal: bool) -> tuple[int, int]:
    """Validate T5's bucket count and distance; the log branch needs ``max_distance`` above the exact range."""
    b = _integer(buckets, "buckets", 2 if causal else 4, MAX_BUCKETS)
    d = _integer(max_distance, "max_distance", 2, MAX_DISTANCE)
    e = (b if causal else b // 2) // 2
    if d <= e:
        raise SpecError(
            f"max_distance must be greater than {e} (the last exact distance, buckets // {2 if causal else 4}) "
            f"for {b} {'causal' if causal else 'bidirectional'} buckets, got {d}",
            param="max_distance",
        )
    return b, d


def t5_buckets(a: np.ndarray, n: int, max_distance: int) -> np.ndarray:
    """The bucket of each distance ``a >= 0`` among ``n`` buckets (half the count when bidirectional)."""
    e = n // 2
    steps = _t5_steps(n, max_distance)
    logs = e + np.searchsorted(steps, a, side="right")
    out: np.ndarray = np.where(a < e, a, logs)
    return out


def t5_index(
    query_length: int,
    key_length: int,
    *,
    buckets: int = 32,
    max_distance: int = 128,
    causal: bool = False,
    offset: int = 0,
) -> np.ndarray:
    """T5's ``(query_length, key_length)`` bucket matrix as int64 (checked parameters)."""
    q, k, o = check_lengths(query_length, key_length, offset)
    b, d = check_t5(buckets, max_distance, causal)
    r = _distances(q, k, o, 1)
    if causal:
        return t5_buckets(np.maximum(-r, 0), b, d)
    n = b // 2
    out: np.ndarray = (r > 0) * n + t5_buckets(np.abs(r), n, d)
    return out


# --------------------------------------------------------------------------------------------------- DeBERTa
def check_deberta(buckets: object, max_distance: object) -> tuple[int, int] | None:
    """Validate DeBERTa's bucketing: both or neither; ``(max_distance - 1) / (buckets // 2)`` must exceed 1."""
    if buckets is None and max_distance is None:
        return None
    if buckets is None or max_distance is None:
        missing = "buckets" if buckets is None else "max_distance"
        raise SpecError(
            "deberta buckets relative positions only with both buckets and max_distance (HF's position_buckets and "
            f"max_relative_positions); give {missing} too, or neither for the plain q - k",
            param=missing,
        )
    b = _integer(buckets, "buckets", 4, MAX_BUCKETS)
    d = _integer(max_distance, "max_distance", 2, MAX_DISTANCE)
    if d - 1 <= b // 2:
        raise SpecError(
            f"max_distance must be greater than buckets // 2 + 1 = {b // 2 + 1} (the log buckets' base is "
            f"(max_distance - 1) / (buckets // 2)), got {d}",
            param="max_distance",
        )
    return b, d


def _deberta_steps(m: int, max_distance: int, largest: int) -> np.ndarray:
    """The last ``a`` of each log bucket ``m + c`` (``c = 1, 2, ...``) up to ``largest``, exactly.

    ``ceil((m - 1) * ln(a / m) / ln(B)) <= c`` with ``B = (max_distance - 1) / m`` exactly when
    ``a**(m - 1) * m**c <= (max_distance - 1)**c * m**(m - 1)``.
    """
    p = max_distance - 1
    count = (m - 1) * math.log(largest / m) / math.log(p / m) + 1  # the distinct log buckets, roughly
    if count > MAX_STEPS:
        raise SpecError(
            f"these DeBERTa buckets would take about {count:.0f} distinct values up to distance {largest}; posenc "
            f"makes at most {MAX_STEPS} (a larger max_distance or fewer buckets gives fewer)",
            param="max_distance",
        )
    lasts: list[int] = []
    c = 1
    while not lasts or lasts[-1] < largest:
        bound = p**c * m ** (m - 1)
        a = max(m, math.floor(m * (p / m) ** (c / (m - 1))) + 1)
        while a > m and a ** (m - 1) * m**c > bound:
            a -= 1
        while (a + 1) ** (m - 1) * m**c <= bound:
            a += 1
        lasts.append(a)
        c += 1
    return np.array(lasts, dtype=np.int64)


def deberta_buckets(r: np.ndarray, buckets: int, max_distance: int) -> np.ndarray:
    """``make_log_bucket_position`` of the relative positions ``r`` (int64), exactly."""
    m = buckets // 2
    a = np.abs(r)
    largest = int(a.max(initial=0))
    if largest <= m:
        return r.copy()
    lasts = _deberta_steps(m, max_distance, largest)
    # a in (m, lasts[0]] is bucket m + 1; a in (lasts[c-1], lasts[c]] is bucket m + c + 1
    logs = m + 1 + np.searchsorted(lasts, a, side="left")
    out: np.ndarray = np.where(a <= m, r, np.sign(r) * logs)
    return out


def deberta_index(
    query_length: int,
    key_length: int,
    *,
    buckets: int | None = None,
    max_distance: int | None = None,
    offset: int = 0,
) -> np.ndarray:
    """DeBERTa's ``(query_length, key_length)`` relative positions ``q - k``, log-bucketed with both settings."""
    q, k, o = check_lengths(query_length, key_length, offset)
    setting = check_deberta(buckets, max_distance)
    r = _distances(q, k, o, -1)
    return r if setting is None else deberta_buckets(r, *setting)


# ------------------------------------------------------------------------------------------------------ Shaw
def check_shaw(max_distance: object) -> int:
    """Validate Shaw's clipping distance."""
    return _integer(max_distance, "max_distance", 1, MAX_DISTANCE)


def shaw_index(query_length: int, key_length: int, *, max_distance: int, offset: int = 0) -> np.ndarray:
    """Shaw et al.'s ``clip(k - q, -max_distance, max_distance) + max_distance`` (int64)."""
    q, k, o = check_lengths(query_length, key_length, offset)
    d = check_shaw(max_distance)
    out: np.ndarray = np.clip(_distances(q, k, o, 1), -d, d) + d
    return out


#: Each scheme's index function, by name.
INDEX: dict[str, Callable[..., np.ndarray]] = {"t5": t5_index, "deberta": deberta_index, "shaw": shaw_index}
