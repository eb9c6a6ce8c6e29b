"""A range of numbers, as a parameter's type carries it (:meth:`posenc_cli.params.ValueType.within`): declared as a
person reads it (``"1 < x <= 1e12"``), with the reason for it.

Each kind's module declares the ranges of its own parameters beside them (:mod:`posenc_cli.kinds.rope`, ...; the
ranges several kinds share are in :mod:`posenc_cli.kinds._shared`), so that every surface applies the same check
and says the same thing: the click option and its ``--help`` (:mod:`posenc_cli.cli.options`), the reference
``docs/commands.md`` with every reason (:mod:`posenc_cli.cli.reference`), the manifest key
(:meth:`~posenc_cli.params.ValueType.from_toml`), the parameters ``verify`` and ``inspect`` read back from a file
(:meth:`~posenc_cli.params.ValueType.from_value`), the API keyword (:func:`posenc_cli.kinds.check`) and a model's
``config.json`` (:mod:`posenc_cli.kinds.rope_config`).

How a range is chosen: what real models use, with a wide margin, and no further than the arithmetic stays finite
and exact (positions below ``2**32``, frequency multipliers within ``[2**-64, 2**32]``, every float64 step finite).
A value outside is refused, whatever the mode or command would have made of it: the table posenc would write is
either the one at the bound or not a positional encoding any model uses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["Range"]

_BOUND = r"-?(?:2\*\*-?[0-9]+|[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)"
_RANGE = re.compile(rf"(?P<lo>{_BOUND}) (?P<lo_op><=?) x (?P<hi_op><=?) (?P<hi>{_BOUND})(?P<nonzero> and x != 0)?")


def _bound(text: str) -> Fraction:
    """A bound as a range spells it (``4096``, ``1e-6``, ``2**-32``, ``-2**32``), exactly."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("-")
    if body.startswith("2**"):
        return sign * Fraction(2) ** int(body[3:])
    return sign * Fraction(body)


@dataclass(frozen=True)
class Range:
    """A finite interval of numbers, declared as a person reads it, and the reason for it.

    ``text`` is ``"LO < x <= HI"`` (``<`` excludes a bound, ``<=`` includes it), optionally followed by ``" and x !=
    0"``; a bound is an integer, a decimal (``1e12``, ``0.5``) or a power of two (``2**32``, ``-2**32``, ``2**-32``),
    taken exactly. A value is in the range when it is a real number (not a boolean, not NaN) within it; the
    comparison is exact, so ``2**32 + 1`` is outside ``x <= 2**32`` and ``1e-320`` inside ``0 < x``.

    Examples
    --------
    >>> r = Range("1 < x <= 1e12", "why")
    >>> 1e12 in r, 1.0 in r, float("nan") in r, float("inf") in r, 10**400 in r
    (True, False, False, False, False)
    >>> 0.0 in Range("-2**32 < x < 2**32 and x != 0", "why"), -0.0 in Range("0 <= x <= 1", "why")
    (False, True)
    """

    text: str
    why: str
    lo: Fraction = field(init=False, repr=False, compare=False)
    hi: Fraction = field(init=False, repr=False, compare=False)
    lo_open: bool = field(init=False, repr=False, compare=False)
    hi_open: bool = field(init=False, repr=False, compare=False)
    nonzero: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parsed = _RANGE.fullmatch(self.text)
        if parsed is None:
            raise ValueError(f"a range is 'LO <[=] x <[=] HI [and x != 0]', got {self.text!r}")
        lo, hi = _bound(parsed["lo"]), _bound(parsed["hi"])
        if not lo < hi:
            raise ValueError(f"an empty range: {self.text!r}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "lo_open", parsed["lo_op"] == "<")
        object.__setattr__(self, "hi_open", parsed["hi_op"] == "<")
        object.__setattr__(self, "nonzero", parsed["nonzero"] is not None)

    def __contains__(self, value: object) -> bool:
        import numpy as np

        real = (int, float, Fraction, np.integer, np.floating)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, real):
            return False
        number: int | float | Fraction = int(value) if isinstance(value, (int, np.integer)) else value  # type: ignore[assignment]
        if isinstance(number, (float, np.floating)):
            number = float(number)
            if math.isnan(number):
                return False
        above = number > self.lo if self.lo_open else number >= self.lo
        below = number < self.hi if self.hi_open else number <= self.hi
        return above and below and not (self.nonzero and number == 0)
