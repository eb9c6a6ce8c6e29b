"""Reading a table from a file: :func:`load`, the one entry every command and the API read through, and
:func:`opened`, the same table read a block at a time while the file stays open (``posenc inspect`` and ``verify``).

The file is untrusted (the threat model of ``docs/security.md``): it is opened only if it is a regular file, and
its format's reader allocates no more than a :class:`~posenc_cli.formats.limits.Budget`. This module sits below
:mod:`posenc_cli.kinds` (which read a checkpoint's bias table, a model's position ids) and :mod:`posenc_cli.api`
(which re-exports :func:`load`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Union

import numpy as np

from .dtypes import code_range, element_of, fixed_format, word_bits
from .errors import FormatError, SpecError
from .formats import FORMATS, Format, Load, by_name, companion_path, infer
from .formats.limits import Budget
from .system.files import open_regular
from .table import Array, FileArray, Table

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["PathLike", "existing", "load", "load_each", "names", "opened"]


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
    fmt, read = _readable(path, format)
    budget = Budget(max_memory)
    if part is not None and fmt.load_parts is not None:  # one tensor of a checkpoint: nothing else is read
        with _naming(path), open_regular(path) as fp:
            _, got = next(fmt.load_parts(fp, [part], lambda: budget))
            if isinstance(got, FormatError):
                raise got
            return _check_codes(got)
    with _naming(path):
        with open_regular(path) as fp:
            table = read(fp, budget)
    table = _with_companion(fmt, path, table, budget)
    with _naming(path):
        return _check_codes(table)


def load_each(
    path: PathLike, keys: Iterable[str], *, format: str | None = None, max_memory: int | None = None
) -> Iterator[tuple[str, Table | FormatError]]:
    """Each array of ``keys`` alone, as :func:`load` with ``part=key`` reads it, each within its own ``max_memory``:
    ``(key, table)``, or ``(key, error)`` (a ``FormatError`` naming the file) for one that cannot be read, so that
    a walk over a checkpoint's tensors (``posenc identify``) goes on past it. A format that reads one array alone
    (``.safetensors``) reads its header once for all of them, so the walk costs what the arrays cost, never the
    square of their count; any other format is read whole, once, and each key taken from it.
    """
    path = Path(os.fspath(path))
    fmt, _ = _readable(path, format)
    if fmt.load_parts is None:
        try:
            table = load(path, format=fmt.name, max_memory=max_memory)
        except FormatError as exc:
            for key in keys:
                yield key, exc
            return
        for key in keys:
            found = table.arrays.get(key)
            yield key, FormatError(f"{str(path)!r}: no array {key!r}") if found is None else table.part(key)
        return
    with _naming(path), open_regular(path) as fp:
        for key, got in fmt.load_parts(fp, keys, lambda: Budget(max_memory)):
            try:
                if isinstance(got, FormatError):
                    raise got
                yield key, _check_codes(got)
            except FormatError as exc:
                yield key, FormatError(f"{str(path)!r}: {exc}")


@contextlib.contextmanager
def opened(path: PathLike, *, format: str | None = None, max_memory: int | None = None) -> Iterator[Table]:
    """The table :func:`load` reads from ``path``, its arrays read from the file a block at a time as they are used,
    while the context lasts: what ``posenc inspect`` and ``verify`` read, whose work needs a block, never the table.

    The file is checked, and every array's declared size claimed from the budget, exactly as :func:`load` does,
    before the context starts; an array then reads its values as they are asked for (a
    :class:`~posenc_cli.table.FileArray`: walk it with :func:`~posenc_cli.formats._blocks.flat_blocks`), checking
    them as :func:`load` checks them (fixed-point codes in range, and each format's own checks: a member's length
    and CRC-32, a chunk's checksum), and raising ``FormatError`` naming the file where they fail. Formats that
    cannot be read in parts (every format without :attr:`~posenc_cli.formats.Format.stream`: CSV, C, ROM images)
    and the arrays that cannot (see each format's docstring) are read whole, as :func:`load` reads them. Reading an
    array after the context has ended raises ``ValueError``.

    Examples
    --------
    >>> import tempfile, posenc_cli
    >>> from posenc_cli.formats._blocks import flat_blocks
    >>> path = f"{tempfile.mkdtemp()}/pe.npy"
    >>> _ = posenc_cli.save(posenc_cli.generate(4, 6), path)
    >>> with opened(path) as table:
    ...     type(table.array).__name__, sum(values.size for _, values in flat_blocks(table.array))
    ('FileArray', 24)
    """
    path = Path(os.fspath(path))
    fmt, _ = _readable(path, format)
    stream = fmt.stream
    if stream is None:
        yield load(path, format=fmt.name, max_memory=max_memory)
        return
    budget = Budget(max_memory)
    live = [True]
    with contextlib.ExitStack() as stack:
        with _naming(path):
            fp = stack.enter_context(open_regular(path))
            table = stack.enter_context(stream(fp, budget))
        table = _with_companion(fmt, path, table, budget)
        with _naming(path):
            table = _check_codes(table, path, live)
        try:
            yield table
        finally:
            live[0] = False


def _readable(path: Path, format: str | None) -> tuple[Format, Load]:
    """The format of ``path`` (``format`` when given) and its reader; ``FormatError`` if posenc cannot read it."""
    fmt = by_name(format) if format is not None else infer(path)
    if fmt.load is None:
        readable = ", ".join(f.name for f in FORMATS.values() if f.load is not None)
        raise FormatError(f"posenc cannot read {fmt.name} files back; it reads {readable}")
    return fmt, fmt.load


def _with_companion(fmt: Format, path: Path, table: Table, budget: Budget) -> Table:
    """``table`` with what the companion file of ``path`` holds (an ``.npy``'s sidecar), when there is one."""
    companion = fmt.companion
    if companion is not None and companion.load is not None:
        sidecar = companion_path(fmt, path)
        if sidecar is not None and os.path.lexists(sidecar):
            with _naming(sidecar), open_regular(sidecar) as fp:
                table = companion.load(table, fp, budget)
    return table


def _check_codes(table: Table, path: Path | None = None, live: list[bool] | None = None) -> Table:
    """``table``, or ``FormatError`` when an array of a fixed-point type narrower than its storage (``fixed18.16``
    in an int32) holds a code outside that type's range: no table posenc writes, so not one it reads.

    A :class:`~posenc_cli.table.FileArray` (of :func:`opened`, whose file is ``path``) is checked a block at a time
    as it is read, its errors named after ``path``, and reads only while ``live[0]``."""
    arrays: dict[str, Array] = {}
    for key, array in table.arrays.items():
        element = element_of(table.params, array.dtype)
        bounds = code_range(element) if fixed_format(element) is not None else None
        if bounds is not None and 8 * array.dtype.itemsize == word_bits(element):
            bounds = None  # every code the storage holds is one of the type's
        if isinstance(array, FileArray) and path is not None and live is not None:
            arrays[key] = _checked_reads(array, key, element, bounds, path, live)
            continue
        arrays[key] = array
        if isinstance(array, np.ndarray) and bounds is not None and array.size:
            _check_range(array, key, element, bounds)
    if path is None:
        return table
    return Table(table.kind, arrays, table.params, table.axes)


def _check_range(values: np.ndarray, key: str, element: str, bounds: tuple[int, int]) -> None:
    low, high = int(values.min()), int(values.max())
    if low < bounds[0] or high > bounds[1]:
        bad = low if low < bounds[0] else high
        raise FormatError(f"array {key!r} of {element} holds {bad}, outside its codes [{bounds[0]}, {bounds[1]}]")


def _checked_reads(
    array: FileArray, key: str, element: str, bounds: tuple[int, int] | None, path: Path, live: list[bool]
) -> FileArray:
    read = array.flat

    def flat(start: int, stop: int) -> np.ndarray:
        if not live[0]:
            raise ValueError(f"the arrays of {str(path)!r} are read inside `with opened(...)`, and it has ended")
        with _naming(path):
            values = read(start, stop)
            if bounds is not None and values.size:
                _check_range(values, key, element, bounds)
        return values

    return FileArray(array.shape, array.dtype, flat)


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
