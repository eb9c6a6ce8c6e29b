"""float32 records to bytes (step 3 of :mod:`~posenc_cli.formats.text.floats`): each value's tail joined to its
text, the records scattered into one buffer.

The tail of a value is what follows it: the suffix, the separator and, after a row's last value, the next row's
start. A one-byte tail (CSV) takes the record's last byte; with other tails the text moves to end where its tail
starts, in records of up to four words. The records are scattered to their end offsets (a cumulative sum of the
lengths) through an unaligned ``uint64`` view of the output, lowest words first: a word's bytes before its record's
start land on the last eight bytes of earlier records, which their last words, written last, replace (records
shorter than 8 bytes, like ``0.0,``, are written byte by byte).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from ._records import records32
from ._work import Scratch, scratch, take_output

_U64 = np.uint64
_FULL = 0xFFFFFFFFFFFFFFFF
_tails_lock = threading.Lock()
_tails_cache: dict[tuple[tuple[bytes, ...], int], Tails] = {}


def _after_fork() -> None:
    """A forked child may hold the lock some thread of its parent held: start afresh."""
    global _tails_lock
    _tails_lock = threading.Lock()
    _tails_cache.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class Tails:
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
    def get(tails: Sequence[bytes], reps: int) -> Tails:
        """The layout of these tails, shared by successive calls with the same separators (the writers' blocks)."""
        key = (tuple(tails), reps)
        with _tails_lock:
            layout = _tails_cache.get(key)
        if layout is None:
            layout = Tails(tails, reps)
            with _tails_lock:
                _tails_cache[key] = layout
                while len(_tails_cache) > 4:
                    del _tails_cache[next(iter(_tails_cache))]
        return layout

    def attach(self, lo: np.ndarray, hi: np.ndarray, length: np.ndarray, first: int, w: Scratch) -> list[np.ndarray]:
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


def _emit(words: list[np.ndarray], length: np.ndarray, head: bytes, w: Scratch) -> tuple[np.ndarray, int, int]:
    """``head`` and the records (the last ``length`` bytes of each, in order): a buffer, where they start and end."""
    n = length.size
    count = len(words)
    ends = w.i[0][:n]
    np.cumsum(length, out=ends)
    if head:
        np.add(ends, len(head), out=ends)
    total = int(ends[-1])
    size = 8 * count + 8 + total  # records end-aligned: the first starts up to 8 * count bytes early
    out = take_output(size + 8)
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


def format_chunk(x: np.ndarray, tails: Tails, first: int, head: bytes) -> tuple[np.ndarray, int, int]:
    """``head`` and the text of the 1-D float32 ``x`` (values ``first``... of the tails' layout), each value followed
    by its tail: a buffer (from :func:`~posenc_cli.formats.text._work.take_output`), where the bytes start and end."""
    w = scratch(x.size)
    lo, hi, length = records32(x, tails.end, w)
    words = tails.attach(lo, hi, length, first, w)
    return _emit(words, length, head, w)
