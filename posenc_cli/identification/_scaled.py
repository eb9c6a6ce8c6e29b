"""Hypotheses for the sincos tables whose positions are not the patch indices (``posenc sincos2d``), read as
:mod:`._vision` reads its grids: DiT's and PixArt's table at a grid other than its base size (``--layout dit``:
each axis's positions scaled), SD3's crop of a larger grid's table (``--layout sd3``: scaled and offset) and
CogVideoX's 3-D table (``--layout cogvideox``: three axes, each scaled).

Every reading checks the grid structure exactly (equal values) before it reads a number, then reads each axis's
positions as ``a + m * i`` off its ``[sin | cos]`` columns (:func:`axis_positions`): the frequencies' law gives the
base, and with it the step ``m`` and first position ``a`` are read from the fastest columns that turn by less than a
radian per position. What the table shows of diffusers' parameters is what its positions are:

DiT, PixArt (MAE's columns, rows ``y * W + x`` after the all-zero rows)
    Positions ``i * base_size / (side * interpolation_scale)``: the first patch is all 0 and 1 (sines 0, cosines
    1). Both axes must give one ratio ``R = m * side = base_size / interpolation_scale``; the table shows only that
    ratio, so it is named as the integer ``base_size`` over the smallest integer ``interpolation_scale`` (up to
    :data:`MAX_DENOMINATOR`; 1 for every published model's ratio) that make it. A grid whose positions are the
    patch indices (``R`` the side of a square grid) is MAE's table, read by :mod:`._vision`.
SD3 (MAE's columns, rows ``y * W + x``, no zero rows)
    The ``M x M`` table's centre crop: positions ``(top + i) * base_size / (M * interpolation_scale)``, ``top = (M -
    H) // 2`` (and ``left``), so its first patch is not all 0 and 1. Both axes must give one step ``m``; ``top =
    a_y / m`` and ``left = a_x / m`` must be integers, and ``M`` is the one or two sizes both crops allow (``2 top +
    H`` or one more), ``m * M`` the ratio named as DiT's.
CogVideoX (``[sin t | cos t | sin x | cos x | sin y | cos y]``, ``d / 8`` columns per t half, ``3d / 16`` per
spatial half, rows ``t * H * W + y * W + x``)
    The first row is all 0 and 1, cosines where the layout puts them. ``W`` is the first row where a y column
    changes, ``H * W`` the first where a t column does (the whole table for one frame). The base is read from the
    longer spatial axis; ``interpolation_scale`` is ``1 / m`` of the spatial axes and
    ``temporal_interpolation_scale`` ``1 / m`` of t, each the simplest round number within :data:`ROUND`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._grid import MIN_SIDE, PAIRED, frequency_law, grid_width, with_default
from ._hypothesis import Hypothesis
from ._readoff import column_rates, nice_numbers, resolution

__all__ = ["MAX_DENOMINATOR", "axis_positions", "cogvideox_hypotheses", "dit_hypotheses", "sd3_hypotheses"]

#: The largest ``interpolation_scale`` (an integer) a DiT or SD3 ratio ``base_size / interpolation_scale`` is named
#: with when the ratio is not an integer.
MAX_DENOMINATOR = 16
#: How near two readings of one number must be (relative): the two axes' ratio or step, a scale and its round value.
ROUND = 1e-4
#: How near an integer SD3's crop offsets ``top`` and ``left`` must be read.
OFFSET = 0.05
#: A column whose rate per position is below this (radians, below pi) is read without folding.
UNFOLDED = 2.0
#: Columns that turn by at most this many times the angles' error over an axis do not give its step.
MEASURED = 8


@dataclass(frozen=True)
class Axis:
    """One axis's ``[sin | cos]`` columns read at its ``count`` positions: each column's rate per position, its angle
    at the first position (in ``(-pi, pi]``), and the angles' error ``noise`` (radians: twice the values' relative
    precision, ``2**-7`` for bfloat16 values)."""

    rates: np.ndarray
    start: np.ndarray
    count: int
    noise: float


def read_axis(block: np.ndarray) -> Axis | None:
    """The axis of ``block`` (``(positions, 2q)``: q sines, then their q cosines), or ``None`` unless every pair has
    amplitude 1 (within the values' precision) and there are at least two positions."""
    count, width = block.shape
    q = width // 2
    if count < MIN_SIDE or q < 1 or width != 2 * q:
        return None
    precision = resolution(block)
    sines, cosines = block[:, :q], block[:, q:]
    if not np.allclose(np.hypot(sines, cosines), 1.0, atol=max(PAIRED, precision)):
        return None
    rates, start = column_rates(np.arctan2(sines, cosines), np.arange(count), "pair")
    return Axis(rates, start, count, 2 * precision)


def axis_bases(axis: Axis, denominator: int) -> list[float]:
    """The base of the frequencies ``base**(-k / denominator)`` read from the axis's rates (two simplest, then the
    default 10000; only the default from fewer than 3 positions)."""
    if axis.count < 3 or len(axis.rates) < 2:
        return [10000.0]
    return with_default(frequency_law(axis.rates, float(axis.count - 1), 1.0 / denominator, axis.noise))


@dataclass(frozen=True)
class Positions:
    """An axis's positions ``a + m * i``, with ``error`` the relative error of ``m`` that the angles' noise allows
    (at least :data:`ROUND`)."""

    m: float
    a: float
    error: float


def axis_positions(axis: Axis, base: float, denominator: int) -> Positions:
    """The axis's positions for frequencies ``base**(-k / denominator)``, read from the slowest column to faster
    ones. ``a``: each column's first angle on the turn nearest the one ``a`` predicts, over its frequency. ``m``:
    the rate over the frequency of the fastest column whose rate ``m`` predicts is below :data:`UNFOLDED`, among
    those that turn by more than :data:`MEASURED` times the noise over the axis (``nan`` when none does).

    Examples
    --------
    >>> k = np.arange(4)
    >>> f = 100.0 ** (-k / 4)
    >>> rates, start = 0.5 * f, np.angle(np.exp(1j * 7.5 * f))
    >>> read = axis_positions(Axis(rates, start, 10, 0.0), 100.0, 4)
    >>> round(read.m, 9), round(read.a, 9), read.error
    (0.5, 7.5, 0.0001)
    """
    frequencies = base ** -(np.arange(len(axis.rates)) / denominator)
    span = axis.count - 1
    m, a, turn = math.nan, 0.0, 0.0
    for k in range(len(frequencies) - 1, -1, -1):
        f, rate, angle = float(frequencies[k]), float(axis.rates[k]), float(axis.start[k])
        a = (angle + 2 * math.pi * round((a * f - angle) / (2 * math.pi))) / f
        if abs(rate) * span <= MEASURED * axis.noise:
            continue
        if abs(m) * f >= UNFOLDED:
            break
        m, turn = rate / f, abs(rate) * span
    return Positions(m, a, max(ROUND, 4 * axis.noise / turn) if turn else math.inf)


def ratio_settings(ratio: float, error: float = ROUND) -> dict[str, Any] | None:
    """``base_size`` and ``interpolation_scale`` (left out when 1) whose ratio is ``ratio``, read to ``error``
    (relative): the smallest integer scale up to :data:`MAX_DENOMINATOR` that makes ``ratio`` times it an integer.

    Examples
    --------
    >>> ratio_settings(32.0000001), ratio_settings(7.5), ratio_settings(math.pi)
    ({'base_size': 32}, {'base_size': 15, 'interpolation_scale': 2.0}, None)
    """
    if not ratio > 0 or not math.isfinite(ratio):
        return None
    for scale in range(1, MAX_DENOMINATOR + 1):
        size = round(ratio * scale)
        if size >= 1 and abs(size - ratio * scale) <= error * ratio * scale:
            return {"base_size": size, **({"interpolation_scale": float(scale)} if scale != 1 else {})}
    return None


def round_scales(value: float, error: float) -> list[float]:
    """An interpolation scale read as ``value`` to ``error`` (relative): the simplest decimal, and the nearest
    sixteenth (CogVideoX's 1.875) when it differs; none when neither is within ``error``.

    Examples
    --------
    >>> round_scales(1.8741, 3e-3), round_scales(0.75000001, 1e-4), round_scales(1.23456, 1e-4)
    ([1.87, 1.875], [0.75], [1.2346])
    """
    out = nice_numbers(value, error, common=(1.0,))[:1]
    sixteenths = round(value * 16) / 16
    if sixteenths > 0 and abs(sixteenths - value) <= error * value and sixteenths not in out:
        out.append(sixteenths)
    return out


def _close(a: float, b: float, error: float = ROUND) -> bool:
    return abs(a - b) <= error * max(abs(a), abs(b))


def _mae_angles(extent_x: float, extent_y: float, base: float, d: int) -> np.ndarray:
    """MAE's columns' largest angles: ``[x | x | y | y]`` extents times ``base**(-k/q)``."""
    q = d // 4
    exponents = np.tile(np.arange(q) / q, 4)
    extent = np.repeat([extent_x, extent_x, extent_y, extent_y], q)
    return np.asarray(extent * base**-exponents, np.float64)


def _hypothesis(values: dict[str, Any], angles: np.ndarray, head: Any = None) -> Hypothesis:
    over = sum(1 for key in values if key not in ("grid", "d_model"))
    d = len(angles)

    def angle(rows: np.ndarray, angles: np.ndarray = angles) -> np.ndarray:
        return np.broadcast_to(angles, (len(rows), d))

    return Hypothesis("sincos2d", values, "pe", "sincos2d", 1.0, over, angle, head=head)


# ------------------------------------------------------------------------------------------- DiT and PixArt
def dit_hypotheses(grid_rows: np.ndarray, zeros: int, height: int, width: int) -> Iterator[Hypothesis]:
    """DiT's (PixArt's) table in MAE's columns at scaled positions, given the grid :mod:`._vision` read off a table
    whose first patch is all 0 and 1 (``grid_rows``: the rows after ``zeros`` all-zero rows, ``height x width``
    patches). None where the positions are the patch indices (MAE's, :mod:`._vision`'s).

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> table = KINDS["sincos2d"].make(grid=(6, 10), d_model=16, layout="dit", base_size=4).array
    >>> next(dit_hypotheses(table.astype(np.float64), 0, 6, 10)).values
    {'grid': (6, 10), 'd_model': 16, 'layout': 'dit', 'base_size': 4}
    """
    d = grid_rows.shape[1]
    q = d // 4
    cosine = np.tile(np.repeat([False, True], q), 2)  # MAE's columns, y constant along each run of W rows
    if not np.array_equal(grid_rows[0] == 1.0, cosine) or grid_width(grid_rows, np.arange(d) >= 2 * q) != width:
        return
    x, y = read_axis(grid_rows[:width, : 2 * q]), read_axis(grid_rows[::width][:height, 2 * q :])
    if x is None or y is None:
        return
    zero_values = {} if zeros == 0 else {"cls_token": True} if zeros == 1 else {"extra_tokens": zeros}
    made = []
    for base in axis_bases(x if width >= height else y, q):
        px, py = axis_positions(x, base, q), axis_positions(y, base, q)
        mx, my, error = px.m, py.m, max(px.error, py.error)
        if _close(mx, 1.0, error) and _close(my, 1.0, error) or not _close(mx * width, my * height, error):
            continue
        ratio = (mx * width + my * height) / 2
        settings = ratio_settings(ratio, error)
        if settings is None:
            continue
        if settings == {"base_size": height}:  # dit's base_size without one given
            settings = {}
        values = {"grid": (height, width), "d_model": d, "layout": "dit", **settings, **zero_values}
        if base != 10000.0:
            values["base"] = base
        angles = _mae_angles(ratio * (width - 1) / width, ratio * (height - 1) / height, base, d)
        made.append(_hypothesis(values, angles))
    yield from sorted(made, key=lambda h: (h.overrides, "base" in h.values))


# ---------------------------------------------------------------------------------------------------- SD3
def sd3_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """SD3's centre crop of an ``M x M`` table (none of a table whose first row is all 0 and 1: DiT's positions, or
    of another structure).

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> keywords = {"layout": "sd3", "base_size": 64, "pos_embed_max_size": 192}
    >>> table = KINDS["sincos2d"].make(grid=(12, 20), d_model=32, **keywords).array
    >>> next(sd3_hypotheses(table.astype(np.float64))).values
    {'grid': (12, 20), 'd_model': 32, 'layout': 'sd3', 'base_size': 64, 'pos_embed_max_size': 192}
    """
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 4 or d < 4 or n < 2 * MIN_SIDE:
        return
    first = values[0]
    if ((first == 0.0) | (first == 1.0)).all():
        return
    q = d // 4
    width = grid_width(values, np.arange(d) >= 2 * q)
    if width is None:
        return
    height = n // width
    x, y = read_axis(values[:width, : 2 * q]), read_axis(values[::width][:, 2 * q :])
    if x is None or y is None:
        return
    made = []
    for base in axis_bases(x if width >= height else y, q):
        px, py = axis_positions(x, base, q), axis_positions(y, base, q)
        mx, my, ax, ay, error = px.m, py.m, px.a, py.a, max(px.error, py.error)
        if not (mx > 0 and my > 0 and _close(mx, my, error)):
            continue
        m = (mx * width + my * height) / (width + height)
        top, left = ay / m, ax / m
        if min(top, left) < -OFFSET or abs(top - round(top)) > OFFSET or abs(left - round(left)) > OFFSET:
            continue
        top, left = round(top), round(left)
        sizes = {2 * top + height, 2 * top + height + 1} & {2 * left + width, 2 * left + width + 1}
        # the sizes crop at the same offsets, the same positions: one table, named by its simplest settings
        named = [(s, most) for most in sorted(sizes) if (s := ratio_settings(m * most, error)) is not None]
        for settings, most in sorted(named, key=lambda pair: len(pair[0]))[:1]:
            grid_values = {"grid": (height, width), "d_model": d, "layout": "sd3", **settings}
            grid_values["pos_embed_max_size"] = most
            if base != 10000.0:
                grid_values["base"] = base
            angles = _mae_angles(m * (left + width - 1), m * (top + height - 1), base, d)
            made.append(_hypothesis(grid_values, angles))
    yield from sorted(made, key=lambda h: (h.overrides, "base" in h.values))


# ---------------------------------------------------------------------------------------------- CogVideoX
def _first_change(block: np.ndarray) -> int | None:
    """The first row of ``block`` that differs from row 0 (``None``: none does)."""
    changes = np.flatnonzero((block[1:] != block[0]).any(axis=1))
    return int(changes[0]) + 1 if len(changes) else None


def cogvideox_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """CogVideoX's 3-D sincos (none of another structure).

    Examples
    --------
    >>> from posenc_cli.kinds import KINDS
    >>> table = KINDS["sincos2d"].make(grid=(4, 6, 8), d_model=64, layout="cogvideox", interpolation_scale=1.875).array
    >>> next(cogvideox_hypotheses(table.astype(np.float64))).values
    {'grid': (4, 6, 8), 'd_model': 64, 'layout': 'cogvideox', 'interpolation_scale': 1.875}
    """
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 16 or n < MIN_SIDE * MIN_SIDE:
        return
    qt, qs = d // 8, 3 * d // 16
    t_cols, x_cols, y_cols = slice(0, 2 * qt), slice(2 * qt, 2 * qt + 2 * qs), slice(2 * qt + 2 * qs, d)
    cosine = np.zeros(d, bool)
    for block in (t_cols, x_cols, y_cols):  # each block is [sin | cos]
        cosine[(block.start + block.stop) // 2 : block.stop] = True
    first = values[0]
    if not ((first == 0.0) | (first == 1.0)).all() or not np.array_equal(first == 1.0, cosine):
        return
    width = _first_change(values[:, y_cols])
    frame = _first_change(values[:, t_cols]) or n  # one frame: t stays at 0
    if width is None or width < MIN_SIDE or frame % width or n % frame or frame // width < MIN_SIDE:
        return
    height, frames = frame // width, n // frame
    grid = values.reshape(frames, height, width, d)
    for block, shape in ((t_cols, (frames, 1, 1)), (y_cols, (1, height, 1)), (x_cols, (1, 1, width))):
        axis = grid[..., block]
        index = tuple(slice(None) if s > 1 else slice(0, 1) for s in shape)
        if not np.array_equal(axis, np.broadcast_to(axis[index], axis.shape)):
            return
    x, y = read_axis(grid[0, 0, :, x_cols]), read_axis(grid[0, :, 0, y_cols])
    t = read_axis(grid[:, 0, 0, t_cols]) if frames > 1 else None
    if x is None or y is None or (frames > 1 and t is None):
        return
    made = []
    for base in axis_bases(x if width >= height else y, qs):
        px, py = axis_positions(x, base, qs), axis_positions(y, base, qs)
        pt = axis_positions(t, base, qt) if t is not None else Positions(1.0, 0.0, ROUND)
        error = max(px.error, py.error)
        if not (px.m > 0 and pt.m > 0 and _close(px.m, py.m, error)):
            continue
        for spatial, temporal in itertools.product(
            round_scales(2 / (px.m + py.m), error), round_scales(1 / pt.m, pt.error)
        ):
            made.append(_cogvideox(spatial, temporal, base, (frames, height, width), d))
    yield from sorted(made, key=lambda h: (h.overrides, "base" in h.values))


def _cogvideox(spatial: float, temporal: float, base: float, grid: tuple[int, int, int], d: int) -> Hypothesis:
    """The ``cogvideox`` hypothesis of a ``(frames, height, width)`` grid at the scales and base read."""
    frames, height, width = grid
    qt, qs = d // 8, 3 * d // 16
    frame = height * width
    video = (frames, height, width) if frames > 1 else (height, width)
    grid_values: dict[str, Any] = {"grid": video, "d_model": d, "layout": "cogvideox"}
    if spatial != 1.0:
        grid_values["interpolation_scale"] = spatial
    if temporal != 1.0:
        grid_values["temporal_interpolation_scale"] = temporal
    if base != 10000.0:
        grid_values["base"] = base
    extents = {"t": (frames - 1) / temporal, "x": (width - 1) / spatial, "y": (height - 1) / spatial}
    angles = np.concatenate(
        [np.tile(extents[a] * base ** -(np.arange(q) / q), 2) for a, q in (("t", qt), ("x", qs), ("y", qs))]
    )

    def head(rows: int, values: dict[str, Any] = grid_values) -> Hypothesis:
        # a video of fewer frames is the first frames' rows
        few = min(frames, max(1, -(-rows // frame)))
        fewer = {**values, "grid": (few, height, width) if few > 1 else (height, width)}
        return Hypothesis("sincos2d", fewer, "pe", "sincos2d", 1.0, 0)

    return _hypothesis(grid_values, angles, head if frames > 1 else None)
