"""Searching one array for the formula that made it, within a bound on the work.

Work is counted in table entries: every entry a hypothesis's table is made with (in float64, or in the stored type
for a bit-identity claim) and every entry compared with the stored table. Reading the parameters off the values
costs a fixed number of passes over the table besides (:mod:`._readoff`, :func:`._others.sincos2d_hypotheses`),
never a number of passes that the values choose (a row count's divisors).

1. **No reading** for a table that holds NaN or infinite values, whose entries are all equal, or whose rows are
   all the same: there is no position to read off, so no hypothesis is made. A zero table costs one pass.
2. **A sample first.** A hypothesis about a table of more than :data:`SAMPLED_FROM` rows is compared on
   :data:`SAMPLE_BLOCKS` blocks of :data:`SAMPLE_BLOCK` rows spread over the table (its rows made alone, for the
   kinds made row by row; the first rows of a smaller grid for 2-D sincos), under the most lenient rule a match
   can meet: the float rule of the stored type, or of the narrower type all its values belong to. Beyond
   :data:`SCREEN` times that rule on the sample it is no match, its sample comparison is its report, and its whole
   table is never made.
3. **The whole table** of a hypothesis within the rule on its sample is made and compared with every entry
   (:mod:`._compare`); the first match ends the search. One array costs at most :data:`WHOLES` whole comparisons
   after a sample (a table of :data:`SAMPLED_FROM` rows or fewer is its own sample, each comparison a whole one).
4. **The nearest.** Without a match, the nearest hypotheses (up to :data:`NEAREST`) compared on a sample only and
   within :data:`NEAR` times the rule there are compared whole while the budget allows, so that their departures
   name the rows and columns of the whole table.

Every step is paid from a :class:`Work` budget before it is taken: its entries, and a fixed :data:`STEP` (plus
:data:`COLUMN_STEP` per column, RoPE's) for what a step costs besides them, which a tiny table's entries do not
show. The budget is :data:`WORK_PER_ENTRY` entries for each entry of the arrays searched, plus :data:`WORK_FLOOR`
once (a small table's few dozen steps). A step the budget cannot pay is not taken, and the report says that the
search stopped. So one array costs at most ``WORK_PER_ENTRY * size + WORK_FLOOR`` entries of work, and the arrays
of one file (one :class:`Work`) at most ``WORK_PER_ENTRY`` entries per entry they hold, plus ``WORK_FLOOR``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..dtypes import decode
from ..errors import SpecError
from ..table import RowSource
from ._arithmetic import MADE_COST, closeness, nearly, phrase, variants
from ._compare import ROUNDED_ONCE, Comparison, compare
from ._hypothesis import Hypothesis
from ._readoff import resolution
from ._report import Candidate, TensorResult

__all__ = ["WHOLES", "WORK_FLOOR", "WORK_PER_ENTRY", "Spent", "Work", "search"]

#: Entries of work (made or compared) an array may cost per entry it holds.
WORK_PER_ENTRY = 16
#: Entries of work granted once per search (per file): a small table's few dozen hypotheses (LongRoPE's, read last),
#: each a step with its fixed cost.
WORK_FLOOR = 1 << 26
#: The fixed cost of a step (a sample or a whole comparison), in entries: making a table's parameters and the
#: comparison's reductions take about as long as numpy takes to make and compare this many entries (5 ms).
STEP = 1 << 18
#: And per column of the table, for the kinds whose columns cost more than their entries: RoPE's inverse
#: frequencies are exact rationals, about 0.15 ms a frequency.
COLUMN_STEP = {"rope": 1 << 13}
#: The most whole comparisons one array may cost (a hypothesis within the rule on its sample, or a nearest one for
#: the report): a genuine table is matched at its first or second.
WHOLES = 4
#: The most entries of work one whole comparison costs per entry of the table: the float64 table, the stored type's
#: (a bit-identity claim) and the narrower type's (a float32 array of bfloat16 values), each made and compared.
WHOLE = 6
SAMPLE_BLOCK = 8  # rows
SAMPLE_BLOCKS = 4
#: Tables of more rows than this are sampled first; a shorter one is its own sample.
SAMPLED_FROM = 2 * SAMPLE_BLOCK * SAMPLE_BLOCKS
#: A hypothesis beyond this many times the lenient rule on its sample is no match. Above 1: the rule on the sample
#: rounds the exact values to the stored type before scaling them to a narrower type's unit, which may be half the
#: unit of the value rounded to that type (just below a power of two).
SCREEN = 2.0
#: Candidates within this many times the rule on their sample are near: worth a whole comparison for the report.
NEAR = 1e3
NEAREST = 3


class Work:
    """The entries of work a search may still spend (see the module docstring); ``spent`` counts what it did."""

    def __init__(self) -> None:
        self.left = WORK_FLOOR
        self.spent = 0

    def grant(self, entries: int) -> None:
        """An array of ``entries`` entries joins the search: :data:`WORK_PER_ENTRY` more entries for each."""
        self.left += WORK_PER_ENTRY * entries

    def pay(self, entries: int) -> None:
        """Take ``entries``, which the caller checked were left."""
        self.left -= entries
        self.spent += entries


class Spent(Exception):
    """The next step of a search is beyond its budget: ``why`` says which, ``candidate`` is what the step before it
    found (a sample within the rule whose whole comparison could not be paid for)."""

    def __init__(self, why: str, candidate: Candidate | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.candidate = candidate


def _blocks(table: np.ndarray) -> tuple[int, ...]:
    if table.ndim != 2 or table.shape[0] <= SAMPLED_FROM:
        return ()
    starts = np.linspace(0, table.shape[0] - SAMPLE_BLOCK, SAMPLE_BLOCKS).astype(int)
    return tuple(int(s) for s in np.unique(starts))


#: The largest magnitudes a table read may have: every kind's tables at any amplitude a model uses lie far within
#: (a sinusoid of amplitude 1, a RoPE cache's attention scaling, an ALiBi bias over a million positions), and the
#: readings' arithmetic (powers, exponentials of what was read) stays within float64's range.
SCALES = (2.0**-64, 2.0**64)


def _trivial(values: np.ndarray) -> str | None:
    """Why ``values`` (float64) need no reading at all, or ``None``."""
    if not np.isfinite(values).all():
        return "holds NaN or infinite values"
    flat = values.reshape(-1)
    if (flat == flat[0]).all():
        return f"every entry is {float(flat[0]):.9g}: a constant table has no position to read off"
    largest = float(np.max(np.abs(flat)))
    if not SCALES[0] <= largest <= SCALES[1]:
        return f"its largest magnitude is {largest:.3g}: identify reads tables whose largest is from 2**-64 to 2**64"
    if values.ndim == 2 and (values == values[0]).all():
        return "every row holds the same values: a table that is the same at every position has none to read off"
    return None


def _hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every kind's readings, in turn, in the order of its reader (:attr:`posenc_cli.kinds.Kind.identify`): a match
    stops the search before the next kind reads anything."""
    import importlib

    from ..kinds import KINDS

    for _, where in sorted(kind.identify for kind in KINDS.values() if kind.identify is not None):
        module, function = where.split(":")
        yield from getattr(importlib.import_module(f"{__package__}.{module}"), function)(values)


def _nearness(candidate: Candidate) -> tuple[float, float]:
    c = candidate.comparison
    return c.departures / max(c.compared, 1), c.worst_ratio


def search(stored: np.ndarray, key: str | None, work: Work) -> TensorResult:
    """Identify ``stored`` (floating-point, 1 or 2 axes besides axes of size 1), paying every step from ``work``."""
    shape, dtype = tuple(int(n) for n in stored.shape), stored.dtype.name
    table = stored.reshape([n for n in stored.shape if n != 1])
    values = table.astype(np.float64)
    trivial = _trivial(values)
    if trivial is not None:
        return TensorResult(key, shape, dtype, None, (), trivial)
    if table.dtype == np.float16 and table.size >= NARROW_FROM:
        # a float16 table is a float32 pipeline's rounded once more (a model saved with .half()), or a table
        # rounded once: compared as the float32 array of float16 values it also is, under the narrow rule
        table = table.astype(np.float32)
    state = _Search(table, values, work)
    evaluated: list[Candidate] = []
    stopped = None
    try:
        for hypothesis in _hypotheses(values):
            candidate = state.evaluate(hypothesis)
            if candidate is None:
                continue
            if candidate.matched:
                return TensorResult(key, shape, dtype, state.arithmetic(candidate))
            evaluated.append(candidate)
    except Spent as spent:
        stopped = spent.why
        if spent.candidate is not None:
            evaluated.append(spent.candidate)
    evaluated.sort(key=_nearness)
    for i, candidate in enumerate(evaluated[:NEAREST]):  # the report's nearest, on the whole table if affordable
        c = candidate.comparison
        if c.compared == table.size or c.worst_ratio > NEAR:
            continue
        try:
            whole = state.whole(candidate.hypothesis)
        except Spent:
            break
        if whole is not None and whole.matched:  # (the whole table's rules are stricter than the sample's)
            return TensorResult(key, shape, dtype, state.arithmetic(whole))
        if whole is not None:
            evaluated[i] = whole
    evaluated.sort(key=_nearness)
    note = None
    if stopped is not None:
        note = f"the search stopped after {len(evaluated)} readings: {stopped} (docs/identify.md)"
    elif not evaluated:
        note = "no formula posenc knows reads off these values (a learned table?)"
    return TensorResult(key, shape, dtype, None, tuple(evaluated[:NEAREST]), note)


def _make(hypothesis: Hypothesis, dtype: str, lazy: bool) -> Any:
    from ..kinds import KINDS

    kind = KINDS[hypothesis.command]
    values = {**hypothesis.values, "dtype": dtype}
    if kind.lazy:
        values["lazy"] = lazy
    return kind.make(**values).arrays[hypothesis.array]


def _reshaped(exact: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    if exact.shape == shape:
        return exact
    if exact.size == math.prod(shape):
        return exact.reshape(shape)
    return None


class _Search:
    """One array's search: the stored table (size-1 axes removed, its own type), the narrower type its values
    belong to, the first row of each block of its sample (none: the table is its own sample), the budget, and the
    whole comparisons made so far."""

    def __init__(self, table: np.ndarray, values: np.ndarray, work: Work) -> None:
        self.table = table
        self.narrow = _narrow(table, values)
        self.blocks = _blocks(table)
        self.work = work
        self.wholes = 0

    def _step(self, hypothesis: Hypothesis, entries: int) -> None:
        """Pay a step's fixed cost, once the budget is known to pay it and ``entries`` more besides."""
        columns = hypothesis.columns if hypothesis.columns is not None else self.table.shape[-1]
        fixed = STEP + COLUMN_STEP.get(hypothesis.command, 0) * columns
        if fixed + entries > self.work.left:
            raise Spent(f"the work budget ({WORK_PER_ENTRY} entries per entry of the table) is spent")
        self.work.pay(fixed)

    def evaluate(self, hypothesis: Hypothesis) -> Candidate | None:
        """The hypothesis compared with the stored table: on its sample, and whole if the sample allows a match;
        ``None`` when posenc refuses its parameters or its table has another shape. A table stored as float16 or
        float64 is named with that ``--dtype``."""
        if self.table.dtype.name in ("float16", "float64"):
            hypothesis = dataclasses.replace(hypothesis, values={**hypothesis.values, "dtype": self.table.dtype.name})
        sample = None
        if self.blocks:
            sample = self.sample(hypothesis)
            if sample is None:
                return None
            if sample.worst_ratio > SCREEN:
                return _candidate(hypothesis, sample)
        try:
            return self.whole(hypothesis, counted=bool(self.blocks))
        except Spent as spent:  # the sample is all that could be paid for: it goes into the report
            raise Spent(spent.why, _candidate(hypothesis, sample) if sample is not None else None) from None

    def sample(self, hypothesis: Hypothesis) -> Comparison | None:
        """The hypothesis compared with the stored table on the sample rows, under the lenient rule."""
        stored, work = self.table, self.work
        n, d = stored.shape
        rows = np.concatenate([np.arange(b, b + SAMPLE_BLOCK) for b in self.blocks])
        self._step(hypothesis, stored.size + 2 * len(rows) * d)  # at most: a whole table made (ALiBi), the rows
        try:
            if hypothesis.head is not None:
                head = np.asarray(_make(hypothesis.head(len(rows)), "float64", lazy=False))
                work.pay(head.size)
                rows = np.arange(min(len(rows), len(head)))
                exact = head[: len(rows)]
            else:
                source = _make(hypothesis, "float64", lazy=True)
                if isinstance(source, RowSource):
                    if source.shape != stored.shape:
                        return None
                    exact = np.concatenate([source[b : b + SAMPLE_BLOCK] for b in self.blocks])
                    work.pay(exact.size)
                else:
                    made = np.asarray(source)
                    work.pay(made.size)
                    whole = _reshaped(made, stored.shape)
                    if whole is None:
                        return None
                    exact = whole[rows]
        except SpecError:
            return None
        if exact.shape != (len(rows), d):
            return None
        work.pay(exact.size)
        angle, amplitude, narrow = hypothesis.angle, hypothesis.amplitude, self.narrow
        return compare(stored[rows], exact, angle=angle, amplitude=amplitude, narrow=narrow, screen=True, at=rows)

    def whole(self, hypothesis: Hypothesis, counted: bool = True) -> Candidate | None:
        """The hypothesis compared with every entry; bit-identity on the stored type, and the narrower type's rule
        for a float32 table of bfloat16 or float16 values. ``counted``: one of the :data:`WHOLES` (a table short
        enough to be its own sample is compared whole instead of on a sample: that is not counted)."""
        stored, work = self.table, self.work
        size = stored.size
        if counted and self.wholes >= WHOLES:
            raise Spent(f"at most {WHOLES} readings are compared with the whole table")
        self._step(hypothesis, WHOLE * size)
        self.wholes += counted
        try:
            made = np.asarray(_make(hypothesis, "float64", lazy=True))
        except SpecError:
            return None
        work.pay(made.size)
        exact = _reshaped(made, stored.shape)
        if exact is None:
            return None
        angle, amplitude = hypothesis.angle, hypothesis.amplitude
        work.pay(size)
        comparison = compare(stored, exact, angle=angle, amplitude=amplitude)
        if comparison.identical >= ROUNDED_ONCE and stored.dtype != np.float64:  # bit-identity: on the stored type
            rounded = _reshaped(np.asarray(_make(hypothesis, stored.dtype.name, lazy=False)), stored.shape)
            work.pay(2 * size)
            comparison = compare(stored, exact, angle=angle, amplitude=amplitude, rounded=rounded)
        narrow = self.narrow
        if narrow is not None and not comparison.matched:  # float32 holding bfloat16 or float16 values: in that type
            hypothesis = dataclasses.replace(hypothesis, values={**hypothesis.values, "dtype": narrow})
            made = np.asarray(_make(hypothesis, narrow, lazy=False))
            rounded = _reshaped(decode(made, {"dtype": narrow}).astype(stored.dtype), stored.shape)
            work.pay(2 * size)
            comparison = compare(stored, exact, angle=angle, amplitude=amplitude, rounded=rounded, narrow=narrow)
        return _candidate(hypothesis, comparison)

    def arithmetic(self, match: Candidate) -> Candidate:
        """``match`` (an exact hypothesis within float32 rounding of a float32 table) named with the framework
        arithmetic whose table the stored one nearly is (:mod:`._arithmetic`), or as it is. Each framework table
        costs a step, :data:`~._arithmetic.MADE_COST` entries of work per entry made and one per entry compared;
        one the budget cannot pay is not made (the match stays exact)."""
        stored, exact = self.table, match.comparison
        if (
            stored.dtype != np.float32
            or self.narrow is not None
            or exact.agreement != f"within {stored.dtype.name} rounding"
        ):
            return match
        size = stored.size
        tried: list[tuple[Hypothesis, Comparison]] = []
        for hypothesis in variants(match.hypothesis):
            try:
                self._step(hypothesis, (MADE_COST + 1) * size)
            except Spent:
                break
            try:
                made = np.asarray(_make(hypothesis, stored.dtype.name, lazy=False))
            except SpecError:  # an arithmetic the parameters refuse (ggml: llama3, LongRoPE)
                continue
            self.work.pay(MADE_COST * made.size)
            table = _reshaped(made, stored.shape)
            if table is None:
                continue
            self.work.pay(size)
            angle, amplitude = hypothesis.angle, hypothesis.amplitude
            tried.append(
                (hypothesis, compare(stored, table.astype(np.float64), angle=angle, amplitude=amplitude, rounded=table))
            )
        if not tried:
            return match
        best, comparison = max(tried, key=lambda pair: pair[1].identical)
        name = str(best.values["arithmetic"])
        report = {"exact": closeness(exact)}
        for hypothesis, other in tried:  # the closest table of each arithmetic
            mode = str(hypothesis.values["arithmetic"])
            if mode not in report or other.identical > report[mode]["bit_identical_share"]:
                report[mode] = closeness(other)
        if not nearly(comparison, exact):
            return dataclasses.replace(match, arithmetics=report)
        said = f"{phrase(name, comparison)} (docs/identify.md); {phrase('exact', exact)}"
        # the rule that matched is nearly()'s: entries a unit or more off are the platform's, not departures
        comparison = dataclasses.replace(comparison, agreement=said, matched=True, departures=0, rows=(), columns=())
        ties = (h.preset for h, c in tried if c.identical == comparison.identical and h.values["arithmetic"] == name)
        best = dataclasses.replace(best, equivalent=tuple(p for p in dict.fromkeys(ties) if p and p != best.preset))
        named = _candidate(best, comparison)
        return dataclasses.replace(named, arithmetics=report)


#: The fewest entries whose values all being of a narrower type say the table was rounded to it.
NARROW_FROM = 64


def _narrow(stored: np.ndarray, values: np.ndarray) -> str | None:
    """``bfloat16`` or ``float16`` when every value of a float32 array is one of that type (a table rounded to
    it, then widened to be saved), with at least 64 entries (a few round values prove nothing)."""
    if stored.dtype != np.float32 or stored.size < NARROW_FROM:
        return None
    return {2.0**-8: "bfloat16", 2.0**-11: "float16"}.get(resolution(values))


def _candidate(hypothesis: Hypothesis, comparison: Comparison) -> Candidate:
    from ..kinds import KINDS
    from ..params import command_line, toml_value

    kind = KINDS[hypothesis.command]
    values = dict(hypothesis.values)
    several = kind.command in ("rope", "alibi", "axial")
    output = f"{hypothesis.array}.npy"
    given = [(p, values[p.name]) for p in kind.inputs if p.name in values]
    part = [p for p in kind.keys if p.name == "part"]
    if several and part:
        given.append((part[0], hypothesis.array))
    command = command_line(kind.command, [], given, output)
    lines = ["[[table]]", f'command = "{kind.command}"', f'output = "{output}"']
    lines += [f"{name} = {toml_value(value)}" for name, value in values.items()]
    if several:
        lines.append(f'part = "{hypothesis.array}"')
    return Candidate(hypothesis, comparison, command, "\n".join(lines))
