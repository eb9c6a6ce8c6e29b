"""Hypotheses for ALiBi (``posenc alibi``: slopes, or the bias of BLOOM or MPT) and MAE's 2-D sincos table
(``posenc sincos2d``).

ALiBi
    ``heads`` positive slopes, each at most 1 (``2**(-8/heads)`` and its powers), or a ``(heads, seq)`` bias
    whose first column (BLOOM: positions ``0 .. seq-1``) or last (MPT: ``1-seq .. 0``) is zero. Compared by the
    relative rule: no angle.
2-D sincos
    ``H W`` rows (and MAE's zero class-token row first), ``d`` a multiple of 4: one half of the columns is a 1-D
    sincos of the row coordinate, the other of the column coordinate, so one half repeats with the grid's width
    ``W`` (rows ``r`` and ``r + W``) and the other is constant over each run of ``W`` rows. ``W`` is read off the
    values (the first row where the row coordinate's half changes), never searched among the row count's
    divisors; the base is read from the repeating half's frequencies (``base**(-k/(d/4))``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ._hypothesis import Hypothesis
from ._readoff import column_rates, geometric_fit, nice_numbers

__all__ = ["alibi_hypotheses", "sincos2d_hypotheses"]


def alibi_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """ALiBi slopes (1-D) or bias (2-D, heads first)."""
    if values.ndim == 1:
        heads = len(values)
        if 1 <= heads <= 4096 and (values > 0).all() and (values < 1).all():  # 2**(-8/heads) < 1 is the largest
            yield Hypothesis("alibi", {"heads": heads}, "slopes", "alibi")
        return
    heads, seq = values.shape
    if seq < 2 or heads > 4096:
        return
    for variant, column in (("bloom", 0), ("mpt", -1)):
        if not values[:, column].any() and (values[:, 1 if column == 0 else -2] != 0).all():
            over = {"variant": variant} if variant != "bloom" else {}
            yield Hypothesis("alibi", {"heads": heads, "seq_len": seq, **over}, "bias", "alibi", overrides=len(over))


def _widths(grid_rows: np.ndarray) -> list[tuple[int, slice]]:
    """The grid widths the rows show, each with the half of the columns that repeats every ``W`` rows.

    For each half taken as the row coordinate's (constant along a row of patches), the first row where it changes
    is the width ``W``. It is a grid's when the count is a multiple of ``W`` with at least two rows of patches, that
    half is constant in every run of ``W`` rows and the other half repeats every ``W`` rows. At most two widths
    (MAE's order first), each checked in a few passes over the table: the work never depends on how many divisors
    the row count has."""
    count, d = grid_rows.shape
    half = d // 2
    found: list[tuple[int, slice]] = []
    for slow, fast in ((slice(half, None), slice(None, half)), (slice(None, half), slice(half, None))):
        row_axis = grid_rows[:, slow]
        changes = np.flatnonzero((row_axis[1:] != row_axis[:-1]).any(axis=1))
        if not len(changes):
            continue
        width = int(changes[0]) + 1
        if width < 2 or count % width or count // width < 2 or any(width == w for w, _ in found):
            continue
        blocks = row_axis.reshape(count // width, width, half)
        column_axis = grid_rows[:, fast]
        if np.array_equal(blocks, np.broadcast_to(blocks[:, :1], blocks.shape)) and np.array_equal(
            column_axis[width:], column_axis[:-width]
        ):
            found.append((width, fast))
    return found


def sincos2d_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """MAE's 2-D sincos: the grids whose structure the table shows (:func:`_widths`), with the class-token row
    when the first row is zero (none of a table of another number of axes)."""
    if values.ndim != 2:
        return
    n, d = values.shape
    if d % 4 or d < 4 or n < 2:
        return
    cls = not values[0].any()
    grid_rows = values[1:] if cls else values
    count = len(grid_rows)
    for width, fast in _widths(grid_rows):
        height = count // width
        periodic = grid_rows[:width, fast] if width >= 3 else None
        bases = _bases(periodic, d) if periodic is not None else [10000.0]
        extent = float(max(height, width))
        frequencies = bases[0] ** (-np.arange(d // 4) / (d // 4))
        column = np.tile(np.concatenate([frequencies, frequencies]), 2) * extent

        def angle(rows: np.ndarray, column: np.ndarray = column) -> np.ndarray:
            return np.broadcast_to(column, (len(rows), d))

        for base in bases[:2]:
            over: dict[str, object] = {"base": base} if base != 10000.0 else {}
            if cls:
                over["cls_token"] = True

            def head(rows: int, over: dict[str, object] = over, width: int = width, height: int = height) -> Hypothesis:
                # rows y * W + x of a grid are the same in any grid of the same width and more than y rows
                grid = (min(height, max(1, -(-(rows - cls) // width))), width)
                return Hypothesis("sincos2d", {"grid": grid, "d_model": d, **over}, "pe", "sincos2d", 1.0, len(over))

            grid_values = {"grid": (height, width), "d_model": d, **over}
            yield Hypothesis("sincos2d", grid_values, "pe", "sincos2d", 1.0, len(over), angle, head=head)


def _bases(half: np.ndarray, d: int) -> list[float]:
    """The base of a 1-D sincos half (``[sin | cos]`` of ``d/4`` frequencies ``base**(-k/(d/4))``) over ``width``
    positions 0, 1, ...; 10000 when it cannot be read."""
    quarter = d // 4
    s, c = half[:, :quarter], half[:, quarter:]
    if not np.allclose(np.hypot(s, c), 1.0, atol=1e-3):
        return [10000.0]
    rates, _ = column_rates(np.arctan2(s, c), np.arange(len(half)), "pair")
    fit = geometric_fit(rates, float(len(half) - 1))
    if fit is None:
        return [10000.0]
    read = math.exp(-fit.log_rho * quarter)
    return nice_numbers(read, 1e-3) or [10000.0]
