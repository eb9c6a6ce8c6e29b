"""What ``identify`` reports: each hypothesis compared (:class:`Candidate`), each array's outcome
(:class:`TensorResult`) and the file's (:class:`Identification`), with their JSON forms."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ._compare import Comparison
from ._hypothesis import Hypothesis

__all__ = ["Candidate", "Identification", "TensorResult"]


@dataclass(frozen=True)
class Candidate:
    """One hypothesis, compared: the command that makes it and how the stored table departs from it."""

    hypothesis: Hypothesis
    comparison: Comparison
    command: str
    manifest: str
    #: How close the stored table is to each arithmetic's table of these parameters (``exact``, ``framework``,
    #: ``ggml``: share bit-identical, largest errors), when others were tried (:mod:`._arithmetic`).
    arithmetics: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def matched(self) -> bool:
        return self.comparison.matched

    def to_json(self) -> dict[str, Any]:
        h = self.hypothesis
        params = {k: v for k, v in h.values.items() if k != "preset"}
        return {
            "command": self.command,
            "manifest": self.manifest,
            "kind": h.command,
            "array": h.array,
            "preset": h.preset,
            "equivalent_presets": list(h.equivalent),
            "params": params,
            **self.comparison.summary(),
            "arithmetics": self.arithmetics,
        }


@dataclass(frozen=True)
class TensorResult:
    """What one array of the file is: its best match, or the nearest candidates."""

    key: str | None
    shape: tuple[int, ...]
    dtype: str
    match: Candidate | None
    nearest: tuple[Candidate, ...] = ()
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "match": self.match.to_json() if self.match else None,
            "nearest": [c.to_json() for c in self.nearest],
            "note": self.note,
        }


def axes(shape: tuple[int, ...]) -> int:
    """The axes of ``shape`` longer than 1."""
    return sum(1 for n in shape if n != 1)


@dataclass(frozen=True)
class Identification:
    """The arrays tried and, for each, its match or nearest candidates; ``match`` is the best of all."""

    source: str | None
    tensors: tuple[TensorResult, ...] = field(default_factory=tuple)

    @property
    def best(self) -> TensorResult | None:
        """The array whose match is best (the largest table among those matched), else the first tried."""
        matched = [t for t in self.tensors if t.match is not None]
        if matched:
            return max(matched, key=lambda t: (axes(t.shape) > 1, math.prod(t.shape)))
        if not self.tensors:
            return None
        return max(self.tensors, key=lambda t: (axes(t.shape) > 1, bool(t.nearest), math.prod(t.shape)))

    @property
    def match(self) -> Candidate | None:
        best = self.best
        return best.match if best else None

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "file": self.source,
            "key": best.key if best else None,
            "match": self.match.to_json() if self.match else None,
            "nearest": [c.to_json() for c in best.nearest] if best and not best.match else [],
            "tensors": [t.to_json() for t in self.tensors],
        }
