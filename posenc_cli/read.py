"""Reading a table from a file: :func:`load`, the one entry every command and the API read through.

The file is untrusted (the threat model of ``docs/security.md``): it is opened only if it is a regular file, and
its format's reader allocates no more than a :class:`~posenc_cli.formats.limits.Budget`. This module sits below
:mod:`posenc_cli.make` (which reads a checkpoint's bias table) and :mod:`posenc_cli.api` (which re-exports
:func:`load`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np

from .dtypes import code_range, element_of, fixed_format, word_bits
from .errors import FormatError, SpecError
from .formats import FORMATS, by_name, companion_path, infer
from .formats.limits import Budget
from .table import Table

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["PathLike", "existing", "load", "names", "open_regular"]


def load(path: PathLike, *, format: str | None = None, max_memory: int | None = None, part: str | None = None) -> Table:
    """Read a table from any format posenc can read back (see :data:`~posenc_cli.formats.FORMATS`).

    The file is untrusted: it must be a regular file (a FIFO, a device or a link to one is refused before reading),
    and the arrays it declares may take at most ``max_memory`` bytes in all (by default half the available memory,
    :mod:`posenc_cli.formats.limits`), checked before anything is allocated.

    ``part`` names the one array the caller wants (a checkpoint's bias table). Formats that can read one array
    alone (``.safetensors``, whose model files hold hundreds of tensors) read only that one, and may then list more
    arrays than posenc reads whole (:data:`~posenc_cli.formats.limits.MAX_LISTED`); a missing one raises
    :class:`~posenc_cli.formats.safetensors.MissingTensor` listing those the file holds. Other formats read the
    whole file, and the caller picks the array.

    Raises
    ------
    FormatError
        The file is not a regular file, not a valid file of its format, declares more than the limits allow, or its
        format cannot be read back.
    """
    path = Path(os.fspath(path))
    fmt = by_name(format) if format is not None else infer(path)
    if fmt.load is None:
        readable = ", ".join(f.name for f in FORMATS.values() if f.load is not None)
        raise FormatError(f"posenc cannot read {fmt.name} files back; it reads {readable}")
    budget = Budget(max_memory)
    if part is not None and fmt.load_part is not None:  # one tensor of a checkpoint: nothing else is read
        with _naming(path), open_regular(path) as fp:
            return _check_codes(fmt.load_part(fp, budget, part))
    with _naming(path):
        with open_regular(path) as fp:
            table = fmt.load(fp, budget)
    companion = fmt.companion
    if companion is not None and companion.load is not None:
        sidecar = companion_path(fmt, path)
        if sidecar is not None and os.path.lexists(sidecar):
            with _naming(sidecar), open_regular(sidecar) as fp:
                table = companion.load(table, fp, budget)
    with _naming(path):
        return _check_codes(table)


def _check_codes(table: Table) -> Table:
    """``table``, or ``FormatError`` when an array of a fixed-point type narrower than its storage (``fixed18.16``
    in an int32) holds a code outside that type's range: no table posenc writes, so not one it reads."""
    for key, array in table.arrays.items():
        element = element_of(table.params, array.dtype)
        bounds = code_range(element) if fixed_format(element) is not None else None
        if not isinstance(array, np.ndarray) or bounds is None or array.size == 0:
            continue
        if 8 * array.dtype.itemsize == word_bits(element):
            continue
        low, high = int(array.min()), int(array.max())
        if low < bounds[0] or high > bounds[1]:
            bad = low if low < bounds[0] else high
            raise FormatError(f"array {key!r} of {element} holds {bad}, outside its codes [{bounds[0]}, {bounds[1]}]")
    return table


def names(path: PathLike, *, format: str | None = None) -> list[str] | None:
    """The keys of every array of ``path`` where its format lists them without reading data (``.safetensors``: a
    model file's hundreds of tensors), else ``None``; the file is checked as :func:`load` checks it."""
    path = Path(os.fspath(path))
    fmt = by_name(format) if format is not None else infer(path)
    if fmt.names is None:
        return None
    with _naming(path), open_regular(path) as fp:
        return fmt.names(fp)


def existing(path: PathLike, param: str, what: str) -> Path:
    """``path`` as a ``Path`` when something is there; ``SpecError`` (``param``: a usage error, exit 2) naming
    ``what`` otherwise. For files named by an option (``--bias``, ``--config``): a file that is not there is a
    mistake in the command, one that cannot be read a failure (:func:`load` raises ``FormatError``)."""
    file = Path(os.fspath(path))
    if not os.path.lexists(file):
        raise SpecError(f"{what} {str(file)!r} does not exist", param=param)
    return file


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Errors reading ``path`` as one ``FormatError`` that starts with its name."""
    try:
        yield
    except OSError as exc:
        raise FormatError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except FormatError as exc:
        raise FormatError(f"{str(path)!r}: {exc}") from None


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (after following links); ``FormatError`` otherwise.

    Opened with ``O_NONBLOCK`` so that a FIFO cannot block the open, then checked with ``fstat`` on the open file
    (no race between the check and the read).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, a device or a socket"
            raise FormatError(f"not a regular file but {what}; posenc reads tables only from regular files")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
