"""Column layouts of sinusoid tables: which frequency and which function each column holds."""

from __future__ import annotations

from functools import lru_cache

import numpy as np


class Columns:
    """A validated column layout: column ``c`` is ``sin`` or ``cos`` of frequency ``k[c]``, or zero.

    Built (validated) by :func:`posenc_cli.encodings.sinusoid.sinusoid_columns`; hashable (by content) so that
    tables cache per layout.
    """

    SIN, COS, ZERO = 0, 1, 2

    def __init__(self, k: np.ndarray, kind: np.ndarray) -> None:
        self.k, self.kind = k.astype(np.int64), kind.astype(np.int8)
        trig = self.kind != self.ZERO
        self.ks, inverse = np.unique(self.k[trig], return_inverse=True)  # distinct frequencies, sorted
        n = len(self.ks)
        self.kidx = np.zeros(len(k), np.intp)
        self.kidx[trig] = inverse
        sin, cos = self.kind == self.SIN, self.kind == self.COS
        self.sin, self.zeros = sin, np.flatnonzero(~trig)
        # X, Y gather from [S | C | 0] (offsets), U, V from [S | C | -S | 0] (blocks)
        self.x_idx = np.where(sin, self.kidx, np.where(cos, n + self.kidx, 2 * n))
        self.y_idx = np.where(sin, n + self.kidx, np.where(cos, self.kidx, 2 * n))
        self.u_idx = np.where(trig, n + self.kidx, 3 * n)
        self.v_idx = np.where(sin, self.kidx, np.where(cos, 2 * n + self.kidx, 3 * n))
        self.ks_bytes = self.ks.astype(np.int64).tobytes()
        self._key = self.k.tobytes() + self.kind.tobytes()

    def __len__(self) -> int:
        return len(self.k)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Columns) and self._key == other._key

    def __repr__(self) -> str:
        return f"Columns({len(self)} columns, {len(self.ks)} frequencies)"


@lru_cache(maxsize=8)
def paper_columns(d_model: int) -> Columns:
    """The interleaved layout of "Attention Is All You Need": ``sin`` of ``k = j // 2`` at even ``j``, else ``cos``."""
    j = np.arange(d_model)
    return Columns(j // 2, j % 2)
