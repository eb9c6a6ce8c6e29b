"""Floats as the shortest text that reads back to the identical value, for the CSV and C writers.

The spelling: a contract, files must not change between releases or with the machine
-------------------------------------------------------------------------------------
Every value is written with the fewest significant decimal digits that read back to the identical float of its own
dtype, and always carries a ``.`` or an exponent, so that ``1.0`` never becomes ``1`` (an integer to pandas, an
invalid ``1f`` to a C compiler) and ``-0.0`` keeps its sign. Byte for byte:

- float64 values are spelled exactly as Python's ``repr(float(v))``.
- float32 values are spelled exactly as ``str(np.float32(v))`` of the installed NumPy with its default print
  options (Dragon4, "unique" mode):

  * Digits: the shortest digit string ``d1 d2 ... dn`` (``d1`` non-zero) that lies in the rounding interval of
    ``v``: between the midpoints to its two float32 neighbours, the midpoints themselves included only when
    ``v``'s significand is even (they read back to ``v`` under round-half-to-even, as C's ``strtof``, Python's
    ``float`` and NumPy read). Of the shortest candidates, the one nearest to ``v`` (an exact tie goes to the even
    last digit). At a power of two the interval is lopsided, the neighbour below being twice as close.
  * Notation: positional when ``v == 0`` or ``1e-4 <= |v| < P``, scientific otherwise; ``P`` is ``1e6`` with
    NumPy >= 2.3 and ``1e16`` before (the module asks the installed NumPy once, at import). Positional: the
    integer part (at least ``0``), ``.``, the fraction (at least one digit): ``0.0``, ``1.0``, ``0.84147096``,
    ``0.00012345``, ``999999.94``. Scientific: the first digit, ``.`` and the other digits if there are any, ``e``,
    the exponent's sign, at least two exponent digits: ``1e-05``, ``1e-04`` (``np.float32(1e-4)`` lies just below
    ``1e-4``), ``1.2345679e+08`` (NumPy >= 2.3), ``3.4028235e+38``, ``1e-45``.
  * Sign: ``-`` before negative values, ``-0.0`` included.

- NaN and infinities have no portable spelling in either format and are refused with ``FormatError``.

:func:`join_rows` lays out whole blocks (the writers' path); :func:`shortest` yields lists of strings per row.

How float32 text is made fast
-----------------------------
Formatting one value at a time costs about a microsecond in Python; the writers need a few tens of nanoseconds. For
float32 the digits and the text are computed for chunks of values with NumPy array operations:

1. Digits. With ``e`` the decimal exponent of ``|v|`` (a table indexed by the binary exponent, corrected by one
   comparison), ``s = |v| * 10**(8-e)`` lies in ``[1e8, 1e9)`` and the rounding interval is ``s - h .. s + h``,
   ``h`` the scaled half-spacing of float32 at ``v`` (between 3 and 60 for normal numbers). The multiple ``c_j`` of
   ``10**j`` nearest to ``s`` (``j`` digits dropped from nine) lies inside while ``|s - c_j| < h``, and this is
   monotone in ``j`` (``c_{j+1}`` is itself a multiple of ``10**j``): the largest such ``j`` gives the shortest
   digits and ``c_j`` the nearest of them, which is Dragon4's answer whenever the interval is symmetric. All in
   float64: ``s`` is off by less than ``3e-7`` and ``h`` by far less, so every decision is taken with a margin of
   ``1e-6``. The values whose decision falls within the margin -- a candidate on an interval bound (where the
   even/odd rule decides) or half-way between two candidates -- get their digits from NumPy's Dragon4, one at a
   time: none in tables of sines and cosines, about 0.4 % of float32 bit patterns drawn at random (mostly integers
   above ``2**25``, whose midpoints are integers too). Powers of two (lopsided intervals) take their digits from a
   table made with NumPy at import.
2. Text. Each value's text is built right-aligned in a 16-byte little-endian record (two uint64 words): nine ASCII
   digits from a table of four-digit groups with '0' bytes below them; then, for ``1e-4 <= |v| < 1`` (nearly all
   of a sinusoidal table), the ``-`` and the point of ``[-]0.000ddd`` are xor-ed into those '0' bytes at a
   position that depends only on ``e + 9 - p`` and the sign. Other values move the digits before the point down
   one byte and add the exponent at a fixed place. A one-byte separator (CSV) takes the record's last byte; with
   other separators the text moves to end where its separator starts, in records of up to four words.
3. Bytes. The records are scattered to their end offsets (a cumulative sum of the lengths) through an unaligned
   ``uint64`` view of the output, lowest words first: a word's bytes before its record's start land on the last
   eight bytes of earlier records, which their last words, written last, replace (records shorter than 8 bytes,
   like ``0.0,``, are written byte by byte).

Blocks are cut into chunks of whole rows (or of one row) that worker threads format in parallel, NumPy releasing
the GIL; each thread reuses its scratch arrays from chunk to chunk. With NumPy < 2.3, blocks holding float32 values
of 1e6 or more (positional up to 1e16, too long for a record) are formatted one value at a time.

float64 values go through ``repr`` one at a time (up to about a microsecond each, for 17-digit values): the shortest
digits of a double cannot be decided with float64 arithmetic.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import FormatError

__all__ = ["TEXT_DTYPES", "join_rows", "shortest"]

#: The float dtypes the text writers can spell exactly.
TEXT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_U64 = np.uint64
_FULL = 0xFFFFFFFFFFFFFFFF


def _take(table: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[:] = table[index]`` (``index`` in range; clipping is only the fastest mode of ``take``)."""
    return np.take(table, index, out=out, mode="clip")


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


def _spell32(value: np.floating) -> str:
    """One float32 value's text, by NumPy's Dragon4 with ``str``'s default options spelled out (the slow path)."""
    value = np.float32(value)
    magnitude = abs(value)
    if magnitude == 0 or _POSITIONAL_MIN32 <= magnitude < _POSITIONAL_MAX32:
        return np.format_float_positional(value, unique=True, trim="0")
    return np.format_float_scientific(value, unique=True, trim="-")


def _dragon4_digits(value: np.floating) -> tuple[int, int, int]:
    """The shortest digits of a float32 ``|value|`` by NumPy's Dragon4 (the exact, slow path): ``(digits, e, p)``,
    the ``p`` digits as an integer and ``e`` the decimal exponent of the first."""
    text = np.format_float_scientific(np.float32(abs(value)), unique=True, trim="-")
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    return int(digits), int(exponent), len(digits)


# -------------------------------------------------------------------------------------------------- digit tables
# Indexed by the biased exponent t of |v| as a float64 (0 for zero, 874..1150 for finite non-zero float32), or by
# u = 2 * t + (1 if |v| >= 10**(k + 1) else 0), k = floor(log10(2**(t - 1023))): then e = k + that bit.


def _pow10(k: int) -> float:
    """``10**k`` correctly rounded to float64 (int / int rounds correctly, ``10.0**k`` need not)."""
    return float(10**k) if k >= 0 else 1 / 10**-k


def _floor_log10_pow2(b: int) -> int:
    """``floor(log10(2**b))``, exactly (integer comparisons of ``2**b`` with powers of ten)."""

    def at_least(k: int) -> bool:  # 2**b >= 10**k
        return bool(2 ** max(b, 0) * 10 ** max(-k, 0) >= 2 ** max(-b, 0) * 10 ** max(k, 0))

    k = math.floor(b * 0.30102999566398120)
    while at_least(k + 1):
        k += 1
    while not at_least(k):
        k -= 1
    return k


_NEXT_POW10_OF_T = np.full(2048, 10.0)
_E_OF_U = np.zeros(4096, np.int64)  # decimal exponent e of |v|
_SCALE_OF_U = np.full(4096, 1e8)  # 10**(8 - e)
_HALF_OF_U = np.full(4096, 1e8)  # half the float32 spacing at |v|, times 10**(8 - e): the interval's half-width
for _t in range(1023 - 150, 1023 + 129):
    _k = _floor_log10_pow2(_t - 1023)
    _NEXT_POW10_OF_T[_t] = _pow10(_k + 1)
    for _c in (0, 1):
        _E_OF_U[2 * _t + _c] = _k + _c
        _SCALE_OF_U[2 * _t + _c] = _pow10(8 - _k - _c)
        _HALF_OF_U[2 * _t + _c] = math.ldexp(1.0, max(_t - 1023, -126) - 24) * _SCALE_OF_U[2 * _t + _c]  # exact
_POW10 = np.array([_pow10(j) for j in range(10)])
_INV_POW10 = np.array([_pow10(-j) for j in range(10)])
#: Margin, in units of the ninth significant digit, within which a float64 decision is not trusted (errors < 3e-7).
_MARGIN = 1e-6

# Powers of two with a lopsided interval (biased float32 exponent 2..254, significand zero): Dragon4's digits.
_POW2_M = np.zeros(256)
_POW2_E = np.zeros(256, np.int64)
_POW2_JM = np.zeros(256, np.int64)
for _E in range(2, 255):
    _POW2_M[_E], _POW2_E[_E], _p = _dragon4_digits(np.float32(math.ldexp(1.0, _E - 127)))
    _POW2_JM[_E] = 9 - _p

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

# ----------------------------------------------------------------------------------------------- worker threads
#: Values per chunk: enough to make NumPy's cost per call (about a microsecond, some 150 calls per chunk) small, few
#: enough for the arrays in use at a time to stay near a core's cache.
_CHUNK = 1 << 16
#: Blocks of at most this many values are formatted one value at a time (the array code has a fixed cost).
_FEW = 100
_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_spare_outputs: list[np.ndarray] = []
_tails_cache: dict[tuple[tuple[bytes, ...], int], _Tails] = {}


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


#: Worker threads for blocks of several chunks (1: everything in the calling thread).
_WORKERS = max(1, min(_cpus(), 8))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="posenc-text")
        return _pool


def _after_fork() -> None:
    """A forked child has none of its parent's threads, and maybe a lock some thread held: start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()
    _spare_outputs.clear()
    _tails_cache.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _take_output(size: int) -> np.ndarray:
    with _pool_lock:
        for i, buf in enumerate(_spare_outputs):
            if buf.size >= size:
                return _spare_outputs.pop(i)
    return np.empty(size, np.uint8)


def _give_back(bufs: list[np.ndarray]) -> None:
    with _pool_lock:
        _spare_outputs.extend(bufs)
        del _spare_outputs[: max(0, len(_spare_outputs) - 4 * _WORKERS)]


class _Scratch:
    """Arrays reused from chunk to chunk (one set per thread), for at most ``n`` values."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.x32 = np.empty(n, np.float32)
        self.u32 = [np.empty(n, np.uint32) for _ in range(4)]
        self.f = [np.empty(n) for _ in range(6)]
        self.i = [np.empty(n, np.int64) for _ in range(8)]
        self.u = [np.empty(n, _U64) for _ in range(10)]
        self.b = [np.empty(n, np.bool_) for _ in range(6)]


def _scratch(n: int, name: str = "work") -> _Scratch:
    """This thread's scratch arrays called ``name``, for ``n`` values at least (grown by doubling)."""
    work: _Scratch | None = getattr(_local, name, None)
    if work is None or work.n < n:
        work = _Scratch(max(n, 2 * work.n if work else 1024))
        setattr(_local, name, work)
    return work


# ------------------------------------------------------------------------------------------------ float32 digits


def _digits32(x: np.ndarray, w: _Scratch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shortest digits of each value of the 1-D float32 ``x``: ``(m, e, jm)``, views into ``w``.

    ``m`` (float64 holding an integer) is the digits, ``9 - jm`` of them (0 for zero), ``e`` the decimal exponent
    of the first. ``w.x32`` is left holding ``|x|``.
    """
    n = x.size
    a, s, h, c, acc, m = (f[:n] for f in w.f)
    u, e, jm = w.i[0][:n], w.i[1][:n], w.i[2][:n]
    ok1, ok2, ok3, slow, tmp = (b[:n] for b in w.b[:5])

    np.abs(x, out=w.x32[:n])
    np.copyto(a, w.x32[:n])
    np.right_shift(a.view(np.int64), 52, out=u)
    _take(_NEXT_POW10_OF_T, u, c)
    np.greater_equal(a, c, out=tmp)
    np.left_shift(u, 1, out=u)
    np.add(u, tmp, out=u)
    _take(_E_OF_U, u, e)
    _take(_SCALE_OF_U, u, c)
    np.multiply(a, c, out=s)  # in [1e8, 1e9)
    _take(_HALF_OF_U, u, h)  # between 3 and 60 for normal numbers

    # Eight, seven and six digits, for all values (nine always fit: h > 2.9). acc: the closest call so far.
    for j, okj in ((1, ok1), (2, ok2), (3, ok3)):
        np.multiply(s, _INV_POW10[j], out=c)
        np.rint(c, out=c)
        np.multiply(c, _POW10[j], out=c)
        np.subtract(s, c, out=c)
        np.abs(c, out=c)
        np.subtract(h, c, out=c)  # > 0: the candidate is inside the interval
        np.greater(c, _MARGIN, out=okj)
        if j == 1:
            np.abs(c, out=acc)
        else:
            np.abs(c, out=c)
            np.minimum(acc, c, out=acc)
    np.logical_and(ok2, ok1, out=ok2)
    np.logical_and(ok3, ok2, out=ok3)
    np.add(ok1, ok2, out=jm, dtype=np.int64)
    np.add(jm, ok3, out=jm)
    np.less_equal(acc, _MARGIN, out=slow)

    # Five digits and fewer: only for the values that kept six (a few percent, then a tenth at each step).
    idx = np.flatnonzero(ok3)
    for j in range(4, 9):
        if idx.size == 0:
            break
        sj = s[idx]
        cj = np.multiply(sj, _INV_POW10[j])
        np.rint(cj, out=cj)
        np.multiply(cj, _POW10[j], out=cj)
        np.subtract(sj, cj, out=cj)
        np.abs(cj, out=cj)
        np.subtract(h[idx], cj, out=cj)
        near = np.abs(cj) <= _MARGIN
        if near.any():
            slow[idx[near]] = True
        idx = idx[cj > _MARGIN]
        jm[idx] = j

    # The digits, and whether s was (nearly) half-way between two candidates: then its rounding decided.
    inv = h  # the half-width is no longer needed
    _take(_INV_POW10, jm, inv)
    np.multiply(inv, s, out=c)
    np.rint(c, out=m)
    np.subtract(c, m, out=c)
    np.abs(c, out=c)
    np.subtract(c, 0.5, out=c)
    np.abs(c, out=c)
    np.multiply(inv, _MARGIN, out=inv)  # the margin in units of the last digit kept
    np.less_equal(c, inv, out=tmp)
    np.logical_or(slow, tmp, out=slow)

    # 9.99999975e-05 -> 1e-04: the candidate is 10 with eight digits dropped.
    np.equal(m, 10.0, out=tmp)
    if tmp.any():
        carry = np.flatnonzero(tmp)
        carry = carry[jm[carry] == 8]
        m[carry] = 1.0
        e[carry] += 1

    # Powers of two: lopsided interval, Dragon4's digits from the table.
    bits = w.u32[0][:n]
    np.bitwise_and(x.view(np.uint32), 0x7FFFFF, out=bits)
    np.equal(bits, 0, out=tmp)
    if tmp.any():
        pow2 = np.flatnonzero(tmp)
        exps = (x[pow2].view(np.uint32) >> 23) & 0xFF
        pow2, exps = pow2[exps >= 2], exps[exps >= 2].astype(np.intp)
        m[pow2] = _POW2_M[exps]
        e[pow2] = _POW2_E[exps]
        jm[pow2] = _POW2_JM[exps]
        slow[pow2] = False

    if slow.any():
        for i in np.flatnonzero(slow).tolist():
            m[i], e[i], p = _dragon4_digits(x[i])
            jm[i] = 9 - p
    return m, e, jm


# -------------------------------------------------------------------------------------------------- float32 text


def _ascii(number: np.ndarray, end: int, lo: np.ndarray, hi: np.ndarray, w: _Scratch) -> None:
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
    _take(_ASCII4, k, g2)
    np.floor_divide(q, 10000, out=whole)  # digit 0
    np.multiply(whole, 10000, out=t)
    np.subtract(q, t, out=t)  # digits 1..4
    np.copyto(k, t)
    _take(_ASCII4, k, g1)
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
    w: _Scratch,
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
        _take(xor_lo, cls, a)
        np.bitwise_xor(lo, a, out=lo)
        _take(xor_hi, cls, b)
        np.bitwise_xor(hi, b, out=hi)
        return
    layout = _LAYOUTS[end]
    np.subtract(8, jm, out=cls)  # p - 1
    if kind == "whole":
        np.multiply(e, 9, out=length)
        np.add(cls, length, out=cls)
        number = w.f[2][:n]
        _take(layout.w_scale, cls, number)
        np.multiply(number, m, out=number)  # 100.0 has the digits 1000
        _ascii(number, end, lo, hi, w)
        point, minus, sizes = layout.w_point, layout.w_minus, layout.w_length
    else:
        _ascii(m, end - 4, lo, hi, w)
        np.add(e, 64, out=length)
        _take(_EXP_WORD, length, a)
        np.left_shift(a, _U64(8 * (end - 12)), out=a)
        np.bitwise_or(hi, a, out=hi)
        point, minus, sizes = layout.s_point, layout.s_minus, layout.s_length
    # The decimal point: the bytes below the fraction move down one, the point goes in between.
    stay_lo, stay_hi = w.u[7][:n], w.u[8][:n]
    _take(point[0], cls, stay_lo)
    _take(point[1], cls, stay_hi)
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
    _take(point[2], cls, a)
    np.bitwise_or(lo, a, out=lo)
    _take(point[3], cls, b)
    np.bitwise_or(hi, b, out=hi)
    # The minus sign, a '0' byte below the first digit.
    _take(minus[0], cls, a)
    np.multiply(a, negi.view(_U64), out=a)
    np.bitwise_xor(lo, a, out=lo)
    _take(minus[1], cls, b)
    np.multiply(b, negi.view(_U64), out=b)
    np.bitwise_xor(hi, b, out=hi)
    _take(sizes, cls, length)


class _Tails:
    """What follows each value (suffix, separator, the next row's start), laid out for chunks of whole rows."""

    def __init__(self, tails: Sequence[bytes], reps: int) -> None:
        sizes = {len(t) for t in tails}
        longest = max(sizes)
        #: Tails of one length, at most one byte, share the record with the text (which ends at byte 16 - length).
        self.uniform = len(sizes) == 1 and longest <= 1
        self.end = 16 - longest if self.uniform else 16
        self.words = 2 if self.uniform else (15 + longest + 7) // 8
        k = self.words
        packed = [int.from_bytes(t, "little") << (8 * (8 * k - len(t))) for t in tails]  # right-aligned in k words
        self.tail = [np.tile(np.array([(v >> (64 * i)) & _FULL for v in packed], _U64), reps) for i in range(k)]
        if self.uniform:
            self.tail = self.tail[1:] if longest else []  # only the last byte of the last word, if any
        else:  # the text moves from ending at byte 16 to ending before the tail
            self.length = np.tile(np.array([len(t) for t in tails], np.int64), reps)
            self.move = np.tile(np.array([8 * (8 * k - len(t) - 16) for t in tails], np.int64), reps)
            self.move_range = (8 * (8 * k - longest - 16), 8 * (8 * k - min(sizes) - 16))

    @staticmethod
    def get(tails: Sequence[bytes], reps: int) -> _Tails:
        """The layout of these tails, shared by successive calls with the same separators (the writers' blocks)."""
        key = (tuple(tails), reps)
        with _pool_lock:
            layout = _tails_cache.get(key)
        if layout is None:
            layout = _Tails(tails, reps)
            with _pool_lock:
                _tails_cache[key] = layout
                while len(_tails_cache) > 4:
                    del _tails_cache[next(iter(_tails_cache))]
        return layout

    def attach(self, lo: np.ndarray, hi: np.ndarray, length: np.ndarray, first: int, w: _Scratch) -> list[np.ndarray]:
        """The records' words: text and tail; adds the tails' lengths to ``length``."""
        n = lo.size
        span = slice(first, first + n)
        if self.uniform:
            if self.tail:
                np.add(length, 1, out=length)
                np.bitwise_or(hi, self.tail[0][span], out=hi)
            return [lo, hi]
        np.add(length, self.length[span], out=length)
        words = [w.u[2 + i][:n] for i in range(self.words)]
        shift, u = w.u[7][:n], w.u[8][:n]
        low, high = self.move_range
        for k, word in enumerate(words):
            np.copyto(word, self.tail[k][span])
            for src, text in ((0, lo), (1, hi)):
                offset = 64 * (src - k)
                if high + offset < -63 or low + offset > 63:
                    continue
                np.add(self.move[span], offset, out=shift.view(np.int64))  # bits, may be negative: wraps
                if high + offset >= 0:
                    np.left_shift(text, shift, out=u)
                    np.bitwise_or(word, u, out=word)
                if low + offset < 0:
                    np.negative(shift, out=shift)
                    np.right_shift(text, shift, out=u)
                    np.bitwise_or(word, u, out=word)
        return words


def _records32(x: np.ndarray, tails: _Tails, first: int, w: _Scratch) -> tuple[list[np.ndarray], np.ndarray]:
    """The records of the 1-D float32 ``x`` (values ``first``... of the tails' layout): words and lengths."""
    n = x.size
    m, e, jm = _digits32(x, w)
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
    _layout(main, m, e, jm, negi, tails.end, w, lo, hi, length)
    for kind in ("small", "whole", "sci"):
        if kind == main or not counts[kind]:
            continue
        if kind == "whole":
            np.logical_or(small, sci, out=tmp)
            idx = np.flatnonzero(~tmp)
        else:
            idx = np.flatnonzero(small if kind == "small" else sci)
        k = idx.size
        sub = _scratch(k, kind)
        slo, shi, slen = sub.u[0][:k], sub.u[1][:k], sub.i[7][:k]
        _layout(kind, m[idx], e[idx], jm[idx], negi[idx], tails.end, sub, slo, shi, slen)
        lo[idx], hi[idx], length[idx] = slo, shi, slen
    np.add(length, negi, out=length)
    return tails.attach(lo, hi, length, first, w), length


def _emit(words: list[np.ndarray], length: np.ndarray, head: bytes, w: _Scratch) -> tuple[np.ndarray, int, int]:
    """``head`` and the records (the last ``length`` bytes of each, in order): a buffer, where they start and end."""
    n = length.size
    count = len(words)
    ends = w.i[0][:n]
    np.cumsum(length, out=ends)
    if head:
        np.add(ends, len(head), out=ends)
    total = int(ends[-1])
    size = 8 * count + 8 + total  # records end-aligned: the first starts up to 8 * count bytes early
    out = _take_output(size + 8)
    base = 8 * count
    view = np.ndarray((out.size - 7,), _U64, out, 0, (1,))  # unaligned words at every byte offset
    at, unused = w.i[1][:n], w.b[0][:n]
    spare = size  # writes of words a record does not reach go there
    # Lowest words first: a word spills only onto the last 8 bytes of earlier records, which their last word
    # (written last) replaces; a record shorter than 8 bytes is written byte by byte at the end.
    for k in range(count):
        np.add(ends, base - 8 * (count - k), out=at)
        np.less_equal(length, 8 * (count - 1 - k) if k < count - 1 else 7, out=unused)
        skip = np.flatnonzero(unused)
        if skip.size:
            at[skip] = spare
        view[at] = words[k]
    if skip.size:
        last = words[-1][skip]
        where, size_ = ends[skip] + base, length[skip]
        for b in range(1, 8):
            keep = size_ >= b
            if not keep.any():
                break
            out[where[keep] - b] = (last[keep] >> _U64(64 - 8 * b)).astype(np.uint8)
    out[base : base + len(head)] = np.frombuffer(head, np.uint8)  # after the spills of the first record
    return out, base, base + total


def _format_chunk(x: np.ndarray, tails: _Tails, first: int, head: bytes) -> tuple[np.ndarray, int, int]:
    w = _scratch(x.size)
    words, length = _records32(x, tails, first, w)
    return _emit(words, length, head, w)


def _join32(block: np.ndarray, tails: list[bytes], head: bytes, trim: int) -> bytes:
    """float32 through the array code, in chunks of whole rows (or of one row), on worker threads if there are
    several; ``trim`` bytes are left off the end."""
    rows, cols = block.shape
    x = np.ascontiguousarray(block).reshape(-1)
    if cols <= _CHUNK:  # chunks of whole rows, which share one tiled layout of the tails
        per = max(1, _CHUNK // cols)
        layout = _Tails.get(tails, min(per, rows))
        spans = [(r * cols, min(r + per, rows) * cols, 0) for r in range(0, rows, per)]
    else:  # pieces of one row
        layout = _Tails.get(tails, 1)
        spans = [
            (r * cols + c, r * cols + min(c + _CHUNK, cols), c) for r in range(rows) for c in range(0, cols, _CHUNK)
        ]

    def run(k: int) -> tuple[np.ndarray, int, int]:
        lo, hi, col = spans[k]
        return _format_chunk(x[lo:hi], layout, col, head if k == 0 else b"")

    run_all: Callable[..., Iterator[tuple[np.ndarray, int, int]]] = map
    if len(spans) > 1 and _WORKERS > 1:
        run_all = _executor().map
    parts = list(run_all(run, range(len(spans))))
    buf, start, stop = parts[-1]
    parts[-1] = buf, start, stop - trim
    text = b"".join([buf[start:stop].data for buf, start, stop in parts])
    _give_back([buf for buf, _, _ in parts])
    return text


def _join64(block: np.ndarray, tails: list[bytes], head: bytes) -> bytes:
    """float64: ``repr`` of each value (Python's shortest round-trip digits), joined in Python."""
    texts = [t.decode("latin-1") for t in tails]
    lines = [head.decode("latin-1")]
    if len(set(texts[:-1])) <= 1:  # one separator within rows (CSV): str.join
        within, end = texts[0] if len(texts) > 1 else "", texts[-1]
        lines.extend(within.join(map(float.__repr__, row)) + end for row in block.tolist())
    else:
        cells = [""] * (2 * len(texts))
        cells[1::2] = texts
        for row in block.tolist():
            cells[::2] = map(float.__repr__, row)
            lines.append("".join(cells))
    return "".join(lines).encode("latin-1")


def _join_each(block: np.ndarray, tails: list[bytes], head: bytes) -> bytes:
    """float32, one value at a time (about two microseconds each): for small blocks and very long separators."""
    parts = [head]
    for row in block.tolist():
        parts.extend(_spell32(value).encode("ascii") + tail for value, tail in zip(row, tails, strict=True))
    return b"".join(parts)


def _fits16(block: np.ndarray) -> bool:
    """Whether every text fits in 15 bytes: always with NumPy >= 2.3, where positional stops at 1e6; before, a
    positional value up to 1e16 could take 18 (such blocks are formatted one value at a time)."""
    return bool(_POSITIONAL_MAX32 <= 1e6 or np.abs(block).max() < np.float32(1e6))


def _check(block: np.ndarray) -> None:
    if not isinstance(block, np.ndarray) or block.dtype not in TEXT_DTYPES:
        dtype = getattr(block, "dtype", type(block).__name__)
        raise FormatError(f"text formats hold float32 or float64 values, got {dtype}")
    if block.ndim != 2:
        raise FormatError(f"text formats write 2-D blocks of values, got shape {block.shape}")
    if block.size and not np.isfinite(block).all():
        raise FormatError("text formats cannot hold NaN or infinite values")


def join_rows(block: np.ndarray, *, seps: Sequence[bytes], suffix: bytes = b"", row_start: bytes = b"") -> bytes:
    """The text of a 2-D float32/float64 ``block``, each value spelled as the module describes.

    The result is, for each row in order, ``row_start`` and then, for each column ``j``, the value's text,
    ``suffix`` and ``seps[j]``. Nothing else is added: the last separator ends the row (``b"\\n"`` in CSV). A block
    without rows gives ``b""``, one without columns ``row_start`` once per row.

    Parameters
    ----------
    block : numpy.ndarray
        2-D float32 or float64 array, all values finite, any memory layout.
    seps : sequence of bytes
        One separator per column: ``len(seps) == block.shape[1]``.
    suffix : bytes, optional
        Written right after every value (``b"f"`` for C float literals).
    row_start : bytes, optional
        Written before the first value of every row.

    Returns
    -------
    bytes

    Raises
    ------
    FormatError
        If ``block`` is not a 2-D float32/float64 array, or holds a NaN or an infinity.
    ValueError
        If ``len(seps)`` differs from the number of columns.

    Notes
    -----
    float32 blocks are formatted with vectorised NumPy code, a few tens of nanoseconds per value, spread over worker
    threads for large blocks (blocks of up to 100 values go one value at a time, as do blocks with separators of
    more than 16 bytes). float64 blocks go through ``repr`` per value: up to about a microsecond each for the
    17-digit values of a sinusoidal table.

    Examples
    --------
    CSV rows:

    >>> block = np.array([[0.0, 1.0, 0.84147096], [-0.0, 1e-05, 3.4028235e38]], np.float32)
    >>> join_rows(block, seps=[b",", b",", b"\\n"])
    b'0.0,1.0,0.84147096\\n-0.0,1e-05,3.4028235e+38\\n'

    A C initialiser, two values per line:

    >>> join_rows(block, seps=[b", ", b",\\n     ", b"},\\n"], suffix=b"f", row_start=b"    {")
    b'    {0.0f, 1.0f,\\n     0.84147096f},\\n    {-0.0f, 1e-05f,\\n     3.4028235e+38f},\\n'

    float64 values are spelled as Python's ``repr``:

    >>> join_rows(np.array([[0.1, 1e16]]), seps=[b" ", b"\\n"])
    b'0.1 1e+16\\n'
    """
    _check(block)
    rows, cols = int(block.shape[0]), int(block.shape[1])
    if len(seps) != cols:
        raise ValueError(f"need one separator per column: {cols} columns, {len(seps)} separators")
    if rows == 0 or cols == 0:
        return bytes(row_start) * rows
    # Every record is a value and its tail; row_start goes after the last tail of each row, and once in front.
    tails = [bytes(suffix) + bytes(sep) for sep in seps]
    tails[-1] += row_start
    if block.dtype == np.float32 and block.size > _FEW and max(map(len, tails)) <= 16 and _fits16(block):
        return _join32(block, tails, row_start, len(row_start))
    join = _join64 if block.dtype == np.float64 else _join_each
    text = join(block, tails, row_start)
    return text[: len(text) - len(row_start)]


def shortest(block: np.ndarray) -> Iterator[list[str]]:
    """Yield, row by row, the shortest round-trip text of each value of a 2-D float32/float64 ``block``.

    Raises
    ------
    FormatError
        If the block holds a NaN or an infinity, or is of another dtype.

    Examples
    --------
    >>> list(shortest(np.array([[0.0, 1.0], [1e-05, -0.0]], np.float32)))
    [['0.0', '1.0'], ['1e-05', '-0.0']]
    """
    _check(block)
    rows, cols = block.shape
    if cols == 0:
        yield from ([] for _ in range(rows))
        return
    text = join_rows(block, seps=[b" "] * (cols - 1) + [b"\n"]).decode("ascii")
    for line in text.splitlines():
        yield line.split(" ")
