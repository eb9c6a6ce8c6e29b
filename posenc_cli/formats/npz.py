"""NumPy ``.npz``: every array of a table in one ZIP archive, readable by ``numpy.load`` without pickles.

Spec: https://numpy.org/doc/stable/reference/generated/numpy.savez.html (a ZIP of ``.npy`` members).

Layout written: one stored (uncompressed) member ``<key>.npy`` per array, in the table's order, each an NPY 1.0 file
exactly as :mod:`posenc_cli.formats.npy` writes it, then ``posenc.json``: canonical JSON (sorted keys, two-space
indent) ``{"generator": ..., "kind": ..., "params": {...}}``. ``numpy.load`` lists it among ``files`` and returns its
bytes when asked; the arrays load as usual.

Reproducible: every member has the same fixed timestamp (1980-01-01 00:00, the earliest ZIP can store), fixed
permissions and no extra fields; ZIP64 records only when an array needs them (4 GiB and more). Arrays are written in
row blocks, so a table produced block by block streams into the archive.

Round trip: arrays, dtypes, shapes, kind and parameters.
"""

from __future__ import annotations

import json
import zipfile
from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Param, Table
from . import npy
from ._blocks import row_blocks
from .limits import Budget
from .options import WriteOptions

#: The member that carries the table's kind and parameters.
META = "posenc.json"
#: ZIP's earliest date: members carry no build time.
EPOCH = (1980, 1, 1, 0, 0, 0)
#: The most members posenc reads from an archive it did not necessarily write.
MAX_MEMBERS = 64


def _info(name: str, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    info.create_system = 3  # Unix: the same bytes on every platform
    info.file_size = size
    return info


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write every array of ``table`` (and its parameters) to ``fp`` as an ``.npz``."""
    with zipfile.ZipFile(fp, "w", allowZip64=True) as archive:
        for key, array in table.arrays.items():
            dtype = array.dtype.newbyteorder("<")
            head = npy.header(array.shape, dtype)
            size = len(head) + array.size * dtype.itemsize
            with archive.open(_info(f"{key}.npy", size), "w", force_zip64=size >= 1 << 32) as member:
                member.write(head)
                for _, block in row_blocks(array):
                    member.write(np.ascontiguousarray(block, dtype).tobytes())
        meta = {"generator": f"posenc {__version__}", "kind": table.kind, "params": dict(table.params)}
        text = (json.dumps(meta, sort_keys=True, indent=2, allow_nan=False) + "\n").encode("utf-8")
        archive.writestr(_info(META, len(text)), text)


def load(fp: BinaryIO, budget: Budget | None = None) -> Table:
    """Read every ``.npy`` member (never unpickling) and the parameters; ``FormatError`` when it is not an .npz."""
    try:
        archive = zipfile.ZipFile(fp)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FormatError(f"not a valid .npz file: {exc}") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise FormatError(f"the .npz holds {len(members)} members, more than the {MAX_MEMBERS} posenc reads")
        arrays: dict[str, np.ndarray] = {}
        kind, params = "array", {}
        for info in members:
            try:
                with archive.open(info) as member:
                    if info.filename.endswith(".npy"):
                        loaded = npy.load(member)  # type: ignore[arg-type]  # a ZipExtFile is a binary file
                        arrays[info.filename[: -len(".npy")]] = np.asarray(loaded.array)
                    elif info.filename == META:
                        meta = json.loads(member.read(1 << 20).decode("utf-8"))
                        kind, params = str(meta["kind"]), dict(meta["params"])
            except (zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError, EOFError) as exc:
                raise FormatError(f"member {info.filename!r} of the .npz is unreadable: {exc}") from None
    if not arrays:
        raise FormatError("the .npz holds no .npy member")
    clean: dict[str, Param] = {k: v for k, v in params.items() if isinstance(v, (int, float, str, bool))}
    return Table(kind, arrays, clean)
