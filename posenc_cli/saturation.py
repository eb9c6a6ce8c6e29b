"""Quantised tables never clip silently: the count of the values a type would saturate, and the refusal that names it.

A fixed-point or int8 table whose values the type cannot hold (:meth:`~posenc_cli.dtypes.ElementType.beyond`:
beyond q15's [-1, 1], whose +1 CMSIS writes as 32767, and int8's codes likewise) is refused with a
:class:`~posenc_cli.errors.SpecError` that says how many values would clip, where, what they reach, and the ways
out: a type that holds them (``fixedT.F`` with more integer bits, or an int8 scale), RoPE's
``--no-attention-scaling`` (:mod:`posenc_cli.kinds.rope`), or ``saturate`` (``--saturate``, ``saturate = true``,
``saturate=True``), the explicit request to clip, which the table then records.

Every table maker decides before it makes anything, and before any file is opened:

- A bound known up front settles most tables: a sinusoid's or RoPE cache's values never exceed its amplitude, an
  ALiBi bias ``seq_len - 1`` (:func:`may_clip`). When the bound fits, nothing is counted: the common case costs
  nothing.
- Otherwise the values themselves decide: :func:`refuse_clipping` reads the table's float64 twin (the same
  parameters with ``dtype="float64"``: the correctly rounded values the real table rounds from) block by block,
  in bounded memory, and counts. It stops once :data:`COUNT_ENTRIES` values have been read and some clip, so a
  refusal costs at most that much work (its message then says "at least"); a table whose bound did not fit but
  whose values do is read whole once before it is made.
- ``convert`` reads the values a file holds once, block by block, and counts them exactly.

A generated table is judged on its correctly rounded float64 values (a value within half a float64 ulp of a code
boundary may be judged on the other side of it; its stored code is exact either way and one step from the end).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .dtypes import ElementType
from .errors import PosencWarning, SpecError, warn
from .table import Array

__all__ = ["COUNT_ENTRIES", "Count", "check_saturate", "count", "may_clip", "refuse_clipping", "zero_note"]

#: Values read before a refusal stops counting (once some clip): about a second of a float64 table's work.
COUNT_ENTRIES = 1 << 24
#: Values read per block: 8 MiB of float64, whatever the table's width.
_BLOCK_ENTRIES = 1 << 20
#: The fixed-point widths a suggestion may widen to (beyond the type's own).
_WIDTHS = (8, 16, 32, 64)


def check_saturate(saturate: object, element: ElementType) -> bool:
    """``saturate`` checked: a boolean, and ``True`` only for a type that saturates (fixed point, int8).

    Examples
    --------
    >>> check_saturate(True, ElementType.of("q15")), check_saturate(False, ElementType.of("float32"))
    (True, False)
    """
    if not isinstance(saturate, (bool, np.bool_)):
        raise SpecError(f"saturate must be true or false, got {saturate!r}", param="saturate")
    if saturate and not element.is_integer:
        raise SpecError(
            f"saturate applies to the types that clip (q7, q15, q31, fixed<total>.<frac>, int8), not {element.name}",
            param="saturate",
        )
    return bool(saturate)


def may_clip(element: ElementType, low: float, high: float) -> bool:
    """Whether values between ``low`` and ``high`` (bounds known before any is computed) could clip in ``element``."""
    return element.is_integer and bool(element.beyond(np.array([low, high])).any())


@dataclass
class Count:
    """What a pass over a table's values found, per array: values read (``seen``), of them beyond the type
    (``clipped``), the array's size (``total``), and the extremes of the values read."""

    clipped: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    low: float = math.inf
    high: float = -math.inf

    @property
    def any(self) -> bool:
        return sum(self.clipped.values()) > 0

    @property
    def complete(self) -> bool:
        return self.seen == self.total


def _blocks(array: Array) -> list[tuple[int, int]]:
    rows = array.shape[0] if array.ndim else 1
    width = max(1, math.prod(array.shape[1:])) if array.ndim else 1
    step = max(1, _BLOCK_ENTRIES // width)
    return [(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


Values = Callable[[str, np.ndarray], np.ndarray]


def _as_float64(name: str, block: np.ndarray) -> np.ndarray:
    return np.asarray(block, np.float64)


def count(element: ElementType, arrays: Mapping[str, Array], values: Values = _as_float64) -> Count:
    """Count the values of ``arrays`` that ``element`` would saturate, block by block (``values(name, block)``
    reads a stored block as real numbers, and may refuse it); stop early once :data:`COUNT_ENTRIES` values are
    read and some clip."""
    found = Count()
    for name, array in arrays.items():
        found.total[name] = int(math.prod(array.shape))
        found.clipped[name] = found.seen[name] = 0
    for name, array in arrays.items():
        for lo, hi in _blocks(array):
            if sum(found.seen.values()) >= COUNT_ENTRIES and found.any:
                return found
            block = values(name, np.asarray(array) if array.ndim == 0 else array[lo:hi])
            found.clipped[name] += int(np.count_nonzero(element.beyond(block)))
            found.seen[name] += block.size
            if block.size:
                with np.errstate(invalid="ignore"):
                    found.low = min(found.low, float(np.nanmin(block)))
                    found.high = max(found.high, float(np.nanmax(block)))
    return found


def _describe(element: ElementType) -> str:
    if element.scale is not None:
        return f"int8 (scale {element.scale!r}, zero_point {element.zero_point})"
    return element.name


def _fixed_holder(element: ElementType, low: float, high: float) -> str | None:
    """The fixed-point type of the same width with the fewest integer bits that holds ``[low, high]`` (else the
    narrowest wider one); ``None`` when no type of 64 bits holds them."""
    assert element.fixed is not None
    total, frac = element.fixed
    for width in (total, *(w for w in _WIDTHS if w > total)):
        least = total - frac if width == total else 0  # the same width: more integer bits than now
        for whole in range(least, width):
            name = f"fixed{width}.{width - 1 - whole}"
            if not ElementType.of(name).beyond(np.array([low, high])).any():
                return f"{name} holds them ({whole} integer bit{'' if whole == 1 else 's'})"
    return None


def _int8_scale(element: ElementType, low: float, high: float) -> str | None:
    """The least scale (to 3 significant digits, rounded up) with which int8 holds ``[low, high]``, keeping the
    zero point when it leaves room for them, else with zero point 0."""
    for zero_point in dict.fromkeys((element.zero_point, 0)):
        needs = []
        if high > 0:
            needs.append(high / (128 - zero_point))  # code 128 is written as 127: the convention of +1.0
        if low < 0:
            needs.append(low / (-128 - zero_point) if zero_point > -128 else math.inf)
        least = max(needs, default=0.0)
        if not math.isfinite(least) or least <= 0:
            continue
        digits = 2 - math.floor(math.log10(least))
        units = math.ceil(least * 10**digits)
        scale = least if len(repr(least)) <= 10 else units / 10**digits  # 0.0078125 as it is, else 3 digits up
        while ElementType.of("int8", scale=scale, zero_point=zero_point).beyond([low, high]).any():
            units += 1  # the quotient's rounding fell short: the next 3-digit scale up
            scale = units / 10**digits
        where = "" if zero_point == element.zero_point else f" with --zero-point {zero_point}"
        return f"--scale {scale!r}{where} holds them"
    return None


def refusal(element: ElementType, found: Count, ways: tuple[str, ...] = ()) -> SpecError:
    """The one-line refusal for the values ``found`` beyond ``element``: how many, where, what they reach, what
    the type holds, and the ways out (``ways`` first, then a type that holds them, then ``--saturate``)."""
    clipped, seen, total = (sum(d.values()) for d in (found.clipped, found.seen, found.total))
    share = 100 * clipped / max(seen, 1)
    percent = f"{share:.0f}%" if share >= 1 else f"{share:.2g}%"
    if found.complete:
        how_many = f"{clipped} of the table's {total} values ({percent}"
    else:
        how_many = f"at least {clipped} of the first {seen} of the table's {total} values ({percent}"
    if len(found.total) > 1:
        how_many += ": " + ", ".join(f"{name} {n}" for name, n in found.clipped.items() if n)
    least, most = element.span()
    holds = f"{least:.6g} to {most:.6g} ({most:.6g} written as its largest code)"
    holder = _fixed_holder(element, found.low, found.high) if element.fixed else None
    if element.scale is not None:
        holder = _int8_scale(element, found.low, found.high)
    options = [*ways, holder or "a float type holds them", "--saturate clips them to the type's ends"]
    return SpecError(
        f"dtype {_describe(element)} would clip {how_many}), which reach {found.low:.6g} to {found.high:.6g} where "
        f"{element.name} holds {holds}: {'; or '.join(options)}",
        param="dtype",
    )


def refuse_clipping(
    element: ElementType, arrays: Mapping[str, Array], ways: tuple[str, ...] = (), values: Values = _as_float64
) -> None:
    """Raise :func:`refusal` when any value of ``arrays`` (read by ``values``) would clip in ``element``."""
    found = count(element, arrays, values)
    if found.any:
        raise refusal(element, found, ways)


def zero_note(element: ElementType, name: str, stored: np.ndarray, exact: Callable[[], np.ndarray], what: str) -> None:
    """Warn (:class:`~posenc_cli.errors.PosencWarning`) when nonzero values of the array ``name`` are stored as
    ``element``'s zero: rounding, not clipping, and a loss the user should hear of (``what`` says what it means
    for the table). ``exact()`` gives the float64 values, asked for only when ``stored`` holds a zero."""
    if element.name in ("float32", "float64", "bfloat16"):  # their least values are far below any table's
        return
    if element.scale is not None:
        zero = stored == element.zero_point
    elif element.is_integer:
        zero = stored == 0
    else:
        zero = stored.astype(np.float64) == 0
    if not zero.any():
        return
    real = np.asarray(exact(), np.float64)
    lost = zero & (real != 0)
    if not lost.any():
        return
    smallest = float(np.min(np.abs(real[lost])))
    keeps = "a float type"
    if element.fixed is not None:
        whole = element.fixed[0] - 1 - element.fixed[1]
        frac = max(0, math.ceil(-1 - math.log2(smallest)))
        while smallest * 2.0**frac < 0.5:  # half a step rounds away from zero: kept
            frac += 1
        if whole == 0 and frac <= 31:
            keeps = "q15" if frac <= 15 else "q31"
        elif whole + 1 + frac <= 64:
            keeps = f"fixed{whole + 1 + frac}.{frac}"
    elif element.name == "float16":
        keeps = "float32 or bfloat16"
    warn(
        PosencWarning(
            f"{name}: {int(lost.sum())} of its {lost.size} values round to 0 in {element.name} (the smallest is "
            f"{smallest:.3g}); {what}; {keeps} keeps them"
        )
    )
