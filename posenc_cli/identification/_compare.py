"""Comparing a stored table with the exact table of one hypothesis: how close, and whether it is a match.

The rule (the one the framework goldens use, ``tests/goldens/manifest.json``):

- **bit-identical**: every entry equals the exact value rounded to the stored type (frameworks that compute in
  float64 and round once: DistilBERT/XLM, Marian, MAE's numpy).
- **within the framework's rounding**: every entry is within ``8 u (1 + |angle|) A`` of the exact value, ``u`` the
  stored type's unit roundoff (``2**-24`` for float32, so ``2**-21``), ``angle`` the entry's exact sine/cosine
  argument and ``A`` the table's amplitude (RoPE: the attention scaling): a float32 pipeline rounds the angle
  (relative ``u``), its ``exp``/``pow`` of the frequencies and its ``sin``, and the error grows with the angle.
  Whisper's and diffusers' float32 ``exp`` of a float32 exponent reach 1.45 times ``2**-22`` on 256 rows, hence
  ``8 u``. ALiBi (no angle): within ``16 u |exact|``, BLOOM's float32 powers.
- **rounded once from float64**: a table bit-identical in at least 99 % of its entries (with at least 100
  entries) was computed in float64 and rounded once (a float32 pipeline leaves a third or more of the entries a
  unit off): each of its entries must then be within half a unit of the stored type of the exact value, plus the
  float64 pipeline's own error ``8 * 2**-53 (1 + |angle|) A`` (at 8192 positions, numpy's float64 angles move a
  few values near a zero crossing by a unit of their float32). Any entry beyond is a departure (a fine-tuned
  row, an edited entry), however small the table's other errors.
- **rounded to a narrower type** (a float32 array holding bfloat16 or float16 values): every entry is within
  half a unit of the narrow type (at the entry) plus the float32 rule's ``8 u (1 + |angle|) A`` of the exact value:
  the framework computed in float32 and rounded the result once more. (The narrow type's unit alone in the
  angle rule would allow ``2**-5 |angle|``, enough to take a neighbouring base for the true one.)
- **not a match**: anything else.

Departures are the entries outside the rule: the report names their rows and columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Comparison", "compare", "ranges"]

#: Share of bit-identical entries from which a table counts as rounded once (see the module docstring).
ROUNDED_ONCE = 0.99
_MIN_ENTRIES = 100
_SHOWN = 12  # departure rows/columns listed, at most


@dataclass(frozen=True)
class Comparison:
    """How a stored table departs from one exact table."""

    matched: bool
    agreement: str  # "bit-identical", "within float32 rounding" (the stored type's), "none"
    max_abs_error: float
    max_ulp_error: float  # in units in the last place of each entry's exact value (large near zeros of sin)
    max_amplitude_ulps: float  # the largest error in units in the last place of the table's amplitude
    identical: float  # share of bit-identical entries
    worst_ratio: float  # max over entries of error / allowed error
    departures: int
    compared: int  # entries compared (the first rows only when a reading was far off there already)
    rows: tuple[int, ...]
    columns: tuple[int, ...]
    worst: tuple[int, ...] | None  # index of the worst entry

    def summary(self) -> dict[str, object]:
        """The JSON form."""
        return {
            "agreement": self.agreement,
            "max_abs_error": self.max_abs_error,
            "max_ulp_error": self.max_ulp_error,
            "max_amplitude_ulps": self.max_amplitude_ulps,
            "bit_identical_share": round(self.identical, 6),
            "departures": self.departures,
            "entries_compared": self.compared,
            "departure_rows": ranges(self.rows),
            "departure_columns": ranges(self.columns),
        }


def _unit_roundoff(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps) / 2


#: Entries compared at a time: the temporaries of one block stay in the processor's cache, and the memory a
#: comparison takes besides its two tables is a few blocks, whatever the table's size.
BLOCK = 1 << 16


def compare(
    stored: np.ndarray,
    exact: np.ndarray,
    *,
    angle: Callable[[np.ndarray], np.ndarray] | None,
    amplitude: float = 1.0,
    rounded: np.ndarray | None = None,
    narrow: str | None = None,
    screen: bool = False,
    at: np.ndarray | None = None,
) -> Comparison:
    """Compare ``stored`` (its own float type) with ``exact`` (float64, the same shape), a block of rows at a time.

    ``angle``: the entries' sine/cosine arguments at the row numbers it is given (broadcasting to those rows), or
    ``None`` for the relative rule. ``rounded``: the exact table correctly rounded to the stored type, when known;
    else ``exact`` cast to it. ``narrow``: the values were rounded to this narrower type before being stored
    (``bfloat16``, ``float16``): its unit roundoff is the one that counts, and ``rounded`` must then be the exact
    table rounded to it. ``screen``: only the float rule (of ``narrow`` or the stored type), never the rule of a
    table rounded once, for a sample of rows: their share of bit-identical entries says nothing of the whole
    table's, and a float pipeline's first rows are often all bit-identical but for an entry a unit off (a
    departure under that rule). ``at``: the row numbers, in the whole table, of the rows of ``stored`` (a sample):
    the departures and ``angle`` name those.
    """
    count = stored.shape[0]
    step = max(1, BLOCK // max(1, math.prod(stored.shape[1:])))
    blocks = [slice(lo, min(count, lo + step)) for lo in range(0, count, step)]
    numbers = at if at is not None else np.arange(count)
    dtype = stored.dtype

    def rounded_rows(rows: slice) -> np.ndarray:
        with np.errstate(over="ignore"):  # an exact value beyond the stored type's range: inf, a departure
            return rounded[rows] if rounded is not None else exact[rows].astype(dtype)

    same = sum(int(np.count_nonzero(stored[rows] == rounded_rows(rows))) for rows in blocks)
    identical = same / stored.size if stored.size else 1.0
    if same == stored.size:
        rule = "bit-identical"
    elif identical >= ROUNDED_ONCE and stored.size >= _MIN_ENTRIES and not narrow and not screen:
        rule = "rounded once from float64"
    else:
        rule = f"within {narrow or dtype.name} rounding"
    u = {"bfloat16": 2.0**-8, "float16": 2.0**-11}[narrow] if narrow else _unit_roundoff(dtype)
    tally = _Tally(stored.shape, u, dtype, narrow, rule)
    # an error beyond the float range (a table of huge values against a sinusoid) is infinitely far: a departure
    with np.errstate(over="ignore"):
        for rows in blocks:
            growth = None if angle is None else 8 * (1 + np.abs(angle(numbers[rows]))) * abs(amplitude)
            tally.add(rows, stored[rows], exact[rows], rounded_rows(rows), growth)
    scale = abs(amplitude) if angle is not None else tally.largest
    departures = tally.departures
    agreement = "none" if departures else rule
    row_numbers = tuple(int(r) for r in np.unique(numbers[np.flatnonzero(tally.bad_rows)]))
    worst = None
    if tally.worst is not None:
        worst = (int(numbers[tally.worst[0]]), *tally.worst[1:])
    return Comparison(
        matched=departures == 0,
        agreement=agreement,
        max_abs_error=tally.max_error,
        max_ulp_error=tally.max_ulps,
        max_amplitude_ulps=float(tally.max_error / _ulp(scale, u)) if stored.size else 0.0,
        identical=identical,
        worst_ratio=tally.worst_ratio,
        departures=departures,
        compared=int(stored.size),
        rows=row_numbers if departures else (),
        columns=tuple(int(c) for c in np.flatnonzero(tally.bad_columns)) if departures else (),
        worst=worst,
    )


class _Tally:
    """What the blocks of one comparison add up to: the largest errors, the departures and where they are."""

    def __init__(self, shape: tuple[int, ...], u: float, dtype: np.dtype, narrow: str | None, rule: str) -> None:
        self.u, self.dtype, self.narrow, self.rule = u, dtype, narrow, rule
        self.tiny = float(np.finfo(dtype).smallest_subnormal)
        self.bad_rows = np.zeros(shape[0], bool)
        self.bad_columns = np.zeros(shape[1] if len(shape) > 1 else 0, bool)
        self.departures = 0
        self.max_error = self.max_ulps = self.worst_ratio = self.largest = 0.0
        self.worst: tuple[int, ...] | None = None
        self._worst_error = -1.0

    def add(
        self, rows: slice, stored: np.ndarray, exact: np.ndarray, rounded: np.ndarray, growth: np.ndarray | None
    ) -> None:
        """One block: ``growth`` is ``8 (1 + |angle|) A`` at each entry (``None``: the relative rule)."""
        if not stored.size:
            return
        u, dtype = self.u, self.dtype
        error = np.abs(stored.astype(np.float64) - exact)
        if growth is None:
            growth = 16 * np.abs(exact)
        self.largest = max(self.largest, float(np.max(np.abs(exact))))
        spacing = np.spacing(np.abs(rounded)).astype(np.float64) * (2 * u / float(np.finfo(dtype).eps))
        spacing[spacing == 0] = self.tiny
        if self.narrow:  # a float pipeline in the stored type, then one rounding to the narrow type
            allowed = 0.5 * spacing + _unit_roundoff(dtype) * growth
        else:
            allowed = np.maximum(u * growth, self.tiny)
        ratio = error / allowed
        if self.rule == "bit-identical":
            bad = np.zeros(stored.shape, bool)
        elif self.rule == "rounded once from float64":
            same = stored == rounded
            once = 0.5 * spacing + 2.0**-53 * growth
            bad = ~same & (error > once)
            ratio = np.where(same, 0.0, error / once)
        else:
            bad = ratio > 1
        self.max_error = max(self.max_error, float(error.max()))
        self.max_ulps = max(self.max_ulps, float((error / spacing).max()))
        self.worst_ratio = max(self.worst_ratio, float(ratio.max()))
        found = int(np.count_nonzero(bad))
        if not found:
            return
        self.departures += found
        if bad.ndim > 1:
            self.bad_rows[rows] |= bad.any(axis=1)
            self.bad_columns |= bad.any(axis=0)
        else:
            self.bad_rows[rows] |= bad
        flat = np.where(bad, error, -1.0)
        at = int(np.argmax(flat))
        if float(flat.flat[at]) > self._worst_error:
            self._worst_error = float(flat.flat[at])
            where = np.unravel_index(at, bad.shape)
            self.worst = (int(where[0]) + (rows.start or 0), *(int(i) for i in where[1:]))


def _ulp(value: float, u: float) -> float:
    """The unit in the last place, at ``value``, of a binary type of unit roundoff ``u``."""
    return 2.0 ** math.floor(math.log2(value)) * 2 * u if value > 0 else 2 * u


def ranges(indices: tuple[int, ...]) -> list[str]:
    """Indices as ranges, ``["3", "7-9"]``; at most a dozen, then how many more.

    >>> ranges((1, 2, 3, 7))
    ['1-3', '7']
    """
    out: list[str] = []
    i = 0
    while i < len(indices):
        j = i
        while j + 1 < len(indices) and indices[j + 1] == indices[j] + 1:
            j += 1
        out.append(str(indices[i]) if i == j else f"{indices[i]}-{indices[j]}")
        i = j + 1
    if len(out) > _SHOWN:
        out = [*out[:_SHOWN], f"and {len(out) - _SHOWN} more ranges"]
    return out
