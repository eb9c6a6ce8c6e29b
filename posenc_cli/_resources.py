"""Refuse, before any work, what this machine cannot hold: a table larger than free memory or free disk space.

posenc streams what it can: ``generate`` and ``rope`` (lazily, as the CLI builds them) compute row blocks while the
writer writes them, so their memory stays bounded whatever the size. Three things are built whole in memory: the
ALiBi bias matrix, the 2-D sincos table, and any table the API builds with ``lazy=False`` (its default). For those,
:func:`check_memory` compares the peak the build needs (:data:`WORK_BYTES_PER_VALUE`) with the memory the system can
still give; for every output, :func:`check_disk` compares the file's size with the free space where it goes. An
absurd request (``posenc generate -n 4294967296 -d 1048576``: 2**52 values, 16 PiB) is refused in milliseconds with
the sizes in the message, instead of running until the disk is full or the kernel's OOM killer ends the process
without a word.

Both raise errors the CLI maps to exit code 1, the code of "this machine cannot do it now": the request itself is
valid (exit code 2 is for requests that no machine could satisfy, and where "absurd" begins is the machine's
business). Memory: :class:`~posenc_cli.errors.PosencError`; disk: :class:`~posenc_cli.errors.OutputError`.

Both checks err on the side of letting the work start: an unknown amount of free memory or space is no reason to
refuse, and text outputs are checked against the fewest bytes they can take (:func:`estimate_bytes`). What slips
through fails later as cleanly (a full disk: "No space left on device", nothing written).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from .dtypes import element_of
from .errors import OutputError, PosencError
from .formats import Format
from .formats.limits import available_memory, human
from .table import Table

#: Peak memory per value while a table is built whole in memory, by kind: measured (``ru_maxrss``, NumPy 2, every
#: element type) with room to spare. Sinusoidal and RoPE tables peak at 57 bytes (bfloat16; float32 at 6), the
#: ALiBi bias at 112 (its double-double products), the 2-D sincos table at its own size plus a little.
WORK_BYTES_PER_VALUE = {"sinusoidal": 64, "rope": 64, "alibi": 128, "sincos2d": 16, "relative": 48, "window": 48}

#: The fewest and the most bytes one value takes in a text format (CSV, C), its separator included, by element
#: type. Fewest: ``0.0,`` or ``0,``. Most: the widest spelling over every format and literal style, such as C's
#: ``-0x1.fffffep+127f, `` for float32, ``-2.2250738585072014e-308, `` for float64, or a 16-bit pattern with its
#: value in a comment, ``0xFF7F /* -3.3895314e+38 */, ``.
TEXT_BYTES_PER_VALUE = {
    "float32": (4, 24),
    "float64": (4, 32),
    "float16": (4, 40),
    "bfloat16": (4, 44),
    "q15": (2, 10),
    "q7": (2, 8),
    "int8": (2, 8),
}
#: A bare array of another dtype (``int32``, ``uint16``): from ``0,`` to ``-9223372036854775808, `` and beyond.
UNKNOWN_TEXT_BYTES_PER_VALUE = (2, 32)
#: What a format spells per value besides the value: a MIF line's ``<tab><address> : `` and ``;`` (an address of
#: at most 16 hex digits).
ADDRESS_BYTES = {"mif": 21}
#: At most this much per row of text (C's indentation and braces) and per file (headers, comments, metadata).
ROW_OVERHEAD_BYTES = 16
FILE_OVERHEAD_BYTES = 64 << 10


class Size(NamedTuple):
    """The fewest (``low``) and most (``high``) bytes an output can take; equal for binary formats, but for
    headers and metadata."""

    low: int
    high: int


def estimate_bytes(table: Table, fmt: Format) -> Size:
    """How many bytes writing ``table`` in ``fmt`` takes, without writing it.

    Binary formats: the arrays' bytes exactly (``low``), plus at most :data:`FILE_OVERHEAD_BYTES` of headers and
    metadata per array (``high``). Text formats: :data:`TEXT_BYTES_PER_VALUE` for each value, per row at most
    :data:`ROW_OVERHEAD_BYTES` more. Companion files (``.h`` of a ``.c``, a ``.json`` sidecar) are small and
    included in ``high`` only.

    Examples
    --------
    >>> from posenc_cli import api
    >>> from posenc_cli.formats import FORMATS
    >>> estimate_bytes(api.generate(2**32, 2**20, lazy=True), FORMATS["npy"]).low   # 2**52 float32 values
    18014398509481984
    >>> size = estimate_bytes(api.generate(1000, 64), FORMATS["csv"])
    >>> size.low <= 64_000 * 11 <= size.high
    True
    """
    arrays = list(table.arrays.values())
    if not fmt.text:
        data = sum(a.size * a.dtype.itemsize for a in arrays)
        return Size(data, data + FILE_OVERHEAD_BYTES * (len(arrays) + 1))
    low, high = 0, FILE_OVERHEAD_BYTES * 2
    for a in arrays:  # each array's own element type: an int16 index and its float32 bias are spelled apart
        element = element_of(table.params, a.dtype)
        fewest, most = TEXT_BYTES_PER_VALUE.get(element, UNKNOWN_TEXT_BYTES_PER_VALUE)
        rows = a.shape[0] if a.ndim else 1
        low += a.size * fewest
        high += a.size * (most + ADDRESS_BYTES.get(fmt.name, 0)) + rows * ROW_OVERHEAD_BYTES
    return Size(low, high)


def check_disk(path: str | os.PathLike[str], nbytes: int, what: str | None = None) -> None:
    """Refuse (``OutputError``) an output of ``nbytes`` that cannot fit in the free space where ``path`` goes.

    The free space is what an ordinary user may fill (``f_bavail``: root's reserve stays for the system), and all
    of it must hold the new file: an existing output is replaced only once the new one is complete. A file system
    that cannot tell is not checked. ``what`` names the output in the message when it is not ``path`` itself (a
    table for stdout or ``--check`` is built in full in a temporary directory first).

    Examples
    --------
    >>> import tempfile
    >>> check_disk(tempfile.gettempdir() + "/pe.npy", 1024)   # fits: nothing happens
    >>> check_disk(tempfile.gettempdir() + "/pe.npy", 2**80)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc_cli.errors.OutputError: cannot write '/.../pe.npy': it needs at least 1.0 YiB and ... is free ...
    """
    directory = Path(os.path.realpath(path)).parent
    try:
        stats = os.statvfs(directory)
    except OSError:
        return
    free = stats.f_bavail * stats.f_frsize
    if nbytes > free:
        where = f"cannot write {os.fspath(path)!r}: it" if what is None else f"{what}: it"
        raise OutputError(
            f"{where} needs at least {human(nbytes)} and {human(free)} is free on the file system of "
            f"{str(directory)!r}; free some space, write elsewhere or ask for a smaller table"
        )


def check_memory(nbytes: int, what: str) -> None:
    """Refuse (``PosencError``) to build ``what`` when it needs more than the ``nbytes`` the system can still give.

    ``what`` names the work for the message: ``"the ALiBi bias matrix (64 x 262144)"``. The memory available is
    :func:`available_memory`; when it is unknown nothing is refused.

    Examples
    --------
    >>> check_memory(1 << 20, "a small table")
    >>> check_memory(1 << 80, "the 2-D sincos table")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc_cli.errors.PosencError: the 2-D sincos table needs about 1.0 YiB of memory and ... is available; ...
    """
    available = available_memory()
    if available is not None and nbytes > available:
        raise PosencError(
            f"{what} needs about {human(nbytes)} of memory and {human(available)} is available; ask for a smaller "
            "table, or a streaming one (generate, rope)"
        )
