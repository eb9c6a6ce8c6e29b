"""The grid structure the vision readings share (:mod:`._vision`, :mod:`._axial`): a grid's width read off its rows,
a geometric law of frequencies read off their rates."""

from __future__ import annotations

import math

import numpy as np

from ._readoff import geometric_fit, nice_numbers

__all__ = ["MIN_SIDE", "PAIRED", "frequency_law", "grid_width", "with_default"]

#: How near 1 ``sqrt(sin**2 + cos**2)`` must be for columns to be read as a sine/cosine pair (float16 values too).
PAIRED = 1e-3
#: The least grid sides read: a grid of one row or one column is a 1-D table.
MIN_SIDE = 2


def grid_width(rows: np.ndarray, slow: np.ndarray, read: np.ndarray | None = None) -> int | None:
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


def frequency_law(rates: np.ndarray, span: float, step: float, noise: float = 0.0) -> list[float]:
    """The bases of frequencies ``base**(-step * k)`` read from their ``rates`` (slowest last) over ``span``
    positions, round numbers first (none when no law fits); ``noise``: the angles' error (radians), which widens
    the fit's tolerance and the rounding (:func:`~._readoff.geometric_fit`)."""
    fit = geometric_fit(rates, span, noise=noise)
    if fit is None or not fit.fits(1e-3):
        return []
    read = math.exp(-fit.log_rho / step)
    return nice_numbers(read, max(1e-3, fit.power_error(1 / step)))


def with_default(read: list[float]) -> list[float]:
    """The two simplest numbers read, and the default 10000 after them: a short table's read can miss it."""
    return [*read[:2], *([10000.0] if 10000.0 not in read[:2] else [])]
