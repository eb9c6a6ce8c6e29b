"""HDF5 (``.h5``, ``.hdf5``): one dataset per array, parameters as attributes.

Spec: https://docs.hdfgroup.org/hdf5/develop/_f_m_t3.html (written through h5py, read by any HDF5 tool).

Layout written:

- A single-array table becomes one dataset at the root, named by the table's name (``--name``; by default the
  output file's stem), shape ``(seq_len, d_model)``, row-major, contiguous, the table's dtype (``<f4``/``<f8``).
- A table with several arrays writes one dataset per array, named by its key (``cos``, ``sin``, ``inv_freq``), at
  the root, or inside the group ``options.group`` (the CLI's ``--name``) when one is given.
- Attributes on every dataset: ``kind``, ``generator`` (``"posenc X.Y.Z"``) and every parameter of the table
  (``seq_len``, ``d_model``, ``base``, ``dtype``, ``layout`` for a sinusoidal table), in sorted order. Strings are
  stored as UTF-8 variable-length strings, integers as int64, floats as float64, booleans as uint8 0/1.

Reproducible: no timestamps (h5py's ``track_times`` stays off), attributes in sorted order, the library's
``earliest`` file format (readable by HDF5 1.8 and later tools, including Debian's ``h5dump``), no compression filter
(LZF is unreadable to h5dump, and positional tables barely compress). Rows are written in slabs, so a table that is
produced block by block never has to be whole in memory.

Round trip: arrays, dtypes, shapes, kind and parameters. :func:`load` reads every dataset at the root, or in the
root's only group when the root holds nothing else.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Param, Table
from ._blocks import row_blocks
from .limits import Budget
from .options import WriteOptions

#: The most datasets or elements posenc will read from a file it did not necessarily write.
MAX_DATASETS = 64


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write ``table`` to the binary file object ``fp`` (which must be readable, writable and seekable)."""
    import h5py  # heavy: imported only when an .h5 is written

    single = len(table.arrays) == 1
    attrs: dict[str, Param] = {"generator": f"posenc {__version__}", "kind": table.kind, **table.params}
    with h5py.File(fp, "w", libver="earliest", track_order=False) as f:
        parent = f.create_group(options.group, track_order=False) if options.group and not single else f
        for key, array in table.arrays.items():
            ds = parent.create_dataset(
                options.name if single else key,
                shape=array.shape,
                dtype=array.dtype.newbyteorder("<"),
                track_times=False,
            )
            for attr in sorted(attrs):
                ds.attrs[attr] = _attr_value(attrs[attr])
            if array.ndim == 0:
                ds[()] = array
                continue
            for lo, block in row_blocks(array):
                ds[lo : lo + len(block)] = block


def _attr_value(value: Param) -> Any:
    if isinstance(value, bool):
        return np.uint8(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    return str(value)


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every dataset at the root of an HDF5 file; ``FormatError`` when it is not a readable table."""
    import h5py

    try:
        with h5py.File(fp, "r") as f:
            groups = [node for node in f.values() if isinstance(node, h5py.Group)]
            root = groups[0] if len(groups) == 1 and not any(isinstance(n, h5py.Dataset) for n in f.values()) else f
            names = [key for key, node in root.items() if isinstance(node, h5py.Dataset)]
            if not names:
                raise FormatError("the HDF5 file holds no dataset at its root")
            if len(names) > MAX_DATASETS:
                raise FormatError(
                    f"the HDF5 file holds {len(names)} datasets, more than the {MAX_DATASETS} posenc reads"
                )
            arrays: dict[str, np.ndarray] = {}
            params: dict[str, Param] = {}
            kind = "array"
            for name in names:
                ds = root[name]
                if ds.dtype.kind not in "fiub":
                    raise FormatError(f"dataset {name!r} holds {ds.dtype}, not numbers")
                arrays[name] = ds[()]
                for key, value in ds.attrs.items():
                    if key == "kind":
                        kind = str(value)
                    elif key != "generator":
                        params[key] = _param(value)
    except OSError as exc:
        raise FormatError(f"not a readable HDF5 file: {exc}") from None
    return Table(kind, arrays, params)


def _param(value: Any) -> Param:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (int, float, str, bool)):
        return value
    return str(value)
