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


def compare(
    stored: np.ndarray,
    exact: np.ndarray,
    *,
    angle: np.ndarray | None,
    amplitude: float = 1.0,
    rounded: np.ndarray | None = None,
    narrow: str | None = None,
) -> Comparison:
    """Compare ``stored`` (its own float type) with ``exact`` (float64, the same shape).

    ``angle``: the entries' sine/cosine arguments (any shape that broadcasts), or ``None`` for the relative rule.
    ``rounded``: the exact table correctly rounded to the stored type, when known; else ``exact`` cast to it.
    ``narrow``: the values were rounded to this narrower type before being stored (``bfloat16``, ``float16``):
    its unit roundoff is the one that counts, and ``rounded`` must then be the exact table rounded to it.
    """
    dtype = stored.dtype
    values = stored.astype(np.float64)
    scale = abs(amplitude) if angle is not None else float(np.max(np.abs(exact), initial=0.0))
    if rounded is None:
        rounded = exact.astype(dtype)
    error = np.abs(values - exact)
    u = {"bfloat16": 2.0**-8, "float16": 2.0**-11}[narrow] if narrow else _unit_roundoff(dtype)

    def bound(unit: float) -> np.ndarray:
        if angle is None:
            return np.asarray(16 * unit * np.abs(exact), np.float64)
        return np.asarray(8 * unit * (1 + np.abs(angle)) * abs(amplitude), np.float64)

    same = stored == rounded
    identical = float(same.mean()) if same.size else 1.0
    spacing = np.spacing(np.abs(rounded)).astype(np.float64) * (2 * u / float(np.finfo(dtype).eps))
    spacing[spacing == 0] = float(np.finfo(dtype).smallest_subnormal)
    if narrow:  # a float pipeline in the stored type, then one rounding to the narrow type
        allowed = 0.5 * spacing + bound(_unit_roundoff(dtype))
    else:
        allowed = np.maximum(bound(u), float(np.finfo(dtype).smallest_subnormal))
    ratio = error / allowed
    if same.all():
        bad = np.zeros(stored.shape, bool)
        agreement = "bit-identical"
    elif identical >= ROUNDED_ONCE and same.size >= _MIN_ENTRIES and not narrow:
        once = 0.5 * spacing + bound(2.0**-53)
        bad = ~same & (error > once)
        ratio = np.where(same, 0.0, error / once)
        agreement = "none" if bad.any() else "rounded once from float64"
    else:
        bad = ratio > 1
        agreement = "none" if bad.any() else f"within {narrow or dtype.name} rounding"
    departures = int(bad.sum())
    rows: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()
    worst: tuple[int, ...] | None = None
    if departures:
        where = np.argwhere(bad)
        rows = tuple(int(r) for r in np.unique(where[:, 0])) if stored.ndim >= 1 else ()
        columns = tuple(int(c) for c in np.unique(where[:, 1])) if stored.ndim >= 2 else ()
        flat = np.where(bad, error, -1.0)
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(flat)), stored.shape))
    return Comparison(
        matched=departures == 0,
        agreement=agreement,
        max_abs_error=float(error.max()) if error.size else 0.0,
        max_ulp_error=float((error / spacing).max()) if error.size else 0.0,
        max_amplitude_ulps=float(error.max() / _ulp(scale, u)) if error.size else 0.0,
        identical=identical,
        worst_ratio=float(ratio.max()) if ratio.size else 0.0,
        departures=departures,
        compared=int(stored.size),
        rows=rows,
        columns=columns,
        worst=worst,
    )


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
