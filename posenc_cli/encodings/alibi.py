"""ALiBi: the attention-bias slopes of Press et al. and the bias matrix, every entry correctly rounded.

For ``H`` heads let ``p = 2**floor(log2 H)`` (the largest power of two not above ``H``). The slopes are::

    slope[h] = 2 ** (-8 * (h + 1) / p)                 for h < p
    slope[h] = 2 ** (-4 * (2 * (h - p) + 1) / p)       for p <= h < H     (every other slope of 2p heads)

which is ``get_slopes`` of ``ofirpress/attention_with_linear_biases`` and HF BLOOM ``build_alibi_tensor`` (for a
power of two the second line is empty). The bias of head ``h`` at key position ``j`` is ``slope[h] * j`` for
``j = 0 .. seq_len-1``: BLOOM's ``alibi`` for an all-ones attention mask, without its batch axis, shape
``(H, seq_len)`` (BLOOM adds it to the attention scores; ALiBi's ``-|i - j| * slope`` form differs by a per-row
constant that softmax ignores).

MPT's variant (HF ``build_mpt_alibi_tensor``, llm-foundry ``gen_slopes`` with ``alibi_bias_max = 8``) rounds the
head count *up*: with ``P = 2**ceil(log2 H)`` the slopes are ``2 ** (-8 m / P)`` for ``m = 1 .. P``, and for ``H < P``
the even ``m`` come first, then the odd ones, cut to ``H`` (``concat(slopes[1::2], slopes[::2])[:H]``). With
``P = 2p`` the even ``m = 2k`` give ``2**(-8k/p)`` and the odd ones ``2**(-4(2k+1)/p)``: BLOOM's slopes, in BLOOM's
order, for every head count (``tests/test_alibi.py`` checks 1 to 64). What differs is the bias: MPT's runs over the
positions ``1 - seq_len .. 0``, ``slope[h] * (j + 1 - seq_len)``, shape ``(H, seq_len)`` (HF's ``(H, 1, seq_len)``
without the middle axis), and its float32 arithmetic.

Exactness: the exponents are dyadic rationals, the slopes ``2**e`` are computed with :mod:`decimal` and carried as
double-doubles (about 106 bits); each bias entry is the exact product of an integer and that double-double (the
slope split into 21-bit pieces, each product exact) with a relative error below ``2**-90``. The float64 result is
rounded once to the output element type where that error bound proves the rounding, and recomputed with
:mod:`decimal` otherwise (Ziv's strategy, as for the sinusoidal tables).
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings._exact import round_checked
from posenc_cli.encodings.names import ALIBI_VARIANTS
from posenc_cli.encodings.sinusoid import show
from posenc_cli.errors import SpecError

#: Heads and positions posenc accepts: far beyond any model, small enough that positions stay exact integers.
MAX_HEADS = 1 << 16
MAX_SEQ_LEN = 1 << 32
_ERR = 2.0**-90  # relative error bound of the double-double products (see the module docstring)


VARIANTS = ALIBI_VARIANTS


def exponents(heads: int, variant: str = "bloom") -> list[Fraction]:
    """The exponent ``e`` of each head's slope ``2**e`` (exact rationals).

    Examples
    --------
    >>> [str(e) for e in exponents(6)]
    ['-2', '-4', '-6', '-8', '-1', '-3']
    >>> [str(e) for e in exponents(6, "mpt")]
    ['-2', '-4', '-6', '-8', '-1', '-3']
    >>> [str(e) for e in exponents(3, "mpt")]
    ['-4', '-8', '-2']
    """
    if variant == "mpt":
        top = 1 << (heads - 1).bit_length()
        every = [Fraction(-8 * m, top) for m in range(1, top + 1)]
        return every if top == heads else (every[1::2] + every[::2])[:heads]
    p = 1 << (heads.bit_length() - 1)
    first = [Fraction(-8 * (h + 1), p) for h in range(p)]
    extra = [Fraction(-4 * (2 * m + 1), p) for m in range(heads - p)]
    return first + extra


def check(heads: object, seq_len: object | None) -> tuple[int, int | None]:
    """Validate; ``SpecError`` names ``heads`` or ``seq_len``."""
    for name, value, top in (("heads", heads, MAX_HEADS), ("seq_len", seq_len, MAX_SEQ_LEN)):
        if name == "seq_len" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= top:
            raise SpecError(f"{name} must be an integer from 1 to {top}, got {show(value)}", param=name)
    return int(heads), None if seq_len is None else int(seq_len)  # type: ignore[call-overload]


def _power(e: Fraction, digits: int) -> Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        return Decimal(2) ** (Decimal(e.numerator) / Decimal(e.denominator))


def _enclosure(j: int, e: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Exact rationals around ``j * 2**e``: decimal's power and product are each correctly rounded."""
    value = Fraction(_power(e, digits)) * j
    slack = abs(value) * Fraction(4, 10 ** (digits - 1))
    return value - slack, value + slack


def _exact(j: int, e: Fraction, element: ElementType) -> int | float:
    if e.denominator == 1:  # j * 2**e is rational and may sit on a rounding boundary: no enclosure would decide it
        return element.from_exact(j * Fraction(2) ** e.numerator)
    digits = 40
    while True:
        lo, hi = _enclosure(j, e, digits)
        result = element.from_exact(lo)
        if element.from_exact(hi) == result:
            return result
        digits *= 2


def _pieces(x: np.ndarray) -> list[np.ndarray]:
    """``x`` as three float64s of at most 21 significant bits each (and a remainder): ``j * piece`` is exact."""
    out = []
    rest = x.copy()
    for _ in range(3):
        exponent = np.floor(np.log2(np.abs(np.where(rest == 0, 1.0, rest))))
        unit = np.exp2(exponent - 20)
        piece = np.trunc(rest / unit) * unit
        out.append(piece)
        rest = rest - piece
    out.append(rest)
    return out


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def slopes_and_bias(
    heads: int, seq_len: int | None, element: ElementType, variant: str = "bloom"
) -> dict[str, np.ndarray]:
    """``{"slopes": (H,), "bias": (H, seq_len)}`` in ``element``'s storage (``bias`` only with a ``seq_len``)."""
    exps = exponents(heads, variant)
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        exact = [_power(e, 50) for e in exps]
        hi = np.array([float(v) for v in exact])
        lo = np.array([float(v - Decimal(h)) for v, h in zip(exact, hi.tolist(), strict=True)])
    j = np.arange(seq_len if seq_len is not None else 0, dtype=np.float64)
    if variant == "mpt" and seq_len is not None:
        j -= seq_len - 1  # positions 1 - seq_len .. 0
    out = {"slopes": _rounded(hi[:, None], lo[:, None], np.ones((heads, 1)), exps, element)[:, 0]}
    if seq_len is not None:
        pieces = _pieces(hi)
        products = [j[None, :] * piece[:, None] for piece in pieces[:3]]  # exact
        s, t = _two_sum(products[0], products[1])
        t = t + products[2] + j[None, :] * (pieces[3] + lo)[:, None]
        out["bias"] = _rounded(s, t, j[None, :], exps, element)
    return out


def _rounded(s: np.ndarray, t: np.ndarray, j: np.ndarray, exps: list[Fraction], element: ElementType) -> np.ndarray:
    """Correctly round ``s + t`` (relative error below ``_ERR``) to ``element``; exact path where undecided."""
    y = s + t
    err = np.abs(y) * _ERR
    if element.name == "float64":
        residual = (s - y) + t  # exact: |s| >= |t|
        half = np.spacing(np.abs(y)) / 2
        undecided = np.abs(np.abs(residual) - half) <= err
        out = y.copy()
    elif element.name == "float32":
        out, undecided = round_checked(y, err, np.float32)
    else:  # the other types convert from a float64 proven correctly rounded
        exact64 = _rounded(s, t, j, exps, ElementType.of("float64"))
        out, undecided = element.convert(exact64)
    jj = np.broadcast_to(j, y.shape)
    for h, c in zip(*np.nonzero(undecided), strict=True):
        out[h, c] = _exact(int(jj[h, c]), exps[h], element)
    result: np.ndarray = out.astype(element.storage)
    return result
