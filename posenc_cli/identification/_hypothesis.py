"""One hypothesis about a stored table: the posenc command (and keywords) whose exact table it would be."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Hypothesis"]


@dataclass(frozen=True)
class Hypothesis:
    """``command`` (a key of :data:`posenc_cli.kinds.KINDS`) with the maker's keywords ``values`` would make
    the stored table as its array ``array``.

    ``angle`` gives the entries' sine/cosine arguments at the rows it is given (row numbers of the table: every
    row, or a sample of them; approximate, they only scale the allowed error), or is ``None`` for the relative rule
    (ALiBi); ``amplitude`` scales the allowed error too. ``overrides`` counts the options beyond the command's
    required ones and its preset: the simplest explanation is reported first. ``family`` names the reading that
    produced it (``sinusoid``, ``rope``, ``alibi``, ``sincos2d``).
    """

    command: str
    values: dict[str, Any]
    array: str
    family: str
    amplitude: float = 1.0
    overrides: int = 0
    angle: Callable[[np.ndarray], np.ndarray] | None = field(default=None, compare=False)
    #: Other presets that name the same exact table with as many overrides (``ddpm``, ``whisper`` and
    #: ``tensor2tensor`` share one for an even width): the table cannot tell them apart.
    equivalent: tuple[str, ...] = field(default=(), compare=False)
    #: For a kind whose tables are made whole (not row by row): a hypothesis whose table is this one's first rows,
    #: at least the given count of them (2-D sincos: a grid of fewer rows), so that a sample costs only those rows.
    head: Callable[[int], Hypothesis] | None = field(default=None, compare=False)
    #: The columns (RoPE: frequencies) its table is made with, when that is not the stored table's last axis (a
    #: runtime's fused 1-D table): what a step's per-column cost counts (:data:`~._search.COLUMN_STEP`).
    columns: int | None = field(default=None, compare=False)

    @property
    def preset(self) -> str | None:
        """The preset the command names, if any."""
        preset = self.values.get("preset")
        return str(preset) if preset is not None else None

    def key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """What makes two hypotheses the same table request (for removing duplicates)."""
        return self.command, self.array, tuple(sorted((k, repr(v)) for k, v in self.values.items()))
