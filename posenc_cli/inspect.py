"""Inspect a table: what a file holds.

- :func:`describe`: the kind, the parameters and, per array, shape, element type, real min and max, the SHA-256
  of the stored bytes and their size: the facts ``posenc inspect`` shows (``--json`` prints the dict as it is).

Whether a file holds exactly what its parameters give is :mod:`posenc_cli.verify` (whose names this module
re-exports, where they were first published). Every array is read in row blocks, so a lazy table is never computed
whole. No printing, no click, no rich: the CLI formats what this returns.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .dtypes import decode, element_of
from .formats._blocks import row_blocks
from .table import Array, Table
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
        for block in _blocks(array):
            digest.update(np.ascontiguousarray(block, little).tobytes())
            if integral:
                if block.size:
                    low, high = min(low, int(np.min(block))), max(high, int(np.max(block)))
                continue
            real = decode(np.asarray(block), table.params)
            real = real[~np.isnan(real)]
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
    """Row blocks of any array (a 0-d array is one block of itself)."""
    if array.ndim == 0:
        return [np.asarray(array)]
    return (block for _, block in row_blocks(array))
