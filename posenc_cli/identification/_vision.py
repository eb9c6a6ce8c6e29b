"""Hypotheses for the vision tables: 2-D sincos of every layout (``posenc sincos2d``) and DETR's sine embedding
(``posenc detr``); the axial RoPE caches are :mod:`._axial`'s.

Every reading here starts from what a grid's first patch fixes whatever the arithmetic (a sine of 0 is 0, a cosine
is 1), reads the grid off which columns change where, and checks the structure exactly (equal values) before any
number is read, so that a learned or random table is passed over after a pass or two over it. The work is a fixed
number of passes over the table, never a number of passes that its values or its row count choose.

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
    first, and of as many those at the default base. The tables whose positions are not the patch indices (DiT's
    and PixArt's off their base size, SD3's crop, CogVideoX's three axes) are :mod:`._scaled`'s, read after these.
DETR (``posenc detr``, without a mask)
    ``[sin y0, cos y0, sin y1, ... | the same of x]``, rows ``y * W + x``, positions 1 .. H and 1 .. W (cumulative sums
    of an all-ones mask). The y half is constant along each run of ``W`` rows, the x half repeats every ``W`` rows.
    From the slowest pair of the longer axis (``dim_t = 1``): its rate per cell is 1 without ``normalize``, else
    ``scale / (side + 1e-6)``; its angle at the first cell over the rate is ``1 - offset`` (Deformable DETR's 0.5);
    the temperature is read from the pairs' geometric law (``temperature**(-2i/(d/2))``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._grid import MIN_SIDE, PAIRED, frequency_law, grid_width, with_default
from ._hypothesis import Hypothesis
from ._readoff import column_rates, nice_numbers
from ._scaled import cogvideox_hypotheses, dit_hypotheses, sd3_hypotheses

__all__ = [
    "SINCOS2D_LAYOUTS",
    "Columns",
    "Layout",
    "detr_hypotheses",
    "sincos2d_hypotheses",
]

#: The most all-zero rows before a grid (``posenc sincos2d --extra-tokens``' limit).
MAX_ZERO_ROWS = 1024


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


#: The layouts identify reads at the patch indices, by name; a new ``posenc sincos2d`` layout is one more entry.
#: Tables that another entry names already are left out: timm's ``reverse_coord`` of an ``H x W`` grid is timm's
#: table of the ``W x H`` grid, DiT's at its base size (one zero row or none) is MAE's. Positions scaled or offset
#: (DiT's grid other than its base size, SD3's crop) and CogVideoX's three axes are read by :mod:`._scaled`.
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
    return with_default(frequency_law(rates, float(len(positions) - 1), float(steps[0])))


def sincos2d_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """2-D sincos in each layout of :data:`SINCOS2D_LAYOUTS` whose structure the table shows, after the
    all-zero rows the layout takes first (MAE's class token, DiT's extra tokens; none of a table of another number
    of axes); then the tables whose positions are not the patch indices (:mod:`._scaled`): DiT's and PixArt's at
    scaled positions, SD3's crop, CogVideoX's 3-D table.

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
    yield from _grid_hypotheses(values)
    yield from sd3_hypotheses(values)
    yield from cogvideox_hypotheses(values)


def _grid_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """The layouts' hypotheses, and DiT's at scaled positions, of a table whose first patch is all 0 and 1."""
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
        if grid_width(grid_rows, columns.axis == 0, y_sines) != width:
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
    yield from dit_hypotheses(grid_rows, zeros, height, width)


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
    width = grid_width(values, slow)
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
    for temperature in with_default(frequency_law(rates, float(side - 1), 2.0 / half)):
        over = {**settings, **({"temperature": temperature} if temperature != 10000.0 else {})}
        span = (1.0 if settings.get("normalize") is False else rate) * max(height, width)
        angles = span * temperature ** -(2 * (np.arange(d) % half // 2) / half)

        def angle(rows: np.ndarray, angles: np.ndarray = angles) -> np.ndarray:
            return np.broadcast_to(angles, (len(rows), d))

        grid_values = {"grid": (height, width), "d_model": d, **over}
        yield Hypothesis("detr", grid_values, "pe", "detr", 1.0, len(over), angle)
