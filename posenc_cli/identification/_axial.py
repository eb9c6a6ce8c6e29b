"""Hypotheses for the axial RoPE caches of vision towers, FLUX and the video models (``posenc axial``: ``cos`` or
``sin``), read as :mod:`._vision` reads its grids.

The first row is every cosine 1 (every sine 0). A table whose first half repeats is Pixtral's or Qwen-VL's
``[h | w | h | w]``; one whose columns come in equal pairs is FLUX's. Each row's position on an axis is read off
the values: rows with equal columns of that axis share a position, numbered in their order of first appearance
(every style's row order meets a new row or column in increasing order). The grid is the largest positions, and
the style's own row order (Pixtral's row-major patches, Qwen's spatial-merge blocks and frames, Qwen2.5-VL's
windows, FLUX's text tokens then latent) must give exactly the positions read. Theta is read from the longer
axis's columns (``theta**(-4j/d)``; FLUX: ``theta**(-2k/axes_dim)``).

Columns in equal pairs are also Wan's and HunyuanVideo's ``[t | h | w]`` (rows ``(t, h, w)`` row-major, the
default ``(1, 2, 2)`` patch; Wan's widths fixed by ``d``, HunyuanVideo's ``[16, 56, 56]`` or read where the w
and h columns start to move; theta 256 its default) and EVA-02's ``[h | w]`` (rows row-major; ``ref_grid`` read
as ``side`` times the frequency-1 column's step per position, where that is not 1). A one-frame video without
text tokens is FLUX's table too: the video style whose defaults it is comes before FLUX. Llama 4's table has
its angle-0 row last (the class token): when the first row is neither, the last row gives the part, and the
pairs must be ``[w | h]`` at ``(column + 1, row + 1)`` over a square grid. timm's pixel-band ``RotaryEmbedding``
(``timm-pixel``) has neither: its first row is at ``(-1, -1)`` and its last at ``(1, 1)``, a sine's last row the
first negated, a cosine's equal to it (its first value ``cos(-pi) = -1``); its ``[h | w]`` pairs run row-major, and
``max_res`` is timm's default 224 (the bands' top is not read).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SpecError
from ._grid import MIN_SIDE, frequency_law, grid_width, with_default
from ._hypothesis import Hypothesis
from ._readoff import column_rates

__all__ = ["axial_hypotheses"]


def _positions(columns: np.ndarray) -> np.ndarray:
    """Each row's position on one axis: rows of equal ``columns`` share one, numbered in order of first appearance."""
    _, first, inverse = np.unique(columns, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


@dataclass(frozen=True)
class _Reading:
    """Positions read off a table: per row its ``h`` and ``w`` position, and the table's part."""

    part: str
    h: np.ndarray
    w: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


def _axial_theta(
    values: np.ndarray, reading: _Reading, h_cols: np.ndarray, w_cols: np.ndarray, step: float
) -> list[float]:
    """Theta read from the longer axis's columns at one row per position (10000 when it cannot be read)."""
    positions, cols = (reading.h, h_cols) if reading.h.max() >= reading.w.max() else (reading.w, w_cols)
    count = int(positions.max()) + 1
    if count < 3 or len(cols) < 2:
        return [10000.0]
    _, rows = np.unique(positions, return_index=True)
    rates, _ = column_rates(values[np.ix_(rows, cols)], np.arange(count), reading.part)
    return with_default(frequency_law(rates, float(count - 1), step))


def _axial(
    style: str,
    grid: tuple[int, ...],
    d: int,
    part: str,
    thetas: list[float],
    options: dict[str, Any],
    positions: np.ndarray,
) -> Iterator[Hypothesis]:
    """The ``posenc axial`` hypotheses of a style whose own row order gives ``positions`` (``(rows, axes)``: h, w,
    or a video's t, h, w), ``theta`` left out where it is the style's default (:data:`STYLE_THETA`)."""
    from ..encodings import axial_rope

    settings = {k: v for k, v in options.items() if v is not None}
    try:
        spec = axial_rope.resolve(style, grid, d, **settings)
    except SpecError:
        return
    axes = spec.positions[:, -2:] if style == "flux" else spec.positions
    if axes.shape != positions.shape or not np.array_equal(axes, positions):
        return
    defaults = {"frames": 1, "spatial_merge_size": 2, "text_tokens": 512, "axes_dim": (16, 56, 56)}
    given = {k: v for k, v in settings.items() if defaults.get(k) != v}
    exponents = np.array([float(e) for e in spec.exponents])[spec.expand]
    axis_of = spec.axes[spec.expand]
    scaled = np.array([float(s) for s in spec.scales])[axis_of] if spec.scales else 1.0  # EVA-02's ref / side
    for theta in thetas:
        frequencies = theta**-exponents * scaled

        def angle(rows: np.ndarray, spec: Any = spec, frequencies: np.ndarray = frequencies) -> np.ndarray:
            return np.asarray(spec.positions[rows][:, axis_of] * frequencies, np.float64)

        over = {**given, **({"theta": theta} if theta != STYLE_THETA.get(style, 10000.0) else {})}
        values = {"model": style, "grid": grid, "head_dim": d, **over}
        yield Hypothesis("axial", values, part, "axial", 1.0, len(over), angle)


def _half_styles(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """Pixtral's and Qwen-VL's ``[h | w | h | w]``."""
    n, d = values.shape
    quarter = d // 4
    h_cols, w_cols = np.arange(quarter), np.arange(quarter, 2 * quarter)
    reading = _Reading(part, _positions(values[:, h_cols]), _positions(values[:, w_cols]))
    height, width = int(reading.h.max()) + 1, int(reading.w.max()) + 1
    if height * width > n or n % (height * width):
        return
    positions = np.stack([reading.h, reading.w], axis=-1)
    thetas = _axial_theta(values, reading, h_cols, w_cols, 4.0 / d)
    grid = (height, width)
    frames = n // (height * width)
    if frames == 1:
        yield from _axial("pixtral", grid, d, part, thetas, {}, positions)
    moved = np.flatnonzero(reading.h)  # Qwen's merge blocks: the first row of h position 1 is row m
    merge = int(moved[0]) if len(moved) else 0
    if not 1 <= merge <= 16 or height % merge or width % merge:
        return
    qwen = {"frames": frames, "spatial_merge_size": merge}
    plain = list(_axial("qwen2-vl", grid, d, part, thetas, qwen, positions))
    yield from plain
    if plain:
        return
    # Qwen2.5-VL's windows: the first window's width in merged tokens is the widest w before h reaches m
    first_band = np.flatnonzero(reading.h >= merge)
    if not len(first_band):
        return
    window = (int(reading.w[: first_band[0]].max()) + 1) // merge
    if window < 1:
        return
    size = window * merge * 14  # the patch size is Qwen2.5-VL's 14 (posenc's default): only their quotient shows
    yield from _axial("qwen2.5-vl", grid, d, part, thetas, {**qwen, "window_size": size}, positions)


def _flux(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """FLUX's three axes of doubled columns, text tokens first."""
    n, d = values.shape
    pairs = values[:, 0::2]
    differs = np.flatnonzero((pairs != pairs[0]).any(axis=1))
    if not len(differs):
        return
    text = int(differs[0]) - 1  # the leading rows are the text ids and the latent's first, all (0, 0, 0)
    if text < 0 or n - text < 2 * MIN_SIDE:
        return
    image = pairs[text:]
    still = (image == image[0]).all(axis=0)
    moving = np.flatnonzero(~still)
    first_w = np.flatnonzero(image[1] != image[0])
    candidates = []
    if d == 128:
        candidates.append((16, 56, 56))
    if len(moving) and len(first_w) and first_w[0] > moving[0]:
        candidates.append((2 * int(moving[0]), 2 * int(first_w[0] - moving[0]), d - 2 * int(first_w[0])))
    for axes_dim in dict.fromkeys(candidates):
        a0, a1 = axes_dim[0] // 2, (axes_dim[0] + axes_dim[1]) // 2
        if not 0 < a0 < a1 < d // 2 or not still[:a0].all():
            continue
        h_cols, w_cols = np.arange(a0, a1), np.arange(a1, d // 2)
        reading = _Reading(part, _positions(pairs[:, h_cols]), _positions(pairs[:, w_cols]))
        positions = np.stack([reading.h, reading.w], axis=-1)
        height, width = int(reading.h.max()) + 1, int(reading.w.max()) + 1
        if text + height * width != n:
            continue
        axis = 2 if width >= height else 1
        thetas = _axial_theta(pairs, reading, h_cols, w_cols, 2.0 / axes_dim[axis])
        options = {"axes_dim": axes_dim, "text_tokens": text}
        yield from _axial("flux", (2 * height, 2 * width), d, part, thetas, options, positions)


#: The styles whose ``theta`` is not 10000 without one given (``posenc axial``'s defaults).
STYLE_THETA = {"hunyuan-video": 256.0}


def _pair_theta(pairs: np.ndarray, positions: np.ndarray, cols: np.ndarray, part: str, step: float) -> list[float]:
    """Theta read from one axis's half columns ``cols`` of ``pairs`` at one row per position (``positions``: each
    row's on that axis, 0 the angle-0 row), frequencies ``theta**(-step * k)`` (10000 when it cannot be read)."""
    count = int(positions.max()) + 1
    if count < 3 or len(cols) < 2:
        return [10000.0]
    _, rows = np.unique(positions, return_index=True)
    rates, _ = column_rates(pairs[np.ix_(rows, cols)], np.arange(count), part)
    return with_default(frequency_law(rates, float(count - 1), step))


def _llama4(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """Llama 4's ``[w | h]`` of doubled columns at ``(column + 1, row + 1)`` over a square grid, row-major, the class
    token last (``part`` read from that row: every cosine 1, every sine 0)."""
    n, d = values.shape
    side = math.isqrt(n - 1)
    if side < MIN_SIDE or side * side != n - 1:
        return
    pairs = values[:, 0::2]
    quarter = d // 4
    w_cols, h_cols = np.arange(quarter), np.arange(quarter, 2 * quarter)
    w, h = _positions(pairs[:-1, w_cols]), _positions(pairs[:-1, h_cols])
    if int(w.max()) + 1 != side or int(h.max()) + 1 != side:
        return
    positions = np.concatenate([np.stack([h + 1, w + 1], axis=-1), np.zeros((1, 2), np.int64)])
    thetas = _pair_theta(pairs, positions[:, 1], w_cols, part, 4.0 / d)
    yield from _axial("llama4", (side, side), d, part, thetas, {}, positions)


#: How near an integer ``ref_grid`` side read off a table must be to be named.
REF_READ = 1e-3


def _eva02_ref(pairs: np.ndarray, reading: _Reading, cols: tuple[np.ndarray, np.ndarray]) -> tuple[int, int] | None:
    """EVA-02's ``ref_grid``: each axis's step per position is ``ref / side`` in its frequency-1 column (the first);
    ``None`` when both steps are 1 (no ``ref_grid``, or one equal to the grid: the same table) or a side read is
    not an integer."""
    refs = []
    for positions, axis_cols in ((reading.h, cols[0]), (reading.w, cols[1])):
        side = int(positions.max()) + 1
        _, rows = np.unique(positions, return_index=True)
        rates, _ = column_rates(pairs[np.ix_(rows, axis_cols[:1])], np.arange(side), reading.part)
        refs.append(float(rates[0]) * side)
    sides = (int(reading.h.max()) + 1, int(reading.w.max()) + 1)
    if all(abs(ref - side) <= REF_READ * side for ref, side in zip(refs, sides, strict=True)):
        return None
    near = [round(ref) for ref in refs]
    if any(n < 1 or abs(ref - n) > REF_READ * ref for ref, n in zip(refs, near, strict=True)):
        return None
    return near[0], near[1]


def _eva02(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """timm's EVA-02 ``[h | w]`` of doubled columns, rows row-major at ``(row, column)``, each axis's positions
    scaled by ``ref_grid / grid`` where its frequency-1 column steps by other than 1."""
    n, d = values.shape
    pairs = values[:, 0::2]
    quarter = d // 4
    h_cols, w_cols = np.arange(quarter), np.arange(quarter, 2 * quarter)
    reading = _Reading(part, _positions(pairs[:, h_cols]), _positions(pairs[:, w_cols]))
    height, width = int(reading.h.max()) + 1, int(reading.w.max()) + 1
    if height < MIN_SIDE or width < MIN_SIDE or height * width != n:
        return
    positions = np.stack([reading.h, reading.w], axis=-1)
    thetas = _axial_theta(pairs, reading, h_cols, w_cols, 4.0 / d)
    ref = _eva02_ref(pairs, reading, (h_cols, w_cols))
    options = {} if ref is None else {"ref_grid": ref}
    yield from _axial("eva02", (height, width), d, part, thetas, options, positions)


def _video_axes(pairs: np.ndarray) -> list[tuple[int, int, int]]:
    """The ``(t, h, w)`` column widths a video table may have: Wan's for its width, HunyuanVideo's ``[16, 56, 56]``
    at 128, and the widths read where the w axis starts (the first column that moves from row 0 to row 1) and the h
    axis starts (the first column that moves at the first row whose w columns are row 0's again)."""
    half = pairs.shape[1]
    d = 2 * half
    found = [(d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))]
    if d == 128:
        found.append((16, 56, 56))
    first_w = np.flatnonzero(pairs[1] != pairs[0])
    if len(first_w) and first_w[0] > 0:
        w_start = int(first_w[0])
        back = np.flatnonzero((pairs[1:, w_start:] == pairs[0, w_start:]).all(axis=1))
        if len(back):
            moved = np.flatnonzero(pairs[int(back[0]) + 1] != pairs[0])
            if len(moved) and 0 < moved[0] < w_start:
                h_start = int(moved[0])
                found.append((2 * h_start, 2 * (w_start - h_start), d - 2 * w_start))
    return list(dict.fromkeys(found))


def _video_styles(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """HunyuanVideo's and Wan's ``[t | h | w]`` of doubled columns, rows ``(t, h, w)`` row-major, at the default
    ``(1, 2, 2)`` patch (the latent ``T x 2H x 2W``)."""
    n, d = values.shape
    pairs = values[:, 0::2]
    wan = (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))
    for dims in _video_axes(pairs):
        a0, a1 = dims[0] // 2, (dims[0] + dims[1]) // 2
        if not 0 < a0 < a1 < d // 2:
            continue
        cols = (np.arange(a0), np.arange(a0, a1), np.arange(a1, d // 2))
        read = [_positions(pairs[:, c]) for c in cols]
        sides = [int(p.max()) + 1 for p in read]
        if sides[0] * sides[1] * sides[2] != n:
            continue
        positions = np.stack(read, axis=-1)
        longest = int(np.argmax(sides))
        thetas = _pair_theta(pairs, read[longest], cols[longest], part, 2.0 / dims[longest])
        grid = (sides[0], 2 * sides[1], 2 * sides[2])
        if dims == wan:
            yield from _axial("wan", grid, d, part, thetas, {}, positions)
        hunyuan = [*thetas, *([256.0] if 256.0 not in thetas else [])]
        yield from _axial("hunyuan-video", grid, d, part, hunyuan, {"axes_dim": dims}, positions)


def _timm_pixel(values: np.ndarray, part: str) -> Iterator[Hypothesis]:
    """timm's pixel-band ``[h | w]`` of doubled columns, rows row-major at ``linspace(-1, 1)`` positions per axis,
    log bands (timm's default) then linear, ``max_res`` 224."""
    from ..encodings import axial_pixel

    n, d = values.shape
    pairs = values[:, 0::2]
    slow = np.arange(d // 2) < d // 4  # the height axis's half columns
    width = grid_width(pairs, slow)
    if width is None:
        return
    grid = (n // width, width)
    for linear in (False, True):
        try:
            spec = axial_pixel.resolve(grid, d, linear=linear)
        except SpecError:
            return
        # the error scale of an entry is its band, not its angle: float32 linspace positions are off by absolute
        # amounts (the odd side's centre is -2**-25, not 0), which the band multiplies; |p| <= 1
        scale = np.repeat(np.tile(axial_pixel.framework_bands(spec).astype(np.float64), 2), 2)

        def angle(rows: np.ndarray, scale: np.ndarray = scale) -> np.ndarray:
            return np.broadcast_to(scale, (len(np.atleast_1d(rows)), len(scale)))

        keywords = {"model": "timm-pixel", "grid": grid, "head_dim": d, **({"linear_bands": True} if linear else {})}
        yield Hypothesis("axial", keywords, part, "axial", 1.0, int(linear), angle)


def axial_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """An axial RoPE ``cos`` (first row all 1) or ``sin`` (first row all 0) of each style whose structure the
    table shows.

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> sin = KINDS["axial"].make("qwen2.5-vl", (16, 16), 80, window_size=112).arrays["sin"]
    >>> first = next(axial_hypotheses(sin.astype(np.float64)))
    >>> first.values, first.array
    ({'model': 'qwen2.5-vl', 'grid': (16, 16), 'head_dim': 80, 'window_size': 112}, 'sin')
    """
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 4 or n < 2 * MIN_SIDE:
        return
    pairs = np.array_equal(values[:, 0::2], values[:, 1::2])
    # timm-pixel's first row is at (-1, -1) and its last at (1, 1): a sine's last row is its first negated, a cosine's
    # equal to it (its first value cos(-pi) = -1)
    pixel = None
    if pairs and np.array_equal(values[-1], -values[0]):
        pixel = "sin"
    elif pairs and values[0, 0] == -1.0 and np.array_equal(values[-1], values[0]):
        pixel = "cos"
    if not values[0].any():
        part = "sin"
    elif (values[0] == 1.0).all():
        part = "cos"
    else:
        last = "sin" if not values[-1].any() else "cos" if (values[-1] == 1.0).all() else None
        if last is not None and pairs:
            yield from _llama4(values, last)
        if pixel is not None:
            yield from _timm_pixel(values, pixel)
        return
    if np.array_equal(values[:, : d // 2], values[:, d // 2 :]):
        yield from _half_styles(values, part)
    if pairs:
        # a one-frame video without text tokens is FLUX's table too: the style whose defaults it is comes first
        video = list(_video_styles(values, part))
        yield from (h for h in video if not h.overrides)
        yield from _flux(values, part)
        yield from (h for h in video if h.overrides)
        yield from _eva02(values, part)
    if pixel == part:  # timm-pixel's exact sine at whole-number bands: its first row (p = -1) all 0
        yield from _timm_pixel(values, part)
