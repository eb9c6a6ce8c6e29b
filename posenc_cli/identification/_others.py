"""Hypotheses for ALiBi (``posenc alibi``: slopes, or the bias of BLOOM or MPT) and MAE's 2-D sincos table
(``posenc sincos2d``).

ALiBi
    ``heads`` positive slopes, each at most 1 (``2**(-8/heads)`` and its powers), or a ``(heads, seq)`` bias
    whose first column (BLOOM: positions ``0 .. seq-1``) or last (MPT: ``1-seq .. 0``) is zero. Compared by the
    relative rule: no angle.
2-D sincos
    ``H W`` rows (and MAE's zero class-token row first), ``d`` a multiple of 4: one half of the columns is a 1-D
    sincos of the row coordinate, the other of the column coordinate, so one half repeats with the grid's width
    ``W`` (rows ``r`` and ``r + W``). Every divisor ``W`` of the row count whose half repeats so is a grid; the
    base is read from that half's frequencies (``base**(-k/(d/4))``).
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


def _divisors(count: int) -> list[int]:
    small = [w for w in range(1, math.isqrt(count) + 1) if count % w == 0]
    both = sorted({*small, *(count // w for w in small)})
    return sorted(both, key=lambda w: abs(math.log(w) - math.log(count) / 2))  # near-square grids first


def sincos2d_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """MAE's 2-D sincos: every grid whose structure the table shows, with and without the class-token row."""
    n, d = values.shape
    if d % 4 or d < 4 or n < 2:
        return
    cls = not values[0].any()
    grid_rows = values[1:] if cls else values
    count = len(grid_rows)
    half = d // 2
    for width in _divisors(count):
        height = count // width
        if height < 2 or width < 2:
            continue
        halves = (grid_rows[:, :half], grid_rows[:, half:])
        periodic = [h for h in halves if np.array_equal(h[width:], h[:-width])]
        if not periodic:
            continue
        bases = _bases(periodic[0][:width], d) if width >= 3 else [10000.0]
        extent = float(max(height, width))
        frequencies = np.repeat(bases[0] ** (-np.arange(d // 4) / (d // 4)), 1)
        column = np.tile(np.concatenate([frequencies, frequencies]), 2) * extent

        def angle(column: np.ndarray = column) -> np.ndarray:
            return np.broadcast_to(column, values.shape)

        for base in bases[:2]:
            over = {"base": base} if base != 10000.0 else {}
            if cls:
                over["cls_token"] = True
            grid_values = {"grid": (height, width), "d_model": d, **over}
            yield Hypothesis("sincos2d", grid_values, "pe", "sincos2d", 1.0, len(over), angle)


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
