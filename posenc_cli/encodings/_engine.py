"""The fast path of every sinusoid table: rows by angle addition, each entry with a proven error bound.

Row ``r`` has the position ``start + step * r``; rows are produced ``S`` at a time: with ``r = b + a``, ``b`` a
multiple of ``S`` and ``a < S``, the angle is ``(start + step * b) * f + (step * a) * f``.  The kernel
(:mod:`~posenc_cli.encodings._kernel`) gives ``sin``/``cos`` of the first term per block (the start enters as a
per-column phase) and of the second per offset (a cached table), and every entry is two products and a sum
(double-double for float64 output): ``X[a] * U[b] + Y[a] * V[b]`` with ``X = [sin a, cos a]``, ``Y = [cos a,
sin a]``, ``U = [cos b, cos b]``, ``V = [sin b, -sin b]`` for sine and cosine columns (:class:`Columns` gathers
them).  The amplitude ``scale`` multiplies ``U`` and ``V``.  :mod:`~posenc_cli.encodings._combine` proves each
entry's rounding or flags it for the exact path (:mod:`~posenc_cli.encodings._exact`).  Positions that cross zero
are computed as two one-signed tables (:func:`_halves`), where the error bound is relative for small sines.

Where posenc's compiled core is built (:mod:`posenc_cli._native`), one call of its ``combine32`` or ``combine64``
fills a batch of rows from the offset table and the batch's block vectors (:func:`_fill_compiled`), with the same
float64 operations in the same order as :mod:`~posenc_cli.encodings._combine` (so the same bits), without the GIL.
Large tables are cut at block boundaries into one part per thread (:func:`~posenc_cli._native.threads`).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import lru_cache, partial
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from posenc_cli._native import native, threads
from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import _kernel as K
from posenc_cli.encodings._columns import Columns
from posenc_cli.encodings._combine import Stats, bound, combine32, combine64
from posenc_cli.encodings._exact import Sinusoid, decided, sinusoid_entries

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor
    from types import ModuleType

_CHUNK = 1 << 16  # entries per work chunk (512 KiB float64 temporaries): measured faster than L2-sized ones
_KERNEL_BATCH = 1 << 15  # kernel evaluations per call (amortises NumPy's per-call overhead)
_CACHED_TABLE = 1 << 19  # offset tables up to this many entries are cached (4 MiB each); larger ones: rebuilt per call
_PART_MIN = 1 << 19  # entries per thread at least: two threads from 2**20 entries, where they pay off
MAX_ROWS = 2**32

Exact = Callable[[np.ndarray, np.ndarray, np.dtype], np.ndarray]  # (rows, columns, dtype) -> correctly rounded


# ------------------------------------------------------------------------------------------ kernel, gathered
def _kernel_rows(
    rows: np.ndarray, consts: np.ndarray, phase: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~posenc_cli.encodings._kernel.kernel` for rows ``rows`` (1-D), in batches of ``_KERNEL_BATCH``; by the
    compiled core's copy of it (the same operations), in one call, where it is built."""
    g, ph = consts[K.PIECES], (consts[K.PHASE] if phase else None)
    core = native("_core")
    if core is not None:
        sh, sl, ch, cl = (np.empty((len(rows), g.shape[1])) for _ in range(4))
        core.kernel(np.ascontiguousarray(rows, np.float64), g, ph, *K.kernel_constants(), sh, sl, ch, cl)
        return sh, sl, ch, cl
    step = max(1, _KERNEL_BATCH // g.shape[1])
    parts = [K.kernel(rows[i : i + step, None].astype(np.float64), g, ph) for i in range(0, len(rows), step)]
    if len(parts) == 1:
        return parts[0]
    sh, sl, ch, cl = (np.concatenate(p) for p in zip(*parts, strict=True))
    return sh, sl, ch, cl


def _gather(parts: list[np.ndarray], idx: np.ndarray) -> np.ndarray:
    source = np.concatenate([*parts, np.zeros((parts[0].shape[0], 1))], axis=1)
    return np.take(source, idx, axis=1)


def _block_rows(n_rows: int, d: int) -> int:
    """``S``, rows per block: kernel work is ``K * (S + n_rows / S)``, memory ``S * d`` per table."""
    cached = max(1, min(128, _CACHED_TABLE // d))
    if n_rows <= 4 * cached:
        return cached
    return max(cached, min(math.isqrt(n_rows), (8 * _CACHED_TABLE) // d))


def _offset_table(cols: Columns, spec: Sinusoid, size: int, wide: bool) -> tuple[np.ndarray, ...]:
    """``X``, ``Y`` for offsets ``a = 0 .. size-1`` (no phase, no scale: the same for every start): high parts for
    float32 output; for float64 (``wide``) the double-doubles and Veltkamp halves.  Tables up to ``_CACHED_TABLE``
    entries are cached."""
    if size * len(cols) <= _CACHED_TABLE:
        return _cached_offset_table(cols, spec.base, spec.denom, spec.step, size, wide, spec.mults)
    return _build_offset_table(cols, spec.base, spec.denom, spec.step, size, wide, spec.mults)


def _build_offset_table(
    cols: Columns,
    base: float,
    denom: Fraction,
    step: float,
    size: int,
    wide: bool,
    mults: tuple[Fraction, ...] | None = None,
) -> tuple[np.ndarray, ...]:
    consts = K.constants(cols.ks_bytes, base, denom, 0.0, step, mults)
    sh, sl, ch, cl = _kernel_rows(np.arange(size), consts, False)
    xh, yh = _gather([sh, ch], cols.x_idx), _gather([sh, ch], cols.y_idx)
    if not wide:
        return xh, yh
    xl, yl = _gather([sl, cl], cols.x_idx), _gather([sl, cl], cols.y_idx)
    return (xh, xl, *K.split(xh), yh, yl, *K.split(yh))


_cached_offset_table = lru_cache(maxsize=4)(_build_offset_table)


def _block_vectors(
    blocks: np.ndarray, cols: Columns, spec: Sinusoid, consts: np.ndarray, wide: bool
) -> tuple[np.ndarray, ...]:
    """``U``, ``V`` (shape ``(nq, 1, d)``) for block rows ``blocks``, times the amplitude: the whole ``scale`` for
    float32 output (``|scale| <= FLT_MAX``), its mantissa ``m`` (``1 <= |m| < 2``, a double-double product) for
    float64 output, whose power of two :func:`~posenc_cli.encodings._combine.combine64` applies."""
    sh, sl, ch, cl = _kernel_rows(blocks, consts, spec.start != 0)
    uh, vh = _gather([sh, ch, -sh], cols.u_idx), _gather([sh, ch, -sh], cols.v_idx)
    if not wide:
        if spec.scale != 1.0:
            uh *= spec.scale
            vh *= spec.scale
        return uh[:, None, :], vh[:, None, :]
    ul, vl = _gather([sl, cl, -sl], cols.u_idx), _gather([sl, cl, -sl], cols.v_idx)
    m = 2 * math.frexp(spec.scale)[0]
    if m != 1.0:
        m1, m2 = K.split(np.array(m))
        (uh, ul), (vh, vl) = (_times(h, lo, m, m1, m2) for h, lo in ((uh, ul), (vh, vl)))
    return tuple(p[:, None, :] for p in (uh, ul, *K.split(uh), vh, vl, *K.split(vh)))


def _times(h: np.ndarray, lo: np.ndarray, m: float, m1: np.ndarray, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The double-double ``(h + lo) * m`` (relative error below ``2**-104``)."""
    p = h * m
    return K.two_sum(p, K.prod_err(*K.split(h), m1, m2, p) + lo * m)


# ------------------------------------------------------------------------------------------------------ filling
def _segments(first: int, stop: int, size: int, rows: int) -> Iterator[tuple[int, int, int, int]]:
    """Cover rows ``first .. stop-1`` by ``(q, nq, a0, a1)``: rows ``q'*size + a0 .. q'*size + a1 - 1`` for
    ``q' = q .. q+nq-1``, about ``rows`` rows at a time (whole blocks grouped, long blocks cut)."""
    r = first
    while r < stop:
        q, a0 = divmod(r, size)
        a1 = min(size, stop - q * size)
        if a0 == 0 and a1 == size and size <= rows:
            nq = min(rows // size, (stop - r) // size)
            yield q, nq, 0, size
            r += nq * size
        else:
            a1 = min(a1, a0 + rows)
            yield q, 1, a0, a1
            r = q * size + a1


def _zero_row(cols: Columns, spec: Sinusoid, dtype: np.dtype) -> np.ndarray:
    """The row of position 0, exactly: sin 0 = +0, cos 0 = 1 (times the scale, rounded to ``dtype``), zeros."""
    return np.where(cols.kind == Columns.COS, spec.scale, 0.0).astype(dtype)


def _zero_position(spec: Sinusoid, first: int, stop: int) -> int | None:
    """The row in ``first .. stop-1`` whose position is 0, if any (none when the step is 0: see :func:`fill`)."""
    if spec.step == 0:
        return None
    r = -Fraction(spec.start) / Fraction(spec.step)
    return int(r) if r.denominator == 1 and first <= r < stop else None


def _fill_serial(
    out: np.ndarray, first: int, cols: Columns, spec: Sinusoid, size: int, tab: tuple[np.ndarray, ...], stats: Stats
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``first ..`` into ``out`` (blocks of ``size`` rows, offset table ``tab``); returns the (row, column)
    indices, relative to ``out``, left undecided."""
    n, d = out.shape
    stop, wide = first + n, out.dtype == np.float64
    consts = K.constants(cols.ks_bytes, spec.base, spec.denom, spec.start, spec.step, spec.mults)
    p2 = spec.scale / (2 * math.frexp(spec.scale)[0])
    zero_row, zero_at = _zero_row(cols, spec, out.dtype), _zero_position(spec, first, stop)
    batch = max(1, _KERNEL_BATCH // d) * size  # rows per batch of block vectors
    bad_rows, bad_cols = [], []
    lo = first
    while lo < stop:
        hi = min(stop, (lo // size) * size + batch)
        q_first = lo // size
        vec = _block_vectors(np.arange(q_first, (hi - 1) // size + 1) * size, cols, spec, consts, wide)
        err = bound(stats, hi - 1, wide)  # once per batch: the bound only grows with the row, so it holds for all
        for q, nq, a0, a1 in _segments(lo, hi, size, max(1, _CHUNK // d)):
            row0 = q * size + a0 - first
            view = out[row0 : row0 + nq * (a1 - a0)].reshape(nq, a1 - a0, d)
            v = tuple(x[q - q_first : q - q_first + nq] for x in vec)
            if d < 64:  # NumPy's inner loops would run over d only: broadcast U, V beforehand
                v = tuple(np.repeat(x, a1 - a0, axis=1) for x in v)
            if wide:
                bad = combine64(view, tuple(t[a0:a1] for t in tab), v, err, p2)
            else:
                bad = combine32(view, tab[0][a0:a1], tab[1][a0:a1], v[0], v[1], err[0])
            if cols.zeros.size:
                view[..., cols.zeros] = 0.0
                bad[..., cols.zeros] = False
            if zero_at is not None and row0 <= zero_at - first < row0 + nq * (a1 - a0):
                qz, az = divmod(zero_at, size)
                if q <= qz < q + nq and a0 <= az < a1:  # exact; the bound cannot prove the sign of sin 0 = 0
                    view[qz - q, az - a0] = zero_row
                    bad[qz - q, az - a0] = False
            if bad.any():
                r, c = np.nonzero(bad.reshape(-1, d))
                bad_rows.append(r + row0)
                bad_cols.append(c)
        lo = hi
    if not bad_rows:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    return np.concatenate(bad_rows), np.concatenate(bad_cols)


def _fill_compiled(
    core: ModuleType,
    out: np.ndarray,
    first: int,
    cols: Columns,
    spec: Sinusoid,
    size: int,
    tab: tuple[np.ndarray, ...],
    stats: Stats,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_fill_serial` by the compiled core: per batch, the block vectors and the bound as there, then one call
    for all the batch's rows (zero columns included); the row of position 0 is set here, as there."""
    n, d = out.shape
    stop, wide = first + n, out.dtype == np.float64
    consts = K.constants(cols.ks_bytes, spec.base, spec.denom, spec.start, spec.step, spec.mults)
    p2 = spec.scale / (2 * math.frexp(spec.scale)[0])
    zeros = cols.zeros.astype(np.int64)
    batch = max(1, _KERNEL_BATCH // d) * size
    found = []
    lo = first
    while lo < stop:
        hi = min(stop, (lo // size) * size + batch)
        q_first = lo // size
        vec = _block_vectors(np.arange(q_first, (hi - 1) // size + 1) * size, cols, spec, consts, wide)
        err = bound(stats, hi - 1, wide)
        rows = out[lo - first : hi - first]
        if wide:
            xh, xl, _, _, yh, yl, _, _ = tab
            uh, ul, _, _, vh, vl, _, _ = vec
            at = core.combine64(rows, xh, xl, yh, yl, uh, ul, vh, vl, err[0], err[1], p2, zeros, lo, size, q_first)
        else:
            at = core.combine32(rows, tab[0], tab[1], vec[0], vec[1], err[0], zeros, lo, size, q_first)
        if at:
            found.append(np.frombuffer(at, np.int64) + (lo - first) * d)
        lo = hi
    flat = np.concatenate(found) if found else np.empty(0, np.int64)
    zero_at = _zero_position(spec, first, stop)
    if zero_at is not None:  # exact; the bound cannot prove the sign of sin 0 = 0
        out[zero_at - first] = _zero_row(cols, spec, out.dtype)
        flat = flat[flat // d != zero_at - first]
    return (flat // d).astype(np.intp), (flat % d).astype(np.intp)


def _halves(spec: Sinusoid, first: int, stop: int) -> list[tuple[int, int, Sinusoid, int, int]] | None:
    """Split rows whose positions cross zero (``start``, ``step`` of opposite signs) into one-signed tables.

    Rows before the crossing ``r_c`` (position of ``start``'s sign) are rows ``anchor - r`` of the table starting at
    ``position(anchor)`` with step ``-step`` (``anchor = min(r_c, 2**32) - 1``); rows from ``r_c`` on are rows
    ``r - r_c`` of the table starting at ``position(r_c)``.  Returns ``(lo, hi, spec, anchor, sign)`` per nonempty
    part, or None when positions do not cross zero or a new start is not a float64 (then the absolute bound
    applies to sines near zero, which only costs time).
    """
    if not (spec.start < 0 < spec.step or spec.step < 0 < spec.start):
        return None
    x0, dx = Fraction(spec.start), Fraction(spec.step)
    r_c = math.ceil(-x0 / dx)
    anchor = min(r_c, MAX_ROWS) - 1
    parts = []
    if first <= anchor:
        parts.append((first, min(stop, anchor + 1), x0 + dx * anchor, -spec.step, anchor, -1))
    if stop > r_c:
        parts.append((max(first, r_c), stop, x0 + dx * r_c, spec.step, r_c, 1))
    if any(Fraction(float(p[2])) != p[2] for p in parts):
        return None
    return [(lo, hi, spec._replace(start=float(x), step=dx_), a, s) for lo, hi, x, dx_, a, s in parts]


_pool: tuple[int, int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def helpers(count: int) -> ThreadPoolExecutor:
    """Worker threads (``count`` at least) that compute parts of a large :func:`fill` while the caller computes its
    own: made on first use, as many as :func:`~posenc_cli._native.threads` allows beside the caller, and kept, so a
    table streamed in thousands of blocks starts no thread per block. A larger count (``POSENC_THREADS`` raised)
    makes a new pool; the old one is not shut down, since a fill in another thread may still be handing it work (its
    idle threads end when the last such fill lets go of it). A forked child (whose copy has no thread behind it)
    makes its own."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid() or _pool[1] < count:
            from concurrent.futures import ThreadPoolExecutor  # here: importing the engine stays fast

            workers = max(count, threads() - 1)
            _pool = (os.getpid(), workers, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="posenc-fill"))
        return _pool[2]


def _cuts(first: int, n: int, size: int, parts: int) -> list[int]:
    """Rows ``0 = c_0 < c_1 < ... = n`` of ``out`` cutting it into at most ``parts`` parts of about equal size, each
    cut on a block boundary (row ``first + c_i`` a multiple of ``size``)."""
    inner = {((first + n * i // parts) // size) * size - first for i in range(1, parts)}
    return [0, *sorted(c for c in inner if 0 < c < n), n]


def fill(out: np.ndarray, first: int, cols: Columns, spec: Sinusoid, exact: Exact | None = None) -> None:
    """Rows ``first .. first + len(out) - 1`` into ``out`` (float32 or float64), correctly rounded: fast path (the
    compiled core where built; one thread per :data:`_PART_MIN` entries, up to :func:`~posenc_cli._native.threads`),
    then ``exact(rows, columns, dtype)`` (default: :func:`~._exact.sinusoid_entries`) for the entries left
    undecided."""
    n, d = out.shape
    if n == 0:
        return
    if not cols.ks.size or (spec.start == 0 and spec.step == 0):  # zeros only, or every position is 0
        out[...] = _zero_row(cols, spec, out.dtype)
        return
    halves = _halves(spec, first, first + n)
    if halves is not None:
        for lo, hi, part, anchor, sign in halves:  # rows lo .. hi-1 are rows sign * (r - anchor) of ``part``
            hook = None if exact is None else (lambda r, c, t, a=anchor, s=sign: exact(a + s * r, c, t))
            if sign > 0:
                fill(out[lo - first : hi - first], lo - anchor, cols, part, hook)
            else:
                rev = np.empty((hi - lo, d), out.dtype)
                fill(rev, anchor - (hi - 1), cols, part, hook)
                out[lo - first : hi - first] = rev[::-1]
        return
    if first == 0 and n > 1 and 0 < abs(spec.start) < abs(spec.step):  # row 0 alone: its small sines keep a
        fill(out[:1], 0, cols, spec, exact)  # bound relative to its own position, not to that of later rows
        fill(out[1:], 1, cols, spec, exact)
        return
    consts = K.constants(cols.ks_bytes, spec.base, spec.denom, spec.start, spec.step, spec.mults)
    stats = Stats(cols, consts, spec)
    size = min(_block_rows(n, d), max(n, 1))  # offsets beyond the rows asked for may leave the angle domain
    tab = _offset_table(cols, spec, size, out.dtype == np.float64)  # once, before any thread
    core = native("_core")
    serial: Callable[..., tuple[np.ndarray, np.ndarray]] = (
        _fill_serial if core is None else partial(_fill_compiled, core)
    )
    cuts = _cuts(first, n, size, min(threads(), out.size // _PART_MIN))
    if len(cuts) > 2:
        pool = helpers(len(cuts) - 2)
        jobs = [pool.submit(serial, out[a:b], first + a, cols, spec, size, tab, stats) for a, b in pairwise(cuts[1:])]
        done = [serial(out[: cuts[1]], first, cols, spec, size, tab, stats)] + [job.result() for job in jobs]
        rows = np.concatenate([r + a for (r, _), a in zip(done, cuts, strict=False)])
        cs = np.concatenate([c for _, c in done])
    else:
        rows, cs = serial(out, first, cols, spec, size, tab, stats)
    if rows.size:
        if exact is None:
            out[rows, cs] = sinusoid_entries(rows + first, cols.k[cs], cols.kind[cs] == Columns.COS, spec, out.dtype)
        else:
            out[rows, cs] = exact(rows + first, cs, out.dtype)


def typed_rows(
    first: int, stop: int, cols: Columns, spec: Sinusoid, element: ElementType, exact: Exact | None = None
) -> np.ndarray:
    """Rows in ``element``'s storage: float32/float64 directly (:func:`fill`), the other types from the correctly
    rounded float64 by :meth:`ElementType.convert`, with the entries it cannot prove settled by the exact path."""
    if element.name in ("float32", "float64"):
        out = np.empty((stop - first, len(cols)), element.storage)
        fill(out, first, cols, spec, exact)
        return out
    y = np.empty((stop - first, len(cols)), np.float64)
    fill(y, first, cols, spec, exact)
    out, undecided = element.convert(y)
    for r, c in zip(*np.nonzero(undecided), strict=True):
        k, cos = int(cols.k[c]), bool(cols.kind[c] == Columns.COS)
        out[r, c] = decided(first + int(r), k, cos, spec, element.from_exact)
    return out
