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
:mod:`~posenc_cli.identification._others` for ALiBi, :mod:`~posenc_cli.identification._vision` for 2-D sincos of
every layout and DETR's sine embedding, :mod:`~posenc_cli.identification._scaled` for the sincos tables at scaled
or offset positions (DiT and PixArt off their base size, SD3's crop, CogVideoX's 3-D table),
:mod:`~posenc_cli.identification._axial` for the axial RoPE caches of vision towers, FLUX and video models).
Each hypothesis's exact table is made by posenc's own engine in float64 and compared entry by entry
(:mod:`~posenc_cli.identification._compare`: bit-identical, or within the framework's own float rounding). No brute
force over numbers: only the presets, the round numbers near what was read, and the pre-training lengths
configurations use are tried.

The work is bounded by the table, never by what its values or its file claim
(:mod:`~posenc_cli.identification._search`): a constant table, or one whose rows are all the same, is answered
without any reading; each hypothesis is compared on a sample of rows before its whole table is made; and the
entries made and compared are paid from a budget of :data:`WORK_PER_ENTRY` per entry of the arrays tried (plus
:data:`WORK_FLOOR` per file). :class:`Identifier` identifies the arrays of one file within one budget, and an array
whose values an earlier one had only once.

A **match** is a hypothesis whose exact table agrees with every entry. The report gives the command that
regenerates the table (and the manifest entry), its preset and parameters, and the largest errors; without a
match, the nearest hypotheses with where they depart (rows, columns), which also finds fine-tuned rows in an
otherwise sinusoidal table. A random (learned) table yields no reading at all.

Names read from the file (its keys) appear in the report only as data (JSON strings, escaped for the terminal by
the CLI); the command and the manifest entry hold only posenc's own names and numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..dtypes import decode
from ..errors import FormatError, SpecError
from ..read import PathLike, load, load_each, names
from ..table import RowSource
from ._report import Candidate, Identification, TensorResult
from ._search import WHOLES, WORK_FLOOR, WORK_PER_ENTRY, Work, search

__all__ = [
    "WHOLES",
    "WORK_FLOOR",
    "WORK_PER_ENTRY",
    "Candidate",
    "Identification",
    "Identifier",
    "TensorResult",
    "identify",
    "identify_array",
    "stored_values",
]

#: Arrays larger than this many entries are not tried without ``key`` (a checkpoint's embedding matrices).
MAX_TRIED_ENTRIES = 1 << 26


# ------------------------------------------------------------------------------------------------ the arrays
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
    identifier = Identifier()
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
        results.append(identifier.identify(stored, name))
    return Identification(path, tuple(results))


#: The most bytes one array of a listed checkpoint may take to be tried without ``key``.
MAX_TRIED_BYTES = 1 << 28


def _each_listed(path: str, listed: list[str], max_memory: int | None) -> Iterator[TensorResult]:
    """Each array of a file that lists them, read alone within :data:`MAX_TRIED_BYTES` (the file's header read
    once for all of them: :func:`~posenc_cli.read.load_each`)."""
    cap = MAX_TRIED_BYTES if max_memory is None else min(max_memory, MAX_TRIED_BYTES)
    identifier = Identifier()
    for name, table in load_each(path, listed, max_memory=cap):
        if isinstance(table, FormatError):  # over the cap, or an array posenc cannot read: said, not tried
            yield TensorResult(name, (), "unread", None, (), f"not tried: {table}")
            continue
        stored = stored_values(table.arrays[name], table.params)
        if stored.size <= MAX_TRIED_ENTRIES and _squeezed(stored) is not None:
            yield identifier.identify(stored, name)


def stored_values(array: Any, params: Any) -> np.ndarray:
    """The array as stored, and a bfloat16 table posenc wrote (its bit patterns, ``uint16``) as its float32 values."""
    stored = np.asarray(array) if isinstance(array, RowSource) else array
    if params.get("dtype") == "bfloat16" and stored.dtype == np.uint16:
        return decode(stored, params).astype(np.float32)  # exact: every bfloat16 value is a float32 one
    return stored


def identify_array(array: np.ndarray, *, key: str | None = None) -> TensorResult:
    """Identify one array in memory (floating-point, 1 or 2 axes besides axes of size 1), within
    :data:`WORK_PER_ENTRY` entries of work per entry plus :data:`WORK_FLOOR`.

    Examples
    --------
    >>> identify_array(np.zeros((4096, 8), np.float32)).note
    'every entry is 0: a constant table has no position to read off'
    """
    return Identifier().identify(array, key=key)


class Identifier:
    """Identifies the arrays of one file: all of them within one :class:`~posenc_cli.identification._search.Work`
    budget (:data:`WORK_PER_ENTRY` entries of work per entry of the arrays, plus :data:`WORK_FLOOR` once), and an
    array with the values of one identified before (the same type, shape and bytes: a model's tied or copied
    tables, a file of many copies) only once, its result given again with a note naming the first.

    ``work.spent`` says how many entries of work the arrays cost.
    """

    def __init__(self) -> None:
        self.work = Work()
        self._seen: dict[tuple[str, tuple[int, ...], bytes], TensorResult] = {}

    def identify(self, array: np.ndarray, key: str | None = None) -> TensorResult:
        """Identify ``array`` (floating-point, 1 or 2 axes besides axes of size 1); ``SpecError`` otherwise."""
        stored = np.asarray(array)
        if _squeezed(stored) is None:
            raise SpecError(
                f"a positional table is floating-point with one or two axes besides axes of size 1, got "
                f"{stored.dtype.name} of shape {tuple(stored.shape)}",
                param="array",
            )
        digest = (stored.dtype.str, tuple(stored.shape), hashlib.sha256(np.ascontiguousarray(stored).data).digest())
        first = self._seen.get(digest)
        if first is not None:
            said = f"the same values as {first.key!r}" + (f"; {first.note}" if first.note else "")
            return dataclasses.replace(first, key=key, note=said)
        self.work.grant(stored.size)
        result = search(stored, key, self.work)
        self._seen[digest] = result
        return result
