"""Reading a sinusoidal table's parameters off its values: the angle of every column at every row, the frequency of
each column, the geometric law the frequencies follow, and round numbers for what was read.

Every function here takes the stored values (float64) and returns estimates; nothing here decides a match (the
regenerated exact table does, :mod:`posenc_cli.identification._compare`). The estimates only have to be close enough to
name the parameters: a base read to six digits snaps to ``10000``, and the exact table then says whether it is.

Angles
    A column ``A sin(w r + p)`` (and its cosine partner) gives its angle at every row exactly, ``atan2``; a column
    seen alone (a RoPE cos or sin cache) gives it up to a reflection, ``+-acos`` or ``asin`` and ``pi - asin``.
    :func:`column_rates` turns either into the angle's rate per row ``w`` by refinement: a first estimate from
    the first two rows, then rows ``2, 4, 8, ...`` away, each choosing the branch of the angle nearest the
    prediction and dividing its error by a distance twice as long, so that the last estimate is as good as the
    angle at the last row allows (``1e-7 / n`` for a float32 table of ``n`` rows). A rate above ``pi`` per row is
    seen folded (aliased), as any sampled sine is; the frequency laws below are fitted on the unfolded columns.
Frequencies
    Every framework's frequencies are geometric in the column, ``f_k = f_0 rho**k``: :func:`geometric_fit` fits
    ``ln |w_k| = ln c_0 + k ln rho`` over the columns whose rate is measured well and is not folded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FLAT", "GeometricFit", "column_rates", "geometric_fit", "nice_numbers", "resolution", "sample_rows"]

#: Rows whose normalised value is closer than this to +-1 say little about a reflected angle (``acos`` near 0):
#: the refinement keeps its estimate there.
FLAT = 0.999


def _nearest_branch(candidates: Sequence[np.ndarray], predicted: np.ndarray) -> np.ndarray:
    """Of each candidate angle (mod 2 pi), the representative nearest ``predicted``, elementwise."""
    best = None
    best_gap = None
    for angle in candidates:
        turns = np.round((predicted - angle) / (2 * math.pi))
        value = angle + 2 * math.pi * turns
        gap = np.abs(value - predicted)
        if best is None or best_gap is None:
            best, best_gap = value, gap
        else:
            closer = gap < best_gap
            best = np.where(closer, value, best)
            best_gap = np.where(closer, gap, best_gap)
    assert best is not None
    return np.asarray(best, np.float64)


def _branches(values: np.ndarray, mode: str, flat: float = FLAT) -> tuple[list[np.ndarray], np.ndarray]:
    """The candidate angles of ``values`` (angles for ``pair``; normalised values otherwise) and where they are
    well conditioned."""
    if mode == "pair":
        return [values], np.ones(values.shape, bool)
    v = np.clip(values, -1.0, 1.0)
    if mode == "cos":
        a = np.arccos(v)
        return [a, -a], np.abs(v) < flat
    a = np.arcsin(v)
    return [a, math.pi - a], np.abs(v) < flat


def resolution(values: np.ndarray) -> float:
    """The relative precision the stored values carry: ``2**-8`` when every one is a bfloat16 value, ``2**-11``
    a float16 one, ``2**-24`` a float32 one, else ``2**-53``. The readings' own checks (one amplitude, one
    frequency per column) allow a few of these, never less than ``1e-3``: a table rounded to bfloat16 is still
    read."""
    narrow = values.astype(np.float32)
    if not np.array_equal(narrow, values):
        return 2.0**-53
    if not (narrow.view(np.uint32) & 0xFFFF).any():
        return 2.0**-8
    with np.errstate(over="ignore"):
        if np.array_equal(narrow.astype(np.float16).astype(np.float32), narrow):
            return 2.0**-11
    return 2.0**-24


def sample_rows(rows: np.ndarray, spread: int = 32) -> np.ndarray:
    """The rows :func:`column_rates` reads (the first two, then 2, 4, 8, ... rows on, and the last) and ``spread``
    rows evenly spaced, from ``rows`` (increasing): a large table is read from a few dozen rows."""
    if len(rows) <= 2 * spread:
        return rows
    offsets = rows - rows[0]
    wanted = [0, 1]
    distance = 2 * int(offsets[1])
    while distance < offsets[-1]:
        wanted.append(int(np.searchsorted(offsets, distance)))
        distance *= 2
    wanted += [len(rows) - 1, *np.linspace(0, len(rows) - 1, spread).astype(int).tolist()]
    return np.asarray(rows[np.unique(np.clip(wanted, 0, len(rows) - 1))])


def column_rates(
    values: np.ndarray, rows: np.ndarray, mode: str, *, flat: float = FLAT
) -> tuple[np.ndarray, np.ndarray]:
    """The rate per row ``w`` and the angle at ``rows[0]`` of every column of ``values`` (shape ``(len(rows), C)``).

    ``mode``: ``"pair"`` (``values`` are angles, from ``atan2``), ``"cos"`` or ``"sin"`` (values divided by the
    amplitude; the angle at ``rows[0]`` is taken as 0, the RoPE caches' position 0). ``rows`` are the row
    numbers of ``values`` (a padding row left out), increasing. ``flat``: rows whose normalised value is nearer
    +-1 than this do not refine a reflected angle (an amplitude read to ``e`` moves ``acos`` by ``e cot``; a
    bfloat16 cache of amplitude 1.14 needs ``0.9``).
    """
    count, width = values.shape
    origin = rows[0]
    if count < 2:
        return np.zeros(width), np.zeros(width)
    branches, good = _branches(values, mode, flat)
    start = branches[0][0] if mode == "pair" else np.zeros(width)
    # first estimate: the next row, its branch nearest a rate in [0, pi) (cos) or the smallest step (pair, sin)
    first = _nearest_branch([b[1] for b in branches], start + (0.0 if mode == "pair" else 0.5))
    span = rows[1] - origin
    rate = (first - start) / span if mode != "cos" else np.abs(first - start) / span
    distance = 2 * span
    last = rows[-1] - origin
    while True:
        target = min(distance, last)
        i = int(np.searchsorted(rows - origin, target))
        i = min(max(i, 1), count - 1)
        reach = rows[i] - origin
        predicted = start + rate * reach
        chosen = _nearest_branch([b[i] for b in branches], predicted)
        rate = np.where(good[i], (chosen - start) / reach, rate)
        if target >= last:
            break
        distance *= 2
    if mode == "cos":  # the slowest columns never leave acos's flat end: their last row is the best estimate
        slow = np.abs(rate) * last < 0.05
        if slow.any():
            rate = np.where(slow, np.arccos(np.clip(values[-1], -1.0, 1.0)) / last, rate)
    return rate, start


@dataclass(frozen=True)
class GeometricFit:
    """``w_k = c0 * rho**k`` over the ``used`` slowest columns (of ``usable`` measured well), and the worst relative
    misfit of any of them."""

    c0: float
    log_rho: float
    used: int
    usable: int
    misfit: float
    #: The misfit the angles' own error allows: ``noise / (|w| span)`` of the least measured column used, times 2.
    expected: float = 0.0

    def power_error(self, power: float) -> float:
        """The relative error of ``rho**power`` (a base read from the law) that the angles' error allows: at most
        ``expected / (used - 1)`` in ``ln rho``, the slope through two columns at the ends each off by half the
        misfit allowed; 0 for exact angles."""
        return abs(power) * self.expected / max(self.used - 1, 1)

    def fits(self, misfit: float) -> bool:
        """Whether the law holds to ``misfit`` (relative), or to what the angles' error allows if that is more."""
        return self.misfit <= max(misfit, self.expected)


def _fit(k: np.ndarray, magnitude: np.ndarray, span: float) -> tuple[float, float, float]:
    weight = np.sqrt((magnitude * span) ** 2)
    if len(k) == 2:
        slope = float((np.log(magnitude[1]) - np.log(magnitude[0])) / (k[1] - k[0]))
        intercept = float(np.log(magnitude[0]) - slope * k[0])
    else:
        slope, intercept = (float(v) for v in np.polyfit(k, np.log(magnitude), 1, w=weight))
    predicted = np.exp(intercept + slope * k)
    return slope, intercept, float(np.max(np.abs(predicted - magnitude) / magnitude))


def geometric_fit(
    rates: np.ndarray,
    span: float,
    *,
    limit: float = 1.0,
    agree: float = 1e-2,
    measured: float = 1e-3,
    noise: float = 0.0,
) -> GeometricFit | None:
    """Fit ``rates[k] = c0 * rho**k`` from the slow end: the two slowest columns measured well
    (``|rate| * span > measured``), then each faster column in turn while it is below ``limit`` (not folded), has the
    same sign and lies within ``agree`` (relative) of the law fitted so far. ``None`` when fewer than two columns
    qualify. A law that holds for every column has ``used == usable``; folded or scaled columns stop the run.

    ``noise`` is the error of the angles the rates were read from (radians; ``2 * resolution(values)`` for values
    of amplitude about 1): ``2**-7`` for a table stored in bfloat16, where a column that turns by less than a
    radian over the table is read to a few per cent. Only columns whose turn over ``span`` is at least
    ``8 noise / agree`` are measured well, so each rate used is read to ``agree / 8``;
    :attr:`GeometricFit.expected` is the misfit that error allows."""
    magnitude = np.abs(rates)
    usable = np.flatnonzero(magnitude * span > max(measured, 8 * noise / agree))
    if len(usable) < 2:
        return None
    run = [int(usable[-1])]
    sign = np.sign(rates[run[0]])
    for k in usable[-2::-1]:
        k = int(k)
        if magnitude[k] >= limit or np.sign(rates[k]) != sign or k != run[-1] - 1:
            break
        if len(run) >= 2:
            slope, intercept, _ = _fit(np.array(run[::-1], np.float64), magnitude[run[::-1]], span)
            if abs(np.exp(intercept + slope * k) - magnitude[k]) > agree * magnitude[k]:
                break
        run.append(k)
    if len(run) < 2:
        return None
    ks = np.array(run[::-1], np.float64)
    slope, intercept, misfit = _fit(ks, magnitude[run[::-1]], span)
    expected = 2 * noise / float(np.min(magnitude[run]) * span)
    return GeometricFit(float(sign * np.exp(intercept)), slope, len(run), len(usable), misfit, expected)


#: Bases and factors that configurations use, tried before any rounding of a read value.
COMMON = (10000.0, 500000.0, 1000000.0, 1000.0, 100.0, 10.0, 100000.0, 50000.0, 5000000.0, 10000000.0)


def nice_numbers(
    value: float, relative: float, *, common: Sequence[float] = COMMON, integer: bool = False
) -> list[float]:
    """Round numbers within ``relative`` of ``value``, simplest first: a listed common value, then ``value`` to 1,
    2, ... 7 significant digits; the read value itself (to 9 digits) last. ``integer``: only integers."""
    out: list[float] = []
    if not math.isfinite(value) or value == 0:
        return out

    def add(candidate: float) -> None:
        if integer and candidate != round(candidate):
            return
        if abs(candidate - value) <= relative * abs(value) and candidate not in out and candidate != 0:
            out.append(candidate)

    for candidate in common:
        add(float(candidate))
    for digits in range(1, 8):
        add(float(f"{value:.{digits - 1}e}"))
    add(float(round(value)) if integer else float(f"{value:.8e}"))
    return out
