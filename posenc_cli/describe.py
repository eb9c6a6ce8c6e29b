"""Describe a table: what a file holds, as ``posenc inspect`` shows it.

- :func:`describe`: the kind, the parameters and, per array, shape, element type, real min and max, the SHA-256
  of the stored bytes and their size: the facts ``posenc inspect`` shows (``--json`` prints the dict as it is).

Whether a file holds exactly what its parameters give is :mod:`posenc_cli.verify` (whose names this module
re-exports, where they were first published). Every array is read in row blocks, so a lazy table is never computed
whole, and an array a file holds (:func:`posenc_cli.read.opened`) is read a block at a time: the memory ``describe``
takes is a block, not the table (see :func:`describe`). No printing, no click, no rich: the CLI formats what this
returns.

Until issue #26 this module was ``posenc_cli.inspect``, a name that shadowed the standard library's :mod:`inspect`
for any script run from inside the package: such a script failed at ``import dataclasses``, which imports it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .dtypes import decode, element_of
from .formats._blocks import flat_blocks, raw_bytes, row_blocks
from .table import Array, FileArray, Table
from .verify import Mismatch, VerifyResult, parse_settings, regenerate, verify

__all__ = ["IDENTIFY_ENTRIES", "Mismatch", "VerifyResult", "describe", "parse_settings", "regenerate", "verify"]


# ------------------------------------------------------------------------------------------------- describe
def describe(table: Table) -> dict[str, Any]:
    """The facts of a table: kind, parameters and, per array, what it holds.

    Parameters
    ----------
    table : Table
        Any table, as :func:`posenc_cli.api.load` returns it or as made in memory.

    Returns
    -------
    dict
        JSON-able: ``{"kind": str, "params": {...}, "arrays": {key: {...}}}`` where each array has ``shape``
        (list of int), ``dtype`` (posenc's element type from the ``dtype`` parameter, else the NumPy dtype name),
        ``storage`` (the stored NumPy type, little-endian spelling: ``"<f4"``, ``"<u2"``, ``"|i1"``), ``min`` and
        ``max`` (real values, float, NaN ignored; ``None`` for an empty or all-NaN array: q15, q7, int8 and
        bfloat16 decoded by :func:`~posenc_cli.dtypes.decode`; a plain integer array's exact ``int``), ``sha256``
        (hex digest of the stored bytes, little-endian, C order) and ``nbytes``. A table posenc did not write
        (kind ``"array"``: a checkpoint, a bare .npy) also has, for each floating-point array of one or two axes
        (besides axes of size 1) and at most :data:`IDENTIFY_ENTRIES` entries, ``identified``: the formula
        :mod:`posenc_cli.identification` names (``{"command", "kind", "preset", "equivalent_presets",
        "agreement"}``), or ``None`` when none makes it.

    Memory: each array is walked in blocks of :data:`~posenc_cli.formats._blocks.BLOCK_BYTES` (4 MiB) of stored
    values, rows as a whole where a row fits (:func:`~posenc_cli.formats._blocks.row_blocks`; a row source's
    blocks are its own). The work on a block is its real values as float64 and a mask of their NaNs (a copy without
    them only where there are some), at most 2 million of them, about 34 MiB for bfloat16; none for plain
    integers, nor for the 1- and 2-byte codes whose real value grows with the code (q7, q15, int8 with a positive
    scale: :func:`_code_values`), whose extremes are those of their codes. An array that
    :func:`posenc_cli.read.opened` reads in parts is never held whole; one that is ``identified`` (at most
    :data:`IDENTIFY_ENTRIES` values) is held whole while :mod:`posenc_cli.identification` works on it.

    Examples
    --------
    >>> import posenc_cli
    >>> facts = describe(posenc_cli.generate(4, 6, dtype="q15"))
    >>> facts["kind"], facts["arrays"]["pe"]["dtype"], facts["arrays"]["pe"]["storage"]
    ('sinusoidal', 'q15', '<i2')
    >>> facts["arrays"]["pe"]["min"], facts["arrays"]["pe"]["max"], facts["arrays"]["pe"]["nbytes"]
    (-0.989990234375, 0.999969482421875, 48)
    """
    arrays: dict[str, dict[str, Any]] = {}
    for key, array in table.arrays.items():
        digest = hashlib.sha256()
        low: float | int = math.inf
        high: float | int = -math.inf
        little = array.dtype.newbyteorder("<")
        # plain integers (an index, an int64 array) keep their exact value: a float64 loses those above 2**53
        affine = table.params.get("dtype") == "int8" and "scale" in table.params  # int8 codes of real values
        integral = array.dtype.kind in "iu" and element_of(table.params, array.dtype) == array.dtype.name
        integral = integral and not affine
        coded = None if integral else _code_values(array.dtype, table.params)
        for block in _blocks(array):
            digest.update(raw_bytes(block, little))
            if not block.size:
                continue
            if integral:
                low, high = min(low, int(np.min(block))), max(high, int(np.max(block)))
                continue
            if coded is not None:
                first, values = coded
                low = min(low, float(values[int(np.min(block)) - first]))
                high = max(high, float(values[int(np.max(block)) - first]))
                continue
            real = decode(np.asarray(block), table.params)
            nan = np.isnan(real)
            # Without NaNs, the values as they are: their minimum is that of the copy without NaNs (the same
            # values in the same order), and no copy is made.
            real = real[~nan] if nan.any() else np.ascontiguousarray(real)
            del nan
            if real.size:
                low, high = min(low, float(real.min())), max(high, float(real.max()))
        found = low <= high
        arrays[key] = {
            "shape": [int(n) for n in array.shape],
            "dtype": element_of(table.params, array.dtype),
            "storage": little.str,
            "min": low if found else None,
            "max": high if found else None,
            "sha256": digest.hexdigest(),
            "nbytes": int(array.nbytes),
        }
    if table.kind == "array":
        _identified(table, arrays)
    return {"kind": table.kind, "params": dict(table.params), "arrays": arrays}


def _code_values(dtype: np.dtype, params: Mapping[str, Any]) -> tuple[int, np.ndarray] | None:
    """The least code of a boolean or 1- or 2-byte integer ``dtype`` and the real value of every code from it up,
    when that value grows with the code and is never NaN or -0.0 (booleans, q7, q15, int8 with a positive scale);
    else ``None``.

    Then the least and greatest real values of any codes are those of their least and greatest codes, exactly as
    :func:`~posenc_cli.dtypes.decode` gives them: no block needs decoding (4 million float64 values for a block of
    q7). Whether that holds is read off the decoded codes themselves, so nothing here repeats how a type decodes.

    Examples
    --------
    >>> first, values = _code_values(np.dtype(np.int8), {"dtype": "q7"})
    >>> first, float(values[0]), float(values[-1])
    (-128, -1.0, 0.9921875)
    >>> _code_values(np.dtype(np.uint16), {"dtype": "bfloat16"}) is None  # sign-magnitude bits
    True
    """
    if dtype.kind == "b":
        first, codes = 0, np.array([False, True])
    elif dtype.kind in "iu" and dtype.itemsize <= 2:
        info = np.iinfo(dtype)
        first, codes = int(info.min), np.arange(info.min, info.max + 1).astype(dtype)
    else:
        return None
    with np.errstate(all="ignore"):  # every code, NaN patterns among them: a probe, not the table's values
        real = decode(codes, params)
    if np.isnan(real).any() or np.signbit(real[real == 0]).any() or (np.diff(real) < 0).any():
        return None
    return first, real


#: The largest array ``describe`` identifies (``posenc identify`` takes any size): a checkpoint's embedding
#: matrices are passed over, its positional tables (a few million entries at most) are not.
IDENTIFY_ENTRIES = 1 << 22


def _identified(table: Table, arrays: dict[str, dict[str, Any]]) -> None:
    """Identify the arrays within one work budget for the file, and arrays of the same values once
    (:class:`~posenc_cli.identification.Identifier`): at most
    :data:`~posenc_cli.identification.WORK_PER_ENTRY` entries of work per entry, plus
    :data:`~posenc_cli.identification.WORK_FLOOR`, whatever the values."""
    from .identification import Identifier, stored_values

    identifier = Identifier()
    for key, array in table.arrays.items():
        axes = [n for n in array.shape if n != 1]
        if not 1 <= len(axes) <= 2 or array.size < 2 or array.size > IDENTIFY_ENTRIES:
            continue
        values = stored_values(array, table.params)  # bfloat16 bit patterns as their values
        if values.dtype.kind != "f":
            continue
        match = identifier.identify(values, key=key).match
        arrays[key]["identified"] = None
        if match is not None:
            arrays[key]["identified"] = {
                "command": match.command,
                "kind": match.hypothesis.command,
                "preset": match.hypothesis.preset,
                "equivalent_presets": list(match.hypothesis.equivalent),
                "agreement": match.comparison.agreement,
            }


def _blocks(array: Array) -> Iterable[np.ndarray]:
    """Row blocks of any array (a 0-d array is one block of itself); flat blocks of an array a file holds, which end
    where its row blocks would, but cut a row larger than a block."""
    if array.ndim == 0:
        return [np.asarray(array)]
    if isinstance(array, FileArray):
        return (block for _, block in flat_blocks(array))
    return (block for _, block in row_blocks(array))
