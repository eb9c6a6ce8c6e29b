"""Hypotheses for RoPE caches (``posenc rope``): a cos or sin cache ``(seq, head_dim)``, or ``inv_freq``.

A cache is recognised by its columns: HF's ``cat(freqs, freqs)`` repeats the first half (layout ``half``), GPT-J's
``repeat_interleave`` each column (``interleaved``), and a cache of ``head_dim/2`` distinct columns is ``half-width``
(ONNX Runtime GenAI); a cos cache has one value in row 0 (its attention scaling ``A``), a sin cache zeros. The
distinct columns give their frequencies ``t_j`` (:func:`~posenc_cli.identification._readoff.column_rates`; a 1-D
``inv_freq`` is its frequencies). Then each scaling mode turns them into its parameters:

- ``none``: ``t_j = theta**(-2j/head_dim)``, ``t_0 = 1``: ``theta`` from the ratio; ``linear``: the same over
  ``factor = 1/t_0``; ``dynamic``: a ``none`` table whose ``theta`` is not round is HF's NTK base
  ``theta (factor L/max - (factor - 1))**(d/(d-2))``, read for round ``theta`` and ``max`` (``L = seq``).
- ``proportional`` (Gemma 4): the first ``rotary_dim/2`` frequencies as ``linear`` (over ``head_dim``), the rest
  exactly 0 (columns of cos 1, sin 0);
- otherwise the multipliers ``theta**(-2j/head_dim) / t_j`` (``theta`` from the first two, unscaled, columns):
  ``llama3`` (``A = 1``, ``factor`` the largest multiplier), ``yarn`` (``A = 0.1 ln factor + 1``), ``longrope``
  (each multiplier a factor, ``A`` from ``original`` and ``max``), with the pre-training lengths configurations
  use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._hypothesis import Hypothesis
from ._readoff import COMMON, FLAT, column_rates, geometric_fit, nice_numbers, resolution
from ._runtimes import runtime_hypotheses

__all__ = ["cache_hypotheses", "rope_hypotheses"]

#: Pre-training context lengths configurations name (``original_max_position_embeddings``).
ORIGINALS = (4096, 8192, 2048, 32768, 16384, 131072, 1024, 65536, 512, 256)
#: The scaling factors configurations use (llama3, YaRN), tried where a factor is read coarsely.
_POWERS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def _distinct(values: np.ndarray) -> tuple[str, np.ndarray] | None:
    n, c = values.shape
    if c % 2 == 0 and np.array_equal(values[:, : c // 2], values[:, c // 2 :]):
        return "half", values[:, : c // 2]
    if c % 2 == 0 and np.array_equal(values[:, 0::2], values[:, 1::2]):
        return "interleaved", values[:, 0::2]
    return "half-width", values


def rope_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every scaling mode's reading of a cos/sin cache (2-D) or an ``inv_freq`` (1-D), the runtimes' arrays' first
    (:mod:`~posenc_cli.identification._runtimes`)."""
    yield from runtime_hypotheses(values)
    yield from cache_hypotheses(values)


def cache_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every scaling mode's reading of posenc's own arrays (``cos``, ``sin``, ``inv_freq``): what a runtime's
    reader renames where its arrays are these."""
    if values.ndim == 1:
        t = values
        active = t[: int(np.flatnonzero(t)[-1]) + 1] if t.any() else t[:0]  # proportional: zeros at the end
        if len(active) < 2 or not (active > 0).all() or not (np.diff(active) < 0).all():
            return
        yield from _modes(t, None, "inv_freq", "half", 1.0, "inv_freq")
        return
    n, c = values.shape
    if n < 3 or c < 2:
        return
    first = values[0]
    if np.all(first == first[0]) and first[0] > 0 and float(np.abs(values).max()) <= first[0] * (1 + 1e-6):
        mode, amplitude = "cos", float(first[0])
    elif not first.any():
        mode, amplitude = "sin", float(np.abs(values).max())
        if abs(amplitude - 1) < 1e-3:
            amplitude = 1.0
    else:
        return
    if not _SCALINGS[0] <= amplitude <= _SCALINGS[1]:
        return
    found = _distinct(values)
    if found is None:
        return
    layout, distinct = found
    if distinct.shape[1] < 2:
        return
    precision = resolution(values)
    # rows near +-1 say little when the amplitude itself is rounded (a bfloat16 YaRN cache: 1.140625 for 1.1386)
    flat = min(FLAT, 1 - 25 * precision) if amplitude != 1.0 else FLAT
    rates, _ = column_rates(distinct / amplitude, np.arange(n), mode, flat=flat)
    t = np.abs(rates)
    idle = np.all(distinct == distinct[0], axis=0)  # Gemma 4's proportional: columns not rotated, cos 1 and sin 0
    t[idle] = 0.0
    wave = np.cos if mode == "cos" else np.sin
    model = amplitude * wave(np.outer(np.arange(n, dtype=np.float64), t))
    allowed = max(1e-3, 8 * precision) * amplitude  # a cache rounded to bfloat16 is still one
    if float(np.max(np.abs(model - distinct))) > allowed:  # not one frequency per column: not a cache
        return
    yield from _modes(t, n, mode, layout, amplitude, mode, noise=2 * precision)


#: The attention scalings a cache is read with (its amplitude): every scaling mode's, far beyond (YaRN's
#: ``0.1 ln f + 1`` is 2 at a factor of 22026); the factors read back from them (``exp``) stay finite.
_SCALINGS = (0.5, 2.0)
#: The angle a column must reach over the cache to be read well: acos is flat near 0 (cos caches), asin is not.
_MEASURED = {"cos": 0.05, "sin": 1e-3}
#: llama3's default band edges (every Llama 3.x configuration uses them).
_LOW, _HIGH = 1.0, 4.0


def _modes(
    t: np.ndarray, n: int | None, mode: str, layout: str, amplitude: float, array: str, *, noise: float = 0.0
) -> Iterator[Hypothesis]:
    """The hypotheses of the rates ``t`` read from a cache of ``n`` rows (``None``: ``inv_freq`` itself), whose
    angles are read to ``noise`` radians (a bfloat16 cache: ``2**-7``)."""
    m = len(t)
    active = int(np.flatnonzero(t)[-1]) + 1 if t.any() else 0
    # frequency 0 past the first `active`: proportional (Gemma 4), whose cut is abrupt. Columns that only turn too
    # slowly to leave cos = 1 in a short float32 cache are not a cut: the last active one must turn visibly.
    abrupt = n is None or (active >= 1 and t[active - 1] * (n - 1) >= 0.5)
    if 2 <= active < m and not t[active:].any() and abrupt:
        yield from _proportional(t, n, layout, amplitude, array, active)
    head_dim = 2 * m
    seq = n if n is not None else 1
    base_values: dict[str, Any] = {"seq_len": seq, "head_dim": head_dim}
    if layout != "half":
        base_values["layout"] = layout

    angle = _angles(t, layout)

    def make(overrides: dict[str, Any], count: int, a: float = amplitude) -> Hypothesis:
        values = {**base_values, **overrides}
        return Hypothesis("rope", values, array, "rope", a, count, angle if n is not None else None)

    span = float(max(seq - 1, 1)) if n is not None else 1e9  # inv_freq: every value is measured exactly
    least = _MEASURED.get(mode, 0.0)
    fit = geometric_fit(t, span, limit=3.0 if n is not None else math.inf, measured=max(least, 1e-3), noise=noise)
    geometric = fit is not None and fit.fits(1e-3) and fit.used == fit.usable
    scaled = abs(amplitude - 1) > 1e-6
    if geometric and fit is not None and not scaled:
        theta_read = math.exp(-fit.log_rho * m)
        first = abs(fit.c0)
        thetas = nice_numbers(theta_read, max(1e-4, fit.power_error(m)))
        if abs(first - 1) < 1e-5:
            # a round theta; else HF's dynamic NTK base over a round one; else theta as read
            for theta in [v for v in thetas if _round(v)][:2]:
                yield make({"theta": theta} if theta != 10000.0 else {}, 0 if theta == 10000.0 else 1)
            if n is not None:
                yield from _dynamic(theta_read, head_dim, n, make)
            if thetas and not _round(thetas[-1]):  # theta as read (an NTK base of a length the file does not say)
                yield make({"theta": thetas[-1]}, 2)
        else:
            for theta in thetas[:2]:
                for factor in nice_numbers(1 / first, 1e-4, common=())[:2]:
                    over = {"scaling": "linear", "factor": factor}
                    if theta != 10000.0:
                        over["theta"] = theta
                    yield make(over, len(over))
    if m < 3:
        return
    # non-geometric, or scaled: the multipliers over the unscaled frequencies (theta from the fastest columns,
    # which llama3 and YaRN leave alone). Read at all: acos's flat end still tells a factor to a few digits (a
    # bfloat16 cache: a column must turn by about a radian for its rate to be read to half a per cent)
    seen = t * span > max(1e-3, 8 * noise / 5e-2)
    for theta in _fast_thetas(t, span, noise)[:2]:
        unscaled = theta ** (-2.0 * np.arange(m) / head_dim)
        mult = np.where(seen, t / unscaled, 1.0)  # posenc's multiplier: inv_freq = mult * theta**(-2k/d)
        over_theta = {"theta": theta} if theta != 10000.0 else {}
        if not scaled:
            for original, factor in _llama3_readings(unscaled, mult, seen, noise):
                over = {**over_theta, "scaling": "llama3", "factor": factor, "original_max_positions": original}
                yield make(over, len(over))
            # YaRN with its attention scaling left out of the caches (or an inv_freq): the slowest are 1/factor
            least_mult = float(mult[seen].min()) if seen.any() else 1.0
            factors = nice_numbers(1 / least_mult, 2e-2, common=_POWERS)[:1]
            for over in _yarn(factors, over_theta, folded=array == "inv_freq"):
                yield make(over, len(over))
        else:  # YaRN's attention scaling 0.1 ln(factor) + 1 is the amplitude
            read = math.exp((amplitude - 1) / 0.1)
            spread = 2 * noise * amplitude / 0.1  # a bfloat16 amplitude gives the factor to a few per cent
            if spread <= 1e-3:
                factors = nice_numbers(read, 1e-3, common=())[:2]
            else:
                factors = [f for f in _POWERS if abs(f - read) <= spread * f][:1]
            for over in _yarn(factors, over_theta, folded=True):
                yield make(over, len(over))
        listed = _factors(1 / mult, t * span, seen)
        for original in ORIGINALS:
            maxima = [original]
            if scaled:
                s = math.exp((amplitude**2 - 1) * math.log(original))
                maxima = _lengths(original * s)
            for maximum in maxima:
                over = {
                    **over_theta,
                    "scaling": "longrope",
                    "original_max_positions": original,
                    "max_positions": int(maximum),
                    "short_factor": listed,
                    "long_factor": listed,
                }
                yield make(over, 4 + len(over_theta))


def _angles(t: np.ndarray, layout: str) -> Callable[[np.ndarray], np.ndarray]:
    """The entries' angles ``position * frequency`` of a cache in ``layout``, at the rows asked for."""
    cols = np.repeat(t, 2) if layout == "interleaved" else np.concatenate([t, t]) if layout == "half" else t

    def angle(rows: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(rows.astype(np.float64)[:, None] * cols[None, :]), np.float64)

    return angle


def _proportional(
    t: np.ndarray, n: int | None, layout: str, amplitude: float, array: str, active: int
) -> Iterator[Hypothesis]:
    """HF's ``proportional`` (Gemma 4): ``t_j = theta**(-2j/head_dim) / factor`` for the first ``active``
    frequencies (``rotary_dim = 2 active``), 0 for the others."""
    m = len(t)
    head_dim = 2 * m
    seq = n if n is not None else 1
    theta_read = _theta_of(t, m)
    angle = _angles(t, layout)

    for theta in nice_numbers(theta_read, 1e-4)[:2] if theta_read is not None else []:
        for factor in nice_numbers(1 / t[0], 1e-4, common=(1.0,))[:1]:
            over: dict[str, Any] = {"scaling": "proportional", "rotary_dim": 2 * active}
            if theta != 10000.0:
                over["theta"] = theta
            if factor != 1.0:
                over["factor"] = factor
            if layout != "half":
                over["layout"] = layout
            values = {"seq_len": seq, "head_dim": head_dim, **over}
            yield Hypothesis("rope", values, array, "rope", amplitude, len(over), angle if n is not None else None)


def _yarn(factors: list[float], over_theta: dict[str, Any], *, folded: bool) -> Iterator[dict[str, Any]]:
    """YaRN's options for each factor and pre-training length (``folded``: the attention scaling as HF folds it
    into the caches, else ``attention_scaling = False``), each with the correction range floored and ceiled (HF's
    default) and then as computed (``truncate: false``, gpt-oss)."""
    for factor in factors:
        if factor <= 1:
            continue
        for original in ORIGINALS:
            over = {
                **over_theta,
                "scaling": "yarn",
                "factor": factor,
                "original_max_positions": original,
                "max_positions": int(round(original * factor)),
            }
            if not folded:
                over["attention_scaling"] = False
            yield over
            yield {**over, "truncate": False}


def _round(value: float) -> bool:
    """A theta a configuration would write: a listed base or at most three significant digits."""
    return value in COMMON or float(f"{value:.2e}") == value


def _lengths(read: float) -> list[int]:
    """Context lengths near ``read`` (within 1 %): a power of two, a multiple of 1024, a round number."""
    out = [2 ** round(math.log2(read)), 1024 * round(read / 1024)]
    out += [int(v) for v in nice_numbers(read, 1e-3, common=(), integer=True)]
    return [v for v in dict.fromkeys(out) if v > 0 and abs(v - read) <= 1e-2 * read]


def _factors(factors: np.ndarray, reach: np.ndarray, good: np.ndarray) -> tuple[float, ...]:
    """LongRoPE's per-frequency factors, each the simplest number within what its column says of it."""
    out = []
    for factor, angle, known in zip(factors, reach, good, strict=True):
        relative = max(1e-4, 1e-6 / max(float(angle), 1e-12) ** 2) if known else 1.0
        out.append((nice_numbers(float(factor), min(relative, 0.5), common=(1.0,)) or [float(factor)])[0])
    return tuple(out)


def _fast_thetas(t: np.ndarray, span: float, noise: float) -> list[float]:
    """Round thetas for the fastest columns' law: fitted over the first eight when they share one (a table read to
    only ``noise``, bfloat16, needs them all), else from the first two, ``(t_0 / t_1)**m`` (LongRoPE scales every
    column by its own factor)."""
    m = len(t)
    found: list[float] = []
    head = geometric_fit(t[:8], span, limit=math.inf, measured=1e-3, noise=noise) if m >= 4 else None
    if head is not None and head.used == head.usable == min(8, m) and head.fits(1e-3):
        found += nice_numbers(math.exp(-head.log_rho * m), max(1e-3, head.power_error(m)))[:2]
    pair = _theta_of(t, m)
    if pair is not None:
        found += [v for v in nice_numbers(pair, 1e-3)[:2] if v not in found]
    return found


def _theta_of(t: np.ndarray, m: int) -> float | None:
    """``(t_0 / t_1)**m``, the theta of the first two frequencies; ``None`` unless they decrease from a positive
    ``t_1`` (an idle column, Gemma 4's, is 0) to a theta within float64's range."""
    if not 0 < t[1] < t[0]:
        return None
    exponent = m * math.log(float(t[0] / t[1]))
    return math.exp(exponent) if exponent < 700 else None


def _llama3_readings(
    unscaled: np.ndarray, mult: np.ndarray, good: np.ndarray, noise: float = 0.0
) -> Iterator[tuple[int, float]]:
    """``(original, factor)`` pairs the multipliers read as llama3 (default band edges).

    Each band column gives the factor as ``(1 - s) / (mult - s)``, which magnifies the multiplier's error by about
    the factor squared: from a table read to only ``noise`` (bfloat16), the columns' factors agree to a quarter, and
    only the usual powers of two are taken (they are twice apart, so a quarter cannot confuse them)."""
    spread = 5e-2 if noise < 1e-4 else 0.25
    for original in ORIGINALS:
        cycles = original * unscaled / (2 * math.pi)
        s = (cycles - _LOW) / (_HIGH - _LOW)
        band = good & (s < 1) & (mult < 1 - 1e-6)
        if not band.any():
            continue
        smooth = np.clip(s[band], 0.0, None)
        estimates = (1 - smooth) / (mult[band] - smooth)
        if not np.all(np.isfinite(estimates)) or float(np.ptp(estimates)) > spread * float(np.max(np.abs(estimates))):
            continue
        read = float(np.median(estimates))
        factors = (
            nice_numbers(read, 5e-2, common=_POWERS)
            if spread < 0.25
            else [f for f in _POWERS if abs(f - read) <= 0.25 * f]
        )
        for factor in factors[:1]:
            if factor > 1:
                yield original, factor


def _dynamic(theta_read: float, head_dim: int, n: int, make: Any) -> Iterator[Hypothesis]:
    """HF dynamic NTK: ``theta_read = theta (f n/M - (f - 1))**(d/(d-2))`` for a round ``theta`` and ``M < n``."""
    for theta in COMMON:
        if theta >= theta_read:
            continue
        q = (theta_read / theta) ** ((head_dim - 2) / head_dim)
        maximum = 1
        while maximum * 2 < n:
            maximum *= 2
        tried = 0
        while maximum >= 2 and tried < 8:
            factor_read = (q - 1) / (n / maximum - 1)
            for factor in nice_numbers(factor_read, 1e-3, common=())[:1]:
                if factor > 1 and len(f"{factor:g}") <= 4:
                    over = {"scaling": "dynamic", "factor": factor, "max_positions": maximum}
                    if theta != 10000.0:
                        over["theta"] = theta
                    yield make(over, len(over))
            maximum //= 2
            tried += 1
