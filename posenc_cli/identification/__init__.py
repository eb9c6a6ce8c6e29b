"""``posenc identify``: name the formula behind a table stored in a checkpoint, or say that none makes it.

:func:`identify` reads a file posenc reads (``.safetensors``, ``.npz``, ``.npy``, ``.h5``, ...; untrusted, through
:func:`posenc_cli.read.load`, within its memory limit) and tries its arrays: the one ``key`` names, or every
floating-point array of 1 to 4 axes whose size-1 axes leave at most two (a ``(1, 65, 256)`` ViT table, a
``(16, 1, 256)`` ALiBi bias). :func:`identify_array` does the same for one array in memory.

For each array, the parameters are first read off the values (:mod:`~posenc_cli.identification._readoff`: the
columns' frequencies from their angles, the base from their ratio, the positions' start and step, the amplitude,
a padding row, the layout), and each reading gives a few hypotheses, posenc commands with their options
(:mod:`~posenc_cli.identification._sinusoid` for every ``generate`` preset,
:mod:`~posenc_cli.identification._rope` for RoPE caches and ``inv_freq`` of every scaling mode,
:mod:`~posenc_cli.identification._others` for ALiBi and 2-D sincos). Each hypothesis's exact table is made by
posenc's own engine in float64 and compared entry by entry (:mod:`~posenc_cli.identification._compare`:
bit-identical, or within the framework's own float rounding); the first rows are compared before the whole table
is made, so a wrong reading costs little. No brute force over numbers: only the presets, the round numbers near
what was read, and the pre-training lengths configurations use are tried.

A **match** is a hypothesis whose exact table agrees with every entry. The report gives the command that
regenerates the table (and the manifest entry), its preset and parameters, and the largest errors; without a
match, the nearest hypotheses with where they depart (rows, columns), which also finds fine-tuned rows in an
otherwise sinusoidal table. A random (learned) table yields no reading at all.

Names read from the file (its keys) appear in the report only as data (JSON strings, escaped for the terminal by
the CLI); the command and the manifest entry hold only posenc's own names and numbers.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import decode
from ..errors import FormatError, SpecError
from ..read import PathLike, load, names
from ..table import RowSource
from ._compare import ROUNDED_ONCE, Comparison, compare
from ._hypothesis import Hypothesis
from ._others import alibi_hypotheses, sincos2d_hypotheses
from ._readoff import resolution
from ._rope import rope_hypotheses
from ._sinusoid import sinusoid_hypotheses

__all__ = ["Candidate", "Identification", "TensorResult", "identify", "identify_array", "stored_values"]

#: Arrays larger than this many entries are not tried without ``key`` (a checkpoint's embedding matrices).
MAX_TRIED_ENTRIES = 1 << 26
_SAMPLE = 8  # rows compared before a whole table is made
_NEAREST = 3


@dataclass(frozen=True)
class Candidate:
    """One hypothesis, compared: the command that makes it and how the stored table departs from it."""

    hypothesis: Hypothesis
    comparison: Comparison
    command: str
    manifest: str

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
            return max(matched, key=lambda t: (_axes(t.shape) > 1, math.prod(t.shape)))
        if not self.tensors:
            return None
        return max(self.tensors, key=lambda t: (_axes(t.shape) > 1, bool(t.nearest), math.prod(t.shape)))

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


# ------------------------------------------------------------------------------------------------ the arrays
def _axes(shape: tuple[int, ...]) -> int:
    return sum(1 for n in shape if n != 1)


def _listing(keys: list[str]) -> str:
    shown = ", ".join(repr(k) for k in keys[:8])
    return shown + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")


def _squeezed(array: np.ndarray) -> np.ndarray | None:
    """The array without its size-1 axes if that leaves 1 or 2 axes and it holds floating-point values."""
    if array.dtype.kind != "f" or array.ndim > 4 or array.size < 2:
        return None
    squeezed = array.reshape([n for n in array.shape if n != 1])
    return squeezed if 1 <= squeezed.ndim <= 2 else None


def identify(source: PathLike, key: str | None = None, *, max_memory: int | None = None) -> Identification:
    """Identify the tables in the file ``source`` (only the array ``key`` when given).

    A file whose format lists its arrays without reading them (``.safetensors``: a model's hundreds of tensors) is
    read one array at a time, each within :data:`MAX_TRIED_BYTES` (and ``max_memory``): a large checkpoint is never
    read whole, and an array over that size (an embedding matrix), or one posenc cannot read, is passed over with a
    note. Other formats are read whole, within ``max_memory``, as :func:`posenc_cli.read.load` reads them.

    Raises :class:`~posenc_cli.errors.SpecError` (``param="key"``) for a ``key`` the file does not hold or an
    array that cannot be a positional table, :class:`~posenc_cli.errors.FormatError` for a file posenc cannot
    read.
    """
    path = os.fspath(source)
    listed = names(path)
    if key is not None and listed is not None and key not in listed:
        raise SpecError(f"{path!r} has no array {key!r}; it holds {_listing(listed)}", param="key")
    if key is None and listed is not None:
        return Identification(path, tuple(_each_listed(path, listed, max_memory)))
    table = load(path, max_memory=max_memory, part=key)
    arrays = table.arrays
    if key is not None and key not in arrays and key.lstrip("/") in arrays:  # an HDF5 path from the root
        key = key.lstrip("/")
    if key is not None:
        if key not in arrays:
            raise SpecError(f"{path!r} has no array {key!r}; it holds {_listing(list(arrays))}", param="key")
        arrays = {key: arrays[key]}
    results = []
    for name, array in arrays.items():
        stored = stored_values(array, table.params)
        if key is None and stored.size > MAX_TRIED_ENTRIES:
            continue
        if _squeezed(stored) is None:
            if key is not None:
                raise SpecError(
                    f"array {key!r} is {stored.dtype.name} of shape {tuple(stored.shape)}: a positional table is "
                    "floating-point with one or two axes besides axes of size 1",
                    param="key",
                )
            continue
        results.append(_identify_one(stored, name))
    return Identification(path, tuple(results))


#: The most bytes one array of a listed checkpoint may take to be tried without ``key``.
MAX_TRIED_BYTES = 1 << 28


def _each_listed(path: str, listed: list[str], max_memory: int | None) -> Iterator[TensorResult]:
    """Each array of a file that lists them, read alone within :data:`MAX_TRIED_BYTES`."""
    cap = MAX_TRIED_BYTES if max_memory is None else min(max_memory, MAX_TRIED_BYTES)
    for name in listed:
        try:
            table = load(path, max_memory=cap, part=name)
        except FormatError as exc:  # over the cap, or an array posenc cannot read: said, not tried
            yield TensorResult(name, (), "unread", None, (), f"not tried: {exc}")
            continue
        stored = stored_values(table.arrays[name], table.params)
        if stored.size <= MAX_TRIED_ENTRIES and _squeezed(stored) is not None:
            yield _identify_one(stored, name)


def stored_values(array: Any, params: Any) -> np.ndarray:
    """The array as stored, and a bfloat16 table posenc wrote (its bit patterns, ``uint16``) as its float32 values."""
    stored = np.asarray(array) if isinstance(array, RowSource) else array
    if params.get("dtype") == "bfloat16" and stored.dtype == np.uint16:
        return decode(stored, params).astype(np.float32)  # exact: every bfloat16 value is a float32 one
    return stored


def identify_array(array: np.ndarray, *, key: str | None = None) -> TensorResult:
    """Identify one array in memory (floating-point, 1 or 2 axes besides axes of size 1)."""
    stored = np.asarray(array)
    if _squeezed(stored) is None:
        raise SpecError(
            f"a positional table is floating-point with one or two axes besides axes of size 1, got "
            f"{stored.dtype.name} of shape {tuple(stored.shape)}",
            param="array",
        )
    return _identify_one(stored, key)


def _hypotheses(values: np.ndarray) -> Iterator[Hypothesis]:
    """Every family's readings, in turn (a match stops the search before the next family reads anything)."""
    yield from alibi_hypotheses(values)
    yield from rope_hypotheses(values)
    if values.ndim == 2:
        yield from sinusoid_hypotheses(values)
        yield from sincos2d_hypotheses(values)


def _identify_one(stored: np.ndarray, key: str | None) -> TensorResult:
    squeezed = _squeezed(stored)
    assert squeezed is not None
    values = squeezed.astype(np.float64)
    if not np.isfinite(values).all():
        return TensorResult(key, tuple(stored.shape), stored.dtype.name, None, (), "holds NaN or infinite values")
    evaluated: list[Candidate] = []
    for hypothesis in _hypotheses(values):
        candidate = _evaluate(hypothesis, squeezed)
        if candidate is None:
            continue
        if candidate.matched:
            return TensorResult(key, tuple(stored.shape), stored.dtype.name, candidate)
        evaluated.append(candidate)
    evaluated.sort(key=lambda c: (c.comparison.departures / max(c.comparison.compared, 1), c.comparison.worst_ratio))
    note = None if evaluated else "no formula posenc knows reads off these values (a learned table?)"
    return TensorResult(key, tuple(stored.shape), stored.dtype.name, None, tuple(evaluated[:_NEAREST]), note)


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


def _evaluate(hypothesis: Hypothesis, stored: np.ndarray) -> Candidate | None:
    """The hypothesis compared with ``stored`` (squeezed); ``None`` when posenc refuses its parameters. A table
    stored as float16 or float64 is named with that ``--dtype``."""
    if stored.dtype.name in ("float16", "float64"):
        hypothesis = dataclasses.replace(hypothesis, values={**hypothesis.values, "dtype": stored.dtype.name})
    try:
        exact_source = _make(hypothesis, "float64", lazy=True)
    except SpecError:
        return None
    angle = hypothesis.angle() if hypothesis.angle is not None else None
    narrow = _narrow(stored)
    if isinstance(exact_source, RowSource) and stored.ndim == 2 and stored.shape[0] > 4 * _SAMPLE:
        head = np.asarray(exact_source[:_SAMPLE])
        if head.shape != stored[:_SAMPLE].shape:
            return None
        early = compare(
            stored[:_SAMPLE],
            head,
            angle=angle[:_SAMPLE] if angle is not None else None,
            amplitude=hypothesis.amplitude,
            narrow=narrow,  # (only how far off counts here: the stored type's rounding is the yardstick)
        )
        if early.worst_ratio > 1e3:  # far off already in the first rows: its stats on those rows are enough
            return _candidate(hypothesis, early)
    exact = _reshaped(np.asarray(exact_source), stored.shape)
    if exact is None:
        return None
    comparison = compare(stored, exact, angle=angle, amplitude=hypothesis.amplitude)
    if comparison.identical >= ROUNDED_ONCE and stored.dtype != np.float64:  # bit-identity: on the stored type
        rounded = _reshaped(np.asarray(_make(hypothesis, stored.dtype.name, lazy=False)), stored.shape)
        comparison = compare(stored, exact, angle=angle, amplitude=hypothesis.amplitude, rounded=rounded)
    if narrow is not None and not comparison.matched:  # float32 holding bfloat16 or float16 values: in that type
        hypothesis = dataclasses.replace(hypothesis, values={**hypothesis.values, "dtype": narrow})
        made = _make(hypothesis, narrow, lazy=False)
        rounded = _reshaped(decode(np.asarray(made), {"dtype": narrow}).astype(stored.dtype), stored.shape)
        comparison = compare(stored, exact, angle=angle, amplitude=hypothesis.amplitude, rounded=rounded, narrow=narrow)
    return _candidate(hypothesis, comparison)


def _narrow(stored: np.ndarray) -> str | None:
    """``bfloat16`` or ``float16`` when every value of a float32 array is one of that type (a table rounded to
    it, then widened to be saved), with at least 64 entries (a few round values prove nothing)."""
    if stored.dtype != np.float32 or stored.size < 64:
        return None
    return {2.0**-8: "bfloat16", 2.0**-11: "float16"}.get(resolution(stored.astype(np.float64)))


def _candidate(hypothesis: Hypothesis, comparison: Comparison) -> Candidate:
    from ..kinds import KINDS
    from ..params import command_line, toml_value

    kind = KINDS[hypothesis.command]
    values = dict(hypothesis.values)
    several = kind.command in ("rope", "alibi")
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
