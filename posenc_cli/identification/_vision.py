"""Hypotheses for the vision tables: 2-D sincos of every layout (``posenc sincos2d``), DETR's sine embedding
(``posenc detr``) and the axial RoPE caches of vision towers and FLUX (``posenc axial``).

Every reading here starts from what a grid's first patch fixes whatever the arithmetic (a sine of 0 is 0, a cosine
is 1), reads the grid off which columns change where, and checks the structure exactly (equal values) before any
number is read, so that a learned or random table is passed over after a pass or two over it. The work is a fixed
number of passes over the table (and a sort of one quarter of its columns, for the axial positions), never a number
of passes that its values or its row count choose.

2-D sincos (:data:`SINCOS2D_LAYOUTS`)
    A table of layouts: each entry maps ``(grid, d)`` to the column layout (:class:`Columns`: each column's axis, sine
    or cosine, and exponent, the frequency ``base**-exponent``), names the command's keywords that select it and
    the all-zero rows it takes first: MAE's, timm's (and its ``interleave_sin_cos``), SimpleViT's, and DiT's with
    ``extra_tokens`` (DiT's at its base size, with one zero row or none, is MAE's table). Rows are the patches
    row-major (``y * W + x``), after the all-zero rows (MAE's class token, DiT's extra tokens).
    The grid's width ``W`` is read off the values (the first row where a column that stayed put from row 0 to row 1
    changes), the layout is checked against the first patch's row (its zeros are the sines, its ones the cosines)
    and against the grid structure (each axis's columns constant along the other), and the base is read from the
    longer axis's sine/cosine pairs. Adding a layout is one entry. The hypotheses of the fewest options come
    first, and of as many those at the default base.
DETR (``posenc detr``, without a mask)
    ``[sin y0, cos y0, sin y1, ... | the same of x]``, rows ``y * W + x``, positions 1 .. H and 1 .. W (cumulative sums
    of an all-ones mask). The y half is constant along each run of ``W`` rows, the x half repeats every ``W`` rows.
    From the slowest pair of the longer axis (``dim_t = 1``): its rate per cell is 1 without ``normalize``, else
    ``scale / (side + 1e-6)``; its angle at the first cell over the rate is ``1 - offset`` (Deformable DETR's 0.5);
    the temperature is read from the pairs' geometric law (``temperature**(-2i/(d/2))``).
Axial RoPE (``posenc axial``: ``cos`` or ``sin``)
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
    pairs must be ``[w | h]`` at ``(column + 1, row + 1)`` over a square grid.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SpecError
from ._hypothesis import Hypothesis
from ._readoff import column_rates, geometric_fit, nice_numbers

__all__ = [
    "SINCOS2D_LAYOUTS",
    "Columns",
    "Layout",
    "axial_hypotheses",
    "detr_hypotheses",
    "sincos2d_hypotheses",
]

#: How near 1 ``sqrt(sin**2 + cos**2)`` must be for columns to be read as a sine/cosine pair (float16 values too).
PAIRED = 1e-3
#: The least grid sides read: a grid of one row or one column is a 1-D table.
MIN_SIDE = 2
#: The most all-zero rows before a grid (``posenc sincos2d --extra-tokens``' limit).
MAX_ZERO_ROWS = 1024


# ------------------------------------------------------------------------------------------ the grid structure
def _width(rows: np.ndarray, slow: np.ndarray, read: np.ndarray | None = None) -> int | None:
    """The grid width ``W`` the rows show when the columns ``slow`` follow the row coordinate (rows ``y * W + x``):
    the first row where the columns ``read`` (those of ``slow`` that change at every step, default all of them)
    change. ``None`` unless the row count is ``W`` times at least two rows, the columns ``slow`` are constant along
    every run of ``W`` rows and the others repeat every ``W`` rows."""
    count = len(rows)
    read = slow if read is None else read
    if not read.any() or not slow.any() or slow.all():
        return None
    changes = np.flatnonzero((rows[1:, read] != rows[0, read]).any(axis=1))
    if not len(changes):
        return None
    width = int(changes[0]) + 1
    if width < MIN_SIDE or count % width or count // width < MIN_SIDE:
        return None
    blocks = rows[:, slow].reshape(count // width, width, -1)
    if not np.array_equal(blocks, np.broadcast_to(blocks[:, :1], blocks.shape)):
        return None
    column_axis = rows[:, ~slow]
    return width if np.array_equal(column_axis[width:], column_axis[:-width]) else None


def _law(rates: np.ndarray, span: float, step: float) -> list[float]:
    """The bases of frequencies ``base**(-step * k)`` read from their ``rates`` (slowest last) over ``span``
    positions, round numbers first (none when no law fits)."""
    fit = geometric_fit(rates, span)
    if fit is None or not fit.fits(1e-3):
        return []
    read = math.exp(-fit.log_rho / step)
    return nice_numbers(read, 1e-3)


def _with_default(read: list[float]) -> list[float]:
    """The two simplest numbers read, and the default 10000 after them: a short table's read can miss it."""
    return [*read[:2], *([10000.0] if 10000.0 not in read[:2] else [])]


# ---------------------------------------------------------------------------------------------- 2-D sincos
@dataclass(frozen=True)
class Columns:
    """A 2-D sincos column layout: per column its ``axis`` (0 the row coordinate y, 1 the column coordinate x),
    whether it is a ``cosine`` (else a sine), and its ``exponent`` (the frequency is ``base**-exponent``)."""

    axis: np.ndarray
    cosine: np.ndarray
    exponent: np.ndarray


@dataclass(frozen=True)
class Layout:
    """One layout of ``posenc sincos2d``: the command's keywords that select it (none for MAE's, the default),
    its :class:`Columns` for a grid ``(H, W)`` and width ``d`` (``None`` where the layout makes no table of that
    grid and width with integer positions), the keywords that put ``z`` all-zero rows first (``None`` where it does
    not take ``z``), and whether a grid of fewer rows makes this one's first rows (so that a sample costs only
    those rows)."""

    values: dict[str, Any]
    columns: Callable[[tuple[int, int], int], Columns | None]
    zero_rows: Callable[[int], dict[str, Any] | None] = field(default=lambda z: {} if z == 0 else None)
    prefix: bool = True


def _mae(grid: tuple[int, int], d: int) -> Columns:
    """MAE's ``[sin x | cos x | sin y | cos y]``, frequencies ``base**(-k/(d/4))``."""
    q = d // 4
    return Columns(
        axis=np.repeat([1, 1, 0, 0], q),
        cosine=np.tile(np.repeat([False, True], q), 2),
        exponent=np.tile(np.arange(q) / q, 4),
    )


def _timm(grid: tuple[int, int], d: int) -> Columns:
    """timm's ``[sin y | sin x | cos y | cos x]``, frequencies ``base**(-k/(d/4))``."""
    q = d // 4
    return Columns(
        axis=np.tile(np.repeat([0, 1], q), 2),
        cosine=np.repeat([False, True], 2 * q),
        exponent=np.tile(np.arange(q) / q, 4),
    )


def _timm_interleaved(grid: tuple[int, int], d: int) -> Columns:
    """timm's ``interleave_sin_cos`` ``[sin y | cos y | sin x | cos x]`` (transformers' ViTMAE builder's own
    output too), frequencies ``base**(-k/(d/4))``."""
    q = d // 4
    return Columns(
        axis=np.repeat([0, 0, 1, 1], q),
        cosine=np.tile(np.repeat([False, True], q), 2),
        exponent=np.tile(np.arange(q) / q, 4),
    )


def _simple_vit(grid: tuple[int, int], d: int) -> Columns | None:
    """vit-pytorch's ``[sin x | cos x | sin y | cos y]``, frequencies ``base**(-k/(d/4 - 1))`` (``d >= 8``)."""
    q = d // 4
    if q < 2:
        return None
    return dataclasses.replace(_mae(grid, d), exponent=np.tile(np.arange(q) / (q - 1), 4))


def _dit(grid: tuple[int, int], d: int) -> Columns | None:
    """DiT's (diffusers') table at its own base size and interpolation scale 1: MAE's of a square grid (positions
    ``x * H / W`` are fractional on another)."""
    return _mae(grid, d) if grid[0] == grid[1] else None


#: The layouts identify reads, by name; a new ``posenc sincos2d`` layout is one more entry. Tables that another
#: entry names already are left out: timm's ``reverse_coord`` of an ``H x W`` grid is timm's table of the
#: ``W x H`` grid, DiT's at its base size (one zero row or none) is MAE's; so are layouts whose positions are
#: fractional or offset (DiT's grid other than its base size, SD3's crop: the first patch is not all 0 and 1).
SINCOS2D_LAYOUTS: dict[str, Layout] = {
    "mae": Layout({}, _mae, lambda z: {} if z == 0 else {"cls_token": True} if z == 1 else None),
    "timm": Layout({"layout": "timm"}, _timm),
    "timm-interleaved": Layout({"layout": "timm", "interleave_sin_cos": True}, _timm_interleaved),
    "simple-vit": Layout({"layout": "simple-vit"}, _simple_vit),
    # the grid's side is its base size: a grid of fewer rows is another table
    "dit": Layout({"layout": "dit"}, _dit, lambda z: {"extra_tokens": z} if 2 <= z <= MAX_ZERO_ROWS else None, False),
}


def _pairs(columns: Columns, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The sine and cosine column indices of ``axis``, paired by exponent (ascending), and the exponents."""
    on = columns.axis == axis
    sines = np.flatnonzero(on & ~columns.cosine)
    cosines = np.flatnonzero(on & columns.cosine)
    sines = sines[np.argsort(columns.exponent[sines], kind="stable")]
    cosines = cosines[np.argsort(columns.exponent[cosines], kind="stable")]
    if len(sines) != len(cosines) or not np.array_equal(columns.exponent[sines], columns.exponent[cosines]):
        return None
    return sines, cosines, columns.exponent[sines]


def _sincos2d_bases(grid_rows: np.ndarray, grid: tuple[int, int], columns: Columns) -> list[float]:
    """The base read from the longer axis's sine/cosine pairs (10000 when it cannot be read)."""
    height, width = grid
    axis = 1 if width >= height else 0
    paired = _pairs(columns, axis)
    positions = grid_rows[:width] if axis == 1 else grid_rows[::width][:height]
    if paired is None or len(paired[2]) < 2 or len(positions) < 3:
        return [10000.0]
    sines, cosines, exponents = paired
    steps = np.diff(exponents)
    if not steps[0] > 0 or not np.allclose(steps, steps[0], rtol=1e-9, atol=0):
        return [10000.0]
    s, c = positions[:, sines], positions[:, cosines]
    if not np.allclose(np.hypot(s, c), 1.0, atol=PAIRED):
        return [10000.0]
    rates, _ = column_rates(np.arctan2(s, c), np.arange(len(positions)), "pair")
    return _with_default(_law(rates, float(len(positions) - 1), float(steps[0])))


def sincos2d_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """2-D sincos in each layout of :data:`SINCOS2D_LAYOUTS` whose structure the table shows, after the
    all-zero rows the layout takes first (MAE's class token, DiT's extra tokens; none of a table of another number
    of axes).

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> table = KINDS["sincos2d"].make(grid=(4, 6), d_model=16).array.astype(np.float64)
    >>> next(sincos2d_hypotheses(table)).values
    {'grid': (4, 6), 'd_model': 16}
    >>> list(sincos2d_hypotheses(np.random.default_rng(0).standard_normal((24, 16))))
    []
    >>> table = KINDS["sincos2d"].make(grid=(3, 5), d_model=16, layout="timm").array.astype(np.float64)
    >>> next(sincos2d_hypotheses(table)).values
    {'grid': (3, 5), 'd_model': 16, 'layout': 'timm'}
    """
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 4 or d < 4 or n < 2:
        return
    nonzero = np.flatnonzero(values[: MAX_ZERO_ROWS + 1].any(axis=1))
    if not len(nonzero):
        return
    zeros = int(nonzero[0])  # all-zero rows first: a class token, DiT's extra tokens
    grid_rows = values[zeros:]
    if len(grid_rows) < 2 * MIN_SIDE:
        return
    first = grid_rows[0]
    if not ((first == 0.0) | (first == 1.0)).all():  # patch (0, 0): every sine 0, every cosine 1
        return
    # the sines that stayed 0 from x = 0 to x = 1 follow y, and change at y = 1 (a cosine of a slow frequency can
    # stay 1 over a few steps of x in float32)
    y_sines = (first == 0.0) & (grid_rows[1] == 0.0)
    changes = np.flatnonzero((grid_rows[1:, y_sines] != 0.0).any(axis=1))
    if not y_sines.any() or not len(changes) or len(grid_rows) % (int(changes[0]) + 1):
        return
    width = int(changes[0]) + 1
    height = len(grid_rows) // width
    # the fewest options first, and of as many those at the default base: a layout's table read in another's columns
    # can give a base within float32 rounding of the same table (SimpleViT's base**(-k/(q-1)) is MAE's at the base
    # base**(q/(q-1)), 13459.6 for q = 32), which is the less simple explanation
    made: list[Hypothesis] = []
    for layout in SINCOS2D_LAYOUTS.values():
        columns = layout.columns((height, width), d)
        zero_values = layout.zero_rows(zeros)
        if columns is None or zero_values is None or len(columns.axis) != d:
            continue
        if not np.array_equal(first == 1.0, columns.cosine):
            continue
        if _width(grid_rows, columns.axis == 0, y_sines) != width:
            continue
        bases = _sincos2d_bases(grid_rows, (height, width), columns)
        extent = np.where(columns.axis == 0, height - 1, width - 1)
        for base in bases:
            angles = extent * base ** -columns.exponent.astype(np.float64)

            def angle(rows: np.ndarray, angles: np.ndarray = angles) -> np.ndarray:
                return np.broadcast_to(angles, (len(rows), d))

            over: dict[str, Any] = {**layout.values}
            if base != 10000.0:
                over["base"] = base
            over.update(zero_values)
            head = None
            if layout.prefix:

                def head(
                    rows: int, over: dict[str, Any] = over, width: int = width, height: int = height
                ) -> Hypothesis:
                    # rows y * W + x of a grid are the same in any grid of the same width and more than y rows
                    grid = (min(height, max(MIN_SIDE, -(-(rows - zeros) // width))), width)
                    return Hypothesis(
                        "sincos2d", {"grid": grid, "d_model": d, **over}, "pe", "sincos2d", 1.0, len(over)
                    )

            grid_values = {"grid": (height, width), "d_model": d, **over}
            made.append(Hypothesis("sincos2d", grid_values, "pe", "sincos2d", 1.0, len(over), angle, head=head))
    yield from sorted(made, key=lambda h: (h.overrides, "base" in h.values))


# ----------------------------------------------------------------------------------------------------- DETR
#: DETR's ``scale`` without one given.
TWO_PI = 2 * math.pi


def detr_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """DETR's sine embedding of a grid without padding, rows ``y * W + x`` (none of another structure).

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> table = KINDS["detr"].make(grid=(5, 7), d_model=16, temperature=20.0).array.astype(np.float64)
    >>> next(detr_hypotheses(table)).values
    {'grid': (5, 7), 'd_model': 16, 'temperature': 20.0}
    """
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 4 or n < 2 * MIN_SIDE:
        return
    half = d // 2
    head = values[: min(n, 64)]
    if not np.allclose(np.hypot(head[:, 0::2], head[:, 1::2]), 1.0, atol=PAIRED):  # interleaved sin/cos pairs
        return
    slow = np.arange(d) < half
    width = _width(values, slow)
    if width is None:
        return
    height = n // width
    axis = 1 if width >= height else 0
    side = width if axis == 1 else height
    if side < 3:  # a rate per cell of 2*pi/2 is pi: its direction cannot be read
        return
    cells = values[:width, half:] if axis == 1 else values[::width, :half]
    rates, start = column_rates(np.arctan2(cells[:, 0::2], cells[:, 1::2]), np.arange(side), "pair")
    rate = float(rates[0])
    if not rate > 0:
        return
    offset = 1 - float(start[0]) / rate
    settings: dict[str, Any] = {}
    if abs(rate - 1) < 1e-4 and abs(offset) < 1e-3:
        settings["normalize"] = False
    else:
        scale = rate * (side + 1e-6)
        if abs(scale - TWO_PI) > 1e-4 * TWO_PI:
            near = nice_numbers(scale, 1e-4)
            if not near:
                return
            settings["norm_scale"] = near[0]
        if abs(offset - 0.5) < 1e-3:
            settings["variant"] = "deformable"
        elif abs(offset) >= 1e-3:
            return
    for temperature in _with_default(_law(rates, float(side - 1), 2.0 / half)):
        over = {**settings, **({"temperature": temperature} if temperature != 10000.0 else {})}
        span = (1.0 if settings.get("normalize") is False else rate) * max(height, width)
        angles = span * temperature ** -(2 * (np.arange(d) % half // 2) / half)

        def angle(rows: np.ndarray, angles: np.ndarray = angles) -> np.ndarray:
            return np.broadcast_to(angles, (len(rows), d))

        grid_values = {"grid": (height, width), "d_model": d, **over}
        yield Hypothesis("detr", grid_values, "pe", "detr", 1.0, len(over), angle)


# ----------------------------------------------------------------------------------------------- axial RoPE
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
    return _with_default(_law(rates, float(count - 1), step))


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
    return _with_default(_law(rates, float(count - 1), step))


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
    if not values[0].any():
        part = "sin"
    elif (values[0] == 1.0).all():
        part = "cos"
    else:
        last = "sin" if not values[-1].any() else "cos" if (values[-1] == 1.0).all() else None
        if last is not None and np.array_equal(values[:, 0::2], values[:, 1::2]):
            yield from _llama4(values, last)
        return
    if np.array_equal(values[:, : d // 2], values[:, d // 2 :]):
        yield from _half_styles(values, part)
    if np.array_equal(values[:, 0::2], values[:, 1::2]):
        # a one-frame video without text tokens is FLUX's table too: the style whose defaults it is comes first
        video = list(_video_styles(values, part))
        yield from (h for h in video if not h.overrides)
        yield from _flux(values, part)
        yield from (h for h in video if h.overrides)
        yield from _eva02(values, part)
