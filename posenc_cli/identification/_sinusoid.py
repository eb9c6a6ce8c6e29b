"""Hypotheses for a 1-D sinusoidal table (``posenc generate``: the paper and every framework preset).

A table of ``n`` rows and ``d`` columns is read as pairs of columns ``A sin(f_k p_r)``, ``A cos(f_k p_r)`` in one
of the three layouts, at positions ``p_r = start + step r``, possibly with one all-zero padding row (fairseq) and,
for an odd ``d``, a zero last column or the layout's natural extra column. For each layout whose pairs have one
amplitude ``A`` (``sqrt(sin**2 + cos**2)`` the same everywhere), the angles ``atan2`` give every column's rate per
row ``w_k = f_k step`` (:func:`~posenc_cli.identification._readoff.column_rates`), the rates the geometric law
``w_k = c0 rho**k``, and the slow columns' angle at the first row the start. Each preset then says how its
frequencies turn ``c0`` and ``rho`` into a base (``paper``: ``base = rho**(-d/2)``; ``shift s``:
``rho**-(d/2 - s)``; ``timescales m``: ``m rho**-(d/2 - 1)``) and a step (``c0 / f_0``); the options that differ from
the preset are the overrides. Read values are rounded to the simplest numbers near them
(:func:`~posenc_cli.identification._readoff.nice_numbers`); the exact table decides.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..encodings import presets
from ..errors import SpecError
from ._hypothesis import Hypothesis
from ._readoff import GeometricFit, column_rates, geometric_fit, nice_numbers, resolution, sample_rows

__all__ = ["sinusoid_hypotheses"]

_AMPLITUDE_SPREAD = 1e-3  # least allowed relative spread of sqrt(sin^2 + cos^2) over a table read as pairs
_MISFIT = 1e-3  # largest relative misfit of the geometric law


def _columns(layout: str, width: int, natural: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sine columns, cosine columns (pair ``k`` is ``(sin[k], cos[k])``) and every column's frequency index."""
    h = width // 2
    index = np.zeros(width, np.int64)
    if layout == "interleaved":
        sin, cos = np.arange(0, 2 * h, 2), np.arange(1, 2 * h, 2)
        index[: 2 * h] = np.repeat(np.arange(h), 2)
        if natural:
            index[2 * h] = h
        return sin, cos, index
    extra = 1 if natural else 0
    first, second = np.arange(h + extra), np.arange(h + extra, width)
    index[first], index[second] = np.arange(h + extra), np.arange(h)
    if layout == "sin-cos":
        return first[:h], second, index
    return second, first[:h], index


def _base_of(form: str, fit: GeometricFit, width: int, natural: bool, shift: float, m: float) -> float:
    """The base that makes ``rho`` in the preset's frequency form."""
    h = width // 2
    if form == "paper":
        return math.exp(-fit.log_rho * (width if natural else 2 * h) / 2)
    if form == "shift":
        return math.exp(-fit.log_rho * (h - shift))
    return m * math.exp(-fit.log_rho * max(h - 1, 1))


def _first_frequency(spec: presets.SinusoidSpec) -> float:
    """``f_0``: 1, or tensor2tensor's ``min_timescale``, which multiplies the frequencies (t2t#1923)."""
    return spec.min_timescale if spec.freq == "timescales" else 1.0


def _read(
    values: np.ndarray, rows: np.ndarray, layout: str, width: int, natural: bool, precision: float
) -> tuple[Any, ...] | None:
    """``(amplitude, fit, start/step, index)`` of the table read in ``layout``, or ``None`` if it is not one."""
    sin, cos, index = _columns(layout, width, natural)
    if len(sin) < 2:
        return None
    # the rows whose pairs have one amplitude: most of them (fine-tuned rows, an edited entry are left out of the
    # reading, and the comparison then names them). The rows the reading would use say first whether most do: a
    # learned table is then passed over at the cost of a few dozen rows, not of every layout's pass over the table
    spread = max(_AMPLITUDE_SPREAD, 8 * precision)
    probe = sample_rows(rows)
    for chosen in (probe, rows) if len(probe) < len(rows) else (rows,):
        amplitude = np.hypot(values[np.ix_(chosen, sin)], values[np.ix_(chosen, cos)])
        a = float(np.median(amplitude))
        if not a:
            return None
        steady = np.max(np.abs(amplitude - a), axis=1) <= spread * a
        if steady.sum() < max(3, len(chosen) // 2):
            return None
    rows = sample_rows(rows[steady])
    s, c = values[np.ix_(rows, sin)], values[np.ix_(rows, cos)]
    rates, phase = column_rates(np.arctan2(s, c), rows, "pair")
    fit = geometric_fit(rates, float(rows[-1] - rows[0]), noise=2 * precision)
    if fit is None or not fit.fits(_MISFIT):
        return None
    # the start (in steps) from the slow columns, whose angle at the first row is unambiguous
    k = np.arange(len(sin))
    w = fit.c0 * np.exp(fit.log_rho * k)
    wrapped = (phase + math.pi) % (2 * math.pi) - math.pi
    slow = np.abs(w) * max(1.0, float(rows[-1])) < 1.0
    if not slow.any():
        slow = k == k[-1]
    offsets = wrapped[slow] / w[slow] - rows[0]
    weights = np.abs(w[slow])
    start_steps = float(np.sum(offsets * weights) / np.sum(weights))
    return a, fit, start_steps, index


def _round_amplitude(amplitude: float, relative: float) -> float:
    """The simplest amplitude within ``relative`` (and at least ``1e-6``) of the one read: 1 for most tables."""
    near = nice_numbers(amplitude, max(relative, 1e-6), common=(1.0,))
    return near[0] if near else amplitude


def _snap(value: float, scale: float) -> list[float]:
    """Round candidates for a start or step read to about ``1e-4 * scale`` absolute (a step extrapolated to the
    fastest column is read to about that): an integer, else a short decimal; the read value when neither is that
    close."""
    out = []
    if abs(value - round(value)) <= 1e-4 * max(1.0, abs(scale)):
        out.append(float(round(value)))
    out += [v for v in nice_numbers(value, 1e-5, common=()) if v not in out]
    return out or [value]


def sinusoid_hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every preset's reading of the 2-D table ``values`` (float64), simplest first within each preset (none of a
    table of another number of axes)."""
    if values.ndim != 2:
        return
    n, d = values.shape
    if n < 3 or d < 4:
        return
    nonzero = values.any(axis=1)
    if (~nonzero).sum() > 1:
        return
    padding = int(np.flatnonzero(~nonzero)[0]) if not nonzero.all() else None
    rows = np.flatnonzero(nonzero)
    odd_modes: tuple[str | None, ...] = (None,)
    if d % 2:
        odd_modes = ("zero",) if not values[:, -1].any() else ("natural",)
    precision = resolution(values)
    seen: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    for odd in odd_modes:
        width = d - 1 if odd == "zero" else d
        natural = odd == "natural"
        for layout in presets.LAYOUTS:
            read = _read(values, rows, layout, width, natural, precision)
            if read is None:
                continue
            amplitude, fit, start_steps, index = read
            amplitude = _round_amplitude(amplitude, 8 * precision)
            for hypothesis in _presets(n, d, odd, layout, padding, amplitude, fit, start_steps, index, width, natural):
                if hypothesis.key() not in seen:
                    seen.add(hypothesis.key())
                    yield hypothesis


def _presets(
    n: int,
    d: int,
    odd: str | None,
    layout: str,
    padding: int | None,
    amplitude: float,
    fit: GeometricFit,
    start_steps: float,
    index: np.ndarray,
    width: int,
    natural: bool,
) -> Iterator[Hypothesis]:
    amplitudes = [amplitude]
    found: list[Hypothesis] = []
    for name, preset in presets.PRESETS.items():
        try:
            spec = presets.resolve(name, d_model=d)
        except SpecError:  # odd d_model refused by this preset
            if odd is None:
                continue
            spec = presets.resolve(name, d_model=d, odd=odd)
        forms: list[tuple[str, float, float]] = [(spec.freq, spec.freq_shift, spec.min_timescale)]
        if spec.freq == "timescales":  # step 1 and the first frequency read as min_timescale
            forms.append(("timescales-m", spec.freq_shift, spec.min_timescale))
        for form, shift, m in forms:
            overrides: dict[str, Any] = {}
            if form == "timescales-m":
                step_read = 1.0 if not preset.descending else -1.0
                m_read = fit.c0 / step_read
                m_values = nice_numbers(m_read, 1e-5, common=())
                if not m_values or m_values[0] == spec.min_timescale:
                    continue
                m = m_values[0]
                overrides["min_timescale"] = m
                form = "timescales"
            else:
                step_read = fit.c0 / _first_frequency(spec)
            base_read = _base_of(form, fit, width, natural, shift, m)
            read_to = fit.power_error(width / 2)  # bfloat16: the base is read to a few parts in 1e3
            coarse = read_to > 1e-4
            bases = nice_numbers(base_read, max(1e-4, read_to))
            if not bases:
                continue
            common = dict(overrides)
            # the simplest base; from a coarse reading also the next two (9300 before 9306). Never otherwise: an
            # unround base near the true one can pass the float32 rule where a perturbed entry fails the true one
            for base in bases[: 3 if coarse else 1]:
                overrides = dict(common)
                if base != 10000.0:
                    overrides["base"] = base
                if layout != spec.layout:
                    overrides["layout"] = layout
                if odd is not None and odd != spec.odd:
                    overrides["odd"] = odd
                if padding != spec.padding_idx:
                    overrides["padding_idx"] = "none" if padding is None else padding
                if amplitudes[0] != 1.0:
                    overrides["amplitude"] = amplitudes[0]
                default_start, default_step = (float(n - 1), -1.0) if preset.descending else (0.0, 1.0)
                step = _snap(step_read, abs(step_read))[0]
                start = _snap(start_steps * step, abs(step))[0]
                if (start, step) != (default_start, default_step):
                    if start != 0.0 or preset.descending:
                        overrides["start"] = start
                    if step != 1.0 or preset.descending:
                        overrides["step"] = step
                rates = fit.c0 * np.exp(fit.log_rho * index.astype(np.float64))

                def angle(rows: np.ndarray, rates: np.ndarray = rates, start: float = start_steps) -> np.ndarray:
                    out = np.abs(np.outer(start + rows.astype(np.float64), rates))
                    if odd == "zero":
                        out = np.hstack([out, np.zeros((len(rows), 1))])
                    return out

                values = {"seq_len": n, "d_model": d, "preset": name, **overrides}
                found.append(Hypothesis("generate", values, "pe", "sinusoid", amplitude, len(overrides), angle))
    found.sort(key=lambda h: h.overrides)
    groups: dict[tuple[Any, ...], list[Hypothesis]] = {}
    for hypothesis in found:
        groups.setdefault(_table_key(hypothesis, d), []).append(hypothesis)
    for group in groups.values():  # one hypothesis per exact table: the simplest, naming its equals
        first = group[0]
        same = tuple(h.preset for h in group[1:] if h.overrides == first.overrides and h.preset)
        yield dataclasses.replace(first, equivalent=tuple(dict.fromkeys(p for p in same if p != first.preset)))


def _table_key(hypothesis: Hypothesis, d: int) -> tuple[Any, ...]:
    """What decides the exact table of a ``generate`` hypothesis: the resolved spec, its frequencies as numbers."""
    values = {k: v for k, v in hypothesis.values.items() if k not in ("seq_len", "d_model", "preset")}
    name = hypothesis.preset
    n = int(hypothesis.values["seq_len"])
    if name is not None and presets.PRESETS[name].descending and "start" not in values and "step" not in values:
        values.update(start=float(n - 1), step=-1.0)
    padding = values.pop("padding_idx", None)
    try:
        spec = presets.resolve(
            name, d_model=d, padding_idx=padding if isinstance(padding, int) else None,
            no_padding=padding == "none", **values,
        )  # fmt: skip
    except SpecError:
        return ("refused", hypothesis.key())
    width = d - 1 if d % 2 and spec.odd == "zero" else d
    h = width // 2
    k = np.arange(h, dtype=np.float64)
    if spec.freq == "paper":
        f = spec.base ** (-2 * k / (d if d % 2 and spec.odd == "natural" else 2 * h))
    elif spec.freq == "shift":
        f = spec.base ** (-k / (h - spec.freq_shift))
    else:
        f = spec.min_timescale * (spec.base / spec.min_timescale) ** (-k / max(h - 1, 1))
    odd = spec.odd if d % 2 else None
    frequencies = tuple(float(f"{v:.11e}") for v in f)
    return spec.layout, odd, spec.padding_idx, spec.amplitude, spec.start, spec.step, frequencies
