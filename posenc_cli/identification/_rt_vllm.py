"""Hypotheses for vLLM's ``cos_sin_cache`` (``posenc rope --runtime vllm``; :mod:`posenc_cli.kinds.runtimes.vllm`).

A vLLM cache is ``(rows, rotary_dim)``, its first half cos and its second half sin of the same ``rotary_dim / 2``
frequencies: row 0 is ``[A .. A, 0 .. 0]`` (``A`` the folded attention scaling, 1 but for YaRN and LongRoPE), and
no other row has a sin half of zeros, except in Phi-3's ``long_short_cos_sin_cache``, whose long cache starts again
at position 0 on row ``original_max_positions``. The cos half is read as a half-width RoPE cos cache by the RoPE
reader (:func:`~posenc_cli.identification._rope.rope_hypotheses`), then the sin half as a sin cache (``asin`` reads
the slow frequencies of a short or bfloat16 cache, where ``acos`` is flat), on the first :data:`READ` rows, and each
reading that vLLM makes becomes the same reading with ``runtime="vllm"`` and the table's row count:

- ``none``, ``linear``, ``llama3``, ``yarn`` as read (vLLM's linear cache has transformers' exact values; a YaRN
  cache read without its attention scaling, DeepSeek-V3's ``mscale = mscale_all_dim``, is YaRN with an
  ``attention_factor`` of 1); transformers' dynamic NTK readings are not vLLM's (its dynamic cache is the default
  one, read as ``none``), nor are ``proportional`` ones (another class);
- only at a round ``theta`` (what configs give);
- ``longrope`` only for a cache of at most ``original_max_positions`` rows (the short cache alone);
- with a second row of zero sines at ``r``: LongRoPE, ``original_max_positions = r``, the short factors read from
  rows ``0 .. r - 1`` and the long ones from the rest, ``max_positions`` the rows after ``r`` (the whole cache) or
  the length its attention scaling ``sqrt(1 + ln(max / r) / ln r)`` says.

The work is the RoPE reader's on each half of the first :data:`READ` rows (LongRoPE: on the cos half of each
part), and one pass over the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._hypothesis import Hypothesis
from ._readoff import COMMON, nice_numbers
from ._rope import rope_hypotheses

__all__ = ["hypotheses"]

#: The attention scalings a vLLM cache is read with (the RoPE reader's own bounds).
_AMPLITUDES = (0.5, 2.0)
#: The rows read (the first; every row is compared): a float32 cache's angles drift from the exact ones by up to
#: ``|angle| 2**-24``, which past these rows is more than the RoPE reader takes for one frequency per column.
READ = 8192
#: The scalings vLLM's reading keeps from the RoPE reader's.
_KEPT = ("none", "linear", "llama3", "yarn", "longrope")


def hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """vLLM's readings of ``values`` (float64): none unless it is a ``cos_sin_cache`` (module docstring)."""
    if values.ndim != 2:
        return
    n, c = values.shape
    if n < 3 or c < 4 or c % 2:
        return
    h = c // 2
    first = values[0]
    amplitude = float(first[0])
    if not (_AMPLITUDES[0] <= amplitude <= _AMPLITUDES[1] and np.all(first[:h] == amplitude) and not first[h:].any()):
        return
    starts = np.flatnonzero(~values[:, h:].any(axis=1))  # rows at position 0
    if len(starts) == 1:
        seen: set[tuple[tuple[str, str], ...]] = set()
        for part in ("cos", "sin"):  # the cos half (its amplitude exact), then the sin half (asin reads slow columns)
            later: list[Hypothesis] = []  # LongRoPE's many readings of the short cache alone come last
            for hypothesis in _whole(values[:READ], n, part, seen):
                if hypothesis.values.get("scaling") == "longrope":
                    later.append(hypothesis)
                else:
                    yield hypothesis
            if part == "cos" and amplitude != 1.0:
                yield from _deepseek(values[:READ, :h], amplitude, n)
            yield from later
    elif len(starts) == 2 and 3 <= starts[1] <= n - 3 and np.array_equal(values[starts[1]], first):
        yield from _long_short(values[:, :h], int(starts[1]), amplitude)


def _from_rope(half: np.ndarray, part: str = "cos") -> Iterator[Hypothesis]:
    """The RoPE reader's readings of a half-width ``part`` cache (its own hypotheses, not the runtimes')."""
    for hypothesis in rope_hypotheses(half):
        if hypothesis.command == "rope" and hypothesis.array == part and "runtime" not in hypothesis.values:
            if _round(float(hypothesis.values.get("theta", 10000.0))):
                yield hypothesis


def _round(theta: float) -> bool:
    """A theta a model's config gives: a listed base, or three significant digits at most. A table of sinusoids in
    the same layout (cos, then sin: MusicGen's, diffusers' flipped timestep embedding) reads as a vLLM cache at a
    theta no config gives (MusicGen's ``10000 ** (h / (h - 1))``): that is not vLLM's, and the sinusoid reader
    names it."""
    return theta in COMMON or float(f"{theta:.2e}") == theta


def _both_halves(angle: Callable[[np.ndarray], np.ndarray] | None) -> Callable[[np.ndarray], np.ndarray] | None:
    if angle is None:
        return None
    return lambda rows: np.concatenate([angle(rows), angle(rows)], axis=1)


def _vllm(hypothesis: Hypothesis, values: dict[str, Any], array: str = "cos_sin_cache") -> Hypothesis:
    return Hypothesis(
        "rope",
        {"runtime": "vllm", **values},
        array,
        "rope",
        hypothesis.amplitude,
        hypothesis.overrides + 1,
        _both_halves(hypothesis.angle),
    )


def _whole(halves: np.ndarray, n: int, part: str, seen: set[tuple[tuple[str, str], ...]]) -> Iterator[Hypothesis]:
    """The RoPE reader's readings of the ``part`` half of a cache of one part (``halves``: its first rows), as
    vLLM makes them, each once (``seen``)."""
    h = halves.shape[1] // 2
    for hypothesis in _from_rope(halves[:, :h] if part == "cos" else halves[:, h:], part):
        values = {k: v for k, v in hypothesis.values.items() if k != "layout"}
        values.update(seq_len=n, head_dim=halves.shape[1])
        if values.get("scaling") == "linear" and values["factor"] == 1.0:  # a factor read as 1: the plain cache
            del values["scaling"], values["factor"]
        scaling = values.get("scaling", "none")
        if scaling not in _KEPT:
            continue
        if scaling == "yarn":
            values.pop("max_positions", None)  # vLLM's YaRN cache is as long as original * factor, whatever it is
            if values.pop("attention_scaling", True) is False:
                values["attention_factor"] = 1.0
        if scaling == "longrope" and n > int(values["original_max_positions"]):
            continue  # vLLM's would start its long cache at row original_max_positions
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key not in seen:
            seen.add(key)
            yield _vllm(hypothesis, values, "long_short_cos_sin_cache" if scaling == "longrope" else "cos_sin_cache")


def _deepseek(cos: np.ndarray, amplitude: float, n: int) -> Iterator[Hypothesis]:
    """DeepSeek's YaRN with a lone ``mscale``: the cache over its amplitude read as YaRN without its scaling (the
    factor from the slowest frequencies), and ``mscale = (A - 1) / (0.1 ln factor)``."""
    for hypothesis in _from_rope(cos / amplitude):
        values = {k: v for k, v in hypothesis.values.items() if k not in ("layout", "max_positions")}
        if values.get("scaling") != "yarn" or values.pop("attention_scaling", True) is not False:
            continue
        if values.get("truncate") is False:
            continue  # DeepSeek's class always truncates
        factor = float(values["factor"])
        for mscale in nice_numbers((amplitude - 1) / (0.1 * math.log(factor)), 1e-3, common=())[:2]:
            values.update(seq_len=n, head_dim=2 * cos.shape[1], mscale=mscale)
            found = _vllm(hypothesis, values)
            yield Hypothesis(found.command, found.values, found.array, "rope", amplitude, found.overrides, found.angle)


def _long_short(cos: np.ndarray, original: int, amplitude: float) -> Iterator[Hypothesis]:
    """Readings of Phi-3's two caches one after the other: LongRoPE with ``original`` rows of short ones."""
    n = cos.shape[0]
    short = _longrope_readings(cos[: min(original, READ)])
    long = _longrope_readings(cos[original : original + READ])
    lengths = [n - original]
    if amplitude > 1:  # the attention scaling sqrt(1 + ln(s) / ln(original)) gives s = max / original
        read = original * math.exp((amplitude * amplitude - 1) * math.log(original))
        for length in (2 ** round(math.log2(read)), 1024 * round(read / 1024)):
            if length > original and abs(length - read) <= 1e-2 * read and length not in lengths:
                lengths.append(length)
    for theta, (short_factors, hypothesis) in short.items():
        if theta not in long:
            continue
        for maximum in lengths:
            values: dict[str, Any] = {
                "seq_len": n, "head_dim": 2 * cos.shape[1], "scaling": "longrope", "original_max_positions": original,
                "max_positions": maximum, "short_factor": short_factors, "long_factor": long[theta][0],
            }  # fmt: skip
            if theta != 10000.0:
                values["theta"] = theta
            joined = _joined_angle(hypothesis, long[theta][1], original)
            yield Hypothesis("rope", {"runtime": "vllm", **values}, "long_short_cos_sin_cache", "rope", amplitude,
                             len(values) - 2, joined)  # fmt: skip


def _longrope_readings(cos: np.ndarray) -> dict[float, tuple[tuple[float, ...], Hypothesis]]:
    """``theta -> (factors, hypothesis)`` of the RoPE reader's LongRoPE readings of one cache (the first of each)."""
    found: dict[float, tuple[tuple[float, ...], Hypothesis]] = {}
    for hypothesis in _from_rope(cos):
        if hypothesis.values.get("scaling") == "longrope":
            theta = float(hypothesis.values.get("theta", 10000.0))
            found.setdefault(theta, (tuple(hypothesis.values["short_factor"]), hypothesis))
    return found


def _joined_angle(short: Hypothesis, long: Hypothesis, original: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """The angles of the joined cache: the short reading's rows below ``original``, the long one's after."""
    if short.angle is None or long.angle is None:
        return None
    short_angle, long_angle = short.angle, long.angle

    def angle(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows)
        low = rows < original
        out = np.empty((len(rows), 2 * short_angle(rows[:1]).shape[1]), np.float64)
        if low.any():
            a = short_angle(rows[low])
            out[low] = np.concatenate([a, a], axis=1)
        if (~low).any():
            a = long_angle(rows[~low] - original)
            out[~low] = np.concatenate([a, a], axis=1)
        return out

    return angle
