"""float32 text, right-aligned in 16-byte records (step 2 of :mod:`~posenc_cli.formats.text.floats`), and the notation.

Which notation a float32 value takes (that module's contract): positional for zero and ``1e-4 <= |v| < P``,
scientific otherwise, ``P`` as the installed NumPy has it (asked once, at import). :func:`spell32` spells one value
by NumPy itself (the slow path); :func:`records32` lays out the text of a chunk of values with NumPy array
operations, from the digits of :func:`~posenc_cli.formats.text._digits.digits32`:

Each value's text is built right-aligned in a 16-byte little-endian record (two uint64 words): nine ASCII digits
from a table of four-digit groups with '0' bytes below them; then, for ``1e-4 <= |v| < 1`` (nearly all of a
sinusoidal table), the ``-`` and the point of ``[-]0.000ddd`` are xor-ed into those '0' bytes at a position that
depends only on ``e + 9 - p`` and the sign. Other values move the digits before the point down one byte and add the
exponent at a fixed place.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._digits import digits32, take
from ._work import Scratch, scratch

_U64 = np.uint64
_FULL = 0xFFFFFFFFFFFFFFFF


def _float32_positional_max() -> float:
    """The magnitude from which ``str`` of a float32 turns scientific: 1e6 since NumPy 2.3, 1e16 before."""
    with np.printoptions(legacy=False):
        return 1e6 if str(np.float32(1e6)) == "1e+06" else 1e16


def _float32_at_least(value: float) -> np.float32:
    """The smallest float32 not below ``value``: ``|v| >= value`` for float32 ``v`` without rounding surprises."""
    nearest = np.float32(value)
    return nearest if float(nearest) >= value else np.nextafter(nearest, np.float32(np.inf))


#: float32 values from these magnitudes on are positional; from the second on, scientific again.
_POSITIONAL_MIN32 = _float32_at_least(1e-4)
_POSITIONAL_MAX32 = _float32_at_least(_float32_positional_max())


def positional_range32() -> tuple[float, float]:
    """The float32 magnitudes ``(lo, hi)`` between which (``lo <= |v| < hi``) non-zero float32 values are written
    positional: the smallest float32 values not below 1e-4 and not below ``P`` (1e6 or 1e16, as the installed NumPy
    switches), as Python floats."""
    return float(_POSITIONAL_MIN32), float(_POSITIONAL_MAX32)


def spell32(value: np.floating) -> str:
    """One float32 value's text, by NumPy's Dragon4 with ``str``'s default options spelled out (the slow path)."""
    value = np.float32(value)
    magnitude = abs(value)
    if magnitude == 0 or _POSITIONAL_MIN32 <= magnitude < _POSITIONAL_MAX32:
        return np.format_float_positional(value, unique=True, trim="0")
    return np.format_float_scientific(value, unique=True, trim="-")


def fits16(block: np.ndarray) -> bool:
    """Whether every text fits in 15 bytes: always with NumPy >= 2.3, where positional stops at 1e6; before, a
    positional value up to 1e16 could take 18 (such blocks are formatted one value at a time)."""
    return bool(_POSITIONAL_MAX32 <= 1e6 or np.abs(block).max() < np.float32(1e6))


# --------------------------------------------------------------------------------------------------- text tables
# A value's text is built right-aligned in a 16-byte little-endian record (two uint64 words, "lo" bytes 0-7 and
# "hi" bytes 8-15) ending at byte ``end`` (16, or 15 when a one-byte separator follows): nine ASCII digits, '0'
# bytes below them, then the sign, the '0.000' and the decimal point written over those '0' bytes.
_ASCII4 = np.zeros(10000, _U64)  # "0000" ... "9999", the first digit in the lowest byte
for _place in range(4):
    _ASCII4 |= (np.arange(10000, dtype=_U64) // _U64(10 ** (3 - _place)) % _U64(10) + _U64(48)) << _U64(8 * _place)
_EXP_WORD = np.array([int.from_bytes(b"e%+03d" % e, "little") if -99 <= e <= 99 else 0 for e in range(-64, 64)], _U64)
_ZEROS = int.from_bytes(b"0" * 8, "little")
_MINUS = ord("-") ^ ord("0")  # turns a '0' byte into '-'
_POINT = ord(".") ^ ord("0")


def _split128(value: int) -> tuple[int, int]:
    return value & _FULL, (value >> 64) & _FULL


def _point_tables(end: int, fraction_digits: Sequence[int]) -> tuple[np.ndarray, ...]:
    """For digits ending at byte ``end`` and each count of fraction digits f: the masks of the bytes that stay (the
    fraction; all of them for f = 0, no point) and the point, which goes below them while the rest moves down."""
    stay_lo, stay_hi, point_lo, point_hi = (np.zeros(len(fraction_digits), _U64) for _ in range(4))
    for i, f in enumerate(fraction_digits):
        if f == 0:
            stay_lo[i], stay_hi[i] = _FULL, _FULL
        else:
            first = end - f
            stay_lo[i], stay_hi[i] = _split128(((1 << 128) - 1) ^ ((1 << (8 * first)) - 1))
            point_lo[i], point_hi[i] = _split128(ord(".") << (8 * (first - 1)))
    return stay_lo, stay_hi, point_lo, point_hi


class _Layout:
    """Per text end: tables for positional values with e >= 0 (by e * 9 + p - 1) and scientific ones (by p - 1)."""

    def __init__(self, end: int) -> None:
        self.end = end
        whole = [(e, p) for e in range(6) for p in range(1, 10)]
        self.w_scale = np.array([10.0 ** max(e + 2 - p, 0) for e, p in whole])  # trailing zeros: 100.0
        digits = [max(p, e + 2) for e, p in whole]
        self.w_point = _point_tables(end, [d - e - 1 for d, (e, _) in zip(digits, whole, strict=True)])
        self.w_minus = [
            np.array(v, _U64) for v in zip(*(_split128(_MINUS << (8 * (end - d - 2))) for d in digits), strict=True)
        ]
        self.w_length = np.array([d + 1 for d in digits], np.int64)
        end_s = end - 4
        self.s_point = _point_tables(end_s, [p - 1 for p in range(1, 10)])
        self.s_minus = [
            np.array(v, _U64)
            for v in zip(*(_split128(_MINUS << (8 * (end_s - p - (p > 1) - 1))) for p in range(1, 10)), strict=True)
        ]
        self.s_length = np.array([p + (p > 1) + 4 for p in range(1, 10)], np.int64)


_LAYOUTS = {end: _Layout(end) for end in (15, 16)}


def _ascii(number: np.ndarray, end: int, lo: np.ndarray, hi: np.ndarray, w: Scratch) -> None:
    """The nine-digit ASCII of ``number`` (float64 integers below 1e9) ending at byte ``end`` (11 to 16) of
    ``(lo, hi)``, '0' bytes below it."""
    n = number.size
    whole, q, t = (a[:n] for a in w.u32[1:4])
    k, g1, g2, u = w.i[3][:n], w.u[7][:n], w.u[8][:n], w.u[9][:n]
    np.copyto(whole, number, casting="unsafe")
    np.floor_divide(whole, 10000, out=q)
    np.multiply(q, 10000, out=t)
    np.subtract(whole, t, out=t)  # digits 5..8
    np.copyto(k, t)
    take(_ASCII4, k, g2)
    np.floor_divide(q, 10000, out=whole)  # digit 0
    np.multiply(whole, 10000, out=t)
    np.subtract(q, t, out=t)  # digits 1..4
    np.copyto(k, t)
    take(_ASCII4, k, g1)
    first = end - 9  # byte of digit 0, 2..7
    np.copyto(lo, whole)
    np.left_shift(lo, _U64(8 * first), out=lo)
    np.add(lo, _U64((_ZEROS & ((1 << (8 * first)) - 1)) + (0x30 << (8 * first))), out=lo)
    hi_set = False
    for group, at in ((g1, first + 1), (g2, first + 5)):  # four bytes at byte ``at``, in lo, hi or across
        if at < 8:
            np.left_shift(group, _U64(8 * at), out=u)
            np.bitwise_or(lo, u, out=lo)
        if at + 4 > 8:  # the bytes that reach hi
            part = u if hi_set else hi
            if at < 8:
                np.right_shift(group, _U64(64 - 8 * at), out=part)
            else:
                np.left_shift(group, _U64(8 * at - 64), out=part)
            if hi_set:
                np.bitwise_or(hi, part, out=hi)
            hi_set = True


def _small_xor(end: int) -> tuple[np.ndarray, np.ndarray]:
    """The bytes that turn '0's into '[-]0.000' before p digits ending at ``end``, by 2 * (e + 9 - p) + 8 + neg."""
    xor_lo, xor_hi = np.zeros(24, _U64), np.zeros(24, _U64)
    for e_jm in range(-4, 8):  # e + jm = e + 9 - p
        for neg in (0, 1):
            point = end - 9 + e_jm
            value = (_POINT << (8 * point)) | ((_MINUS << (8 * (point - 2))) if neg else 0)
            xor_lo[2 * e_jm + 8 + neg], xor_hi[2 * e_jm + 8 + neg] = _split128(value)
    return xor_lo, xor_hi


_SMALL_XOR = {end: _small_xor(end) for end in (15, 16)}


def _layout(
    kind: str,
    m: np.ndarray,
    e: np.ndarray,
    jm: np.ndarray,
    negi: np.ndarray,
    end: int,
    w: Scratch,
    lo: np.ndarray,
    hi: np.ndarray,
    length: np.ndarray,
) -> None:
    """The text of values of one ``kind`` right-aligned at byte ``end`` of ``(lo, hi)``, its length without the
    sign into ``length``. Kinds: "small" (positional, 1e-4 <= |v| < 1: '[-]0.000ddd'), "whole" (positional, zero
    or |v| >= 1: '[-]ddd.ddd'), "sci" ('[-]d.ddde+XX'). ``negi``: 1 for negative values, 0 otherwise."""
    n = m.size
    cls, a, b = w.i[4][:n], w.u[5][:n], w.u[6][:n]
    if kind == "small":  # everything follows from e + jm = e + 9 - p (and the sign)
        _ascii(m, end, lo, hi, w)
        np.add(e, jm, out=cls)
        np.subtract(10, cls, out=length)  # 1 - e + p
        np.left_shift(cls, 1, out=cls)
        np.add(cls, negi, out=cls)
        np.add(cls, 8, out=cls)
        xor_lo, xor_hi = _SMALL_XOR[end]
        take(xor_lo, cls, a)
        np.bitwise_xor(lo, a, out=lo)
        take(xor_hi, cls, b)
        np.bitwise_xor(hi, b, out=hi)
        return
    layout = _LAYOUTS[end]
    np.subtract(8, jm, out=cls)  # p - 1
    if kind == "whole":
        np.multiply(e, 9, out=length)
        np.add(cls, length, out=cls)
        number = w.f[2][:n]
        take(layout.w_scale, cls, number)
        np.multiply(number, m, out=number)  # 100.0 has the digits 1000
        _ascii(number, end, lo, hi, w)
        point, minus, sizes = layout.w_point, layout.w_minus, layout.w_length
    else:
        _ascii(m, end - 4, lo, hi, w)
        np.add(e, 64, out=length)
        take(_EXP_WORD, length, a)
        np.left_shift(a, _U64(8 * (end - 12)), out=a)
        np.bitwise_or(hi, a, out=hi)
        point, minus, sizes = layout.s_point, layout.s_minus, layout.s_length
    # The decimal point: the bytes below the fraction move down one, the point goes in between.
    stay_lo, stay_hi = w.u[7][:n], w.u[8][:n]
    take(point[0], cls, stay_lo)
    take(point[1], cls, stay_hi)
    np.bitwise_and(lo, stay_lo, out=a)
    np.bitwise_xor(lo, a, out=lo)  # the part that moves
    np.bitwise_and(hi, stay_hi, out=b)
    np.bitwise_xor(hi, b, out=hi)
    np.right_shift(lo, _U64(8), out=lo)
    np.bitwise_or(lo, a, out=lo)
    np.left_shift(hi, _U64(56), out=a)
    np.bitwise_or(lo, a, out=lo)
    np.right_shift(hi, _U64(8), out=hi)
    np.bitwise_or(hi, b, out=hi)
    take(point[2], cls, a)
    np.bitwise_or(lo, a, out=lo)
    take(point[3], cls, b)
    np.bitwise_or(hi, b, out=hi)
    # The minus sign, a '0' byte below the first digit.
    take(minus[0], cls, a)
    np.multiply(a, negi.view(_U64), out=a)
    np.bitwise_xor(lo, a, out=lo)
    take(minus[1], cls, b)
    np.multiply(b, negi.view(_U64), out=b)
    np.bitwise_xor(hi, b, out=hi)
    take(sizes, cls, length)


def records32(x: np.ndarray, end: int, w: Scratch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The records of the 1-D float32 ``x``, each value's text right-aligned at byte ``end`` (15 or 16) of its two
    words: ``(lo, hi, length)``, views into ``w``, ``length`` the bytes of each text (the sign included)."""
    n = x.size
    m, e, jm = digits32(x, w)
    negi = w.i[6][:n]
    np.right_shift(x.view(np.uint32), 31, out=negi)  # 1 for negative values, -0.0 included
    lo, hi, length = w.u[0][:n], w.u[1][:n], w.i[7][:n]
    ax, small, sci, tmp = w.x32[:n], w.b[5][:n], w.b[4][:n], w.b[3][:n]
    np.greater_equal(ax, _POSITIONAL_MIN32, out=small)
    np.less(ax, np.float32(1.0), out=tmp)
    np.logical_and(small, tmp, out=small)
    np.less(ax, _POSITIONAL_MIN32, out=sci)
    np.not_equal(ax, 0, out=tmp)
    np.logical_and(sci, tmp, out=sci)
    np.greater_equal(ax, _POSITIONAL_MAX32, out=tmp)
    np.logical_or(sci, tmp, out=sci)
    counts = {"small": int(np.count_nonzero(small)), "sci": int(np.count_nonzero(sci))}
    counts["whole"] = n - counts["small"] - counts["sci"]
    # The commonest kind is laid out for all values, the others (if any) on their own and copied over.
    main = max(counts, key=counts.__getitem__)
    _layout(main, m, e, jm, negi, end, w, lo, hi, length)
    for kind in ("small", "whole", "sci"):
        if kind == main or not counts[kind]:
            continue
        if kind == "whole":
            np.logical_or(small, sci, out=tmp)
            idx = np.flatnonzero(~tmp)
        else:
            idx = np.flatnonzero(small if kind == "small" else sci)
        k = idx.size
        sub = scratch(k, kind)
        slo, shi, slen = sub.u[0][:k], sub.u[1][:k], sub.i[7][:k]
        _layout(kind, m[idx], e[idx], jm[idx], negi[idx], end, sub, slo, shi, slen)
        lo[idx], hi[idx], length[idx] = slo, shi, slen
    np.add(length, negi, out=length)
    return lo, hi, length
