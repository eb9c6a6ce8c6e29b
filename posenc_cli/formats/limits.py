"""What a reader may take from a file posenc did not write: the memory budget and the metadata limits.

Every file posenc reads may be hostile (see the README's "Guarantees"). A reader therefore knows, before it allocates,
how many bytes its result will take (declared shape times item size, counted over every array of the file) and
claims them from a :class:`Budget`; a claim past the budget is refused with :class:`~posenc_cli.errors.FormatError`
before any memory is spent. Compressed data is read in bounded pieces, so a small file that inflates to gigabytes
is refused by its declared size, or stopped as soon as it inflates past it.

The budget's default is :data:`DEFAULT_FRACTION` of the memory available when the read starts (``MemAvailable`` on
Linux), at least :data:`MIN_DEFAULT`; the CLI's ``--max-memory`` and the API's ``max_memory=`` set it. Metadata has
limits of its own, whatever the budget: how many arrays, dimensions, header bytes and nesting levels a reader takes.

Examples
--------
>>> budget = Budget(1 << 20)
>>> budget.claim(4096, "array 'pe'")
>>> budget.claim(1 << 20, "array 'big'")
Traceback (most recent call last):
    ...
posenc_cli.errors.FormatError: array 'big' needs 1.0 MiB of memory, and posenc reads at most 1.0 MiB (4.0 KiB already \
taken); raise the limit with --max-memory (max_memory= in the API) if the file is trusted
"""

from __future__ import annotations

import os
import re

from ..errors import FormatError, SpecError

#: The share of the available memory a read may take by default: the rest is for the work done with the table.
DEFAULT_FRACTION = 0.5
#: The default never drops below this, so a busy machine can still read an ordinary table.
MIN_DEFAULT = 256 << 20
#: Used where the available memory cannot be read.
FALLBACK = 4 << 30

#: The most arrays (datasets, tensors, members) posenc reads from one file.
MAX_ARRAYS = 64
#: The most dimensions of one array: posenc's tables have one to three; numpy allows 64.
MAX_DIMS = 8
#: The most bytes of a metadata block (an .npy header, a safetensors header, posenc.json, a sidecar).
MAX_METADATA = 1 << 20
#: The deepest nesting of JSON or TOML posenc parses.
MAX_NESTING = 32
#: The most columns of a CSV row.
MAX_COLUMNS = 1 << 20
#: The most attributes (parameters) of one array.
MAX_ATTRIBUTES = 256


def available_memory() -> int | None:
    """The memory the system can give without swapping, in bytes (``MemAvailable``), or ``None`` if unknown."""
    try:
        with open("/proc/meminfo", "rb") as fp:
            for line in fp:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def default_limit() -> int:
    """The default budget: :data:`DEFAULT_FRACTION` of :func:`available_memory`, at least :data:`MIN_DEFAULT`."""
    free = available_memory()
    if free is None:
        return FALLBACK
    return max(MIN_DEFAULT, int(free * DEFAULT_FRACTION))


def human(size: int) -> str:
    """``size`` bytes as people read it: ``512 B``, ``4.0 KiB``, ``1.5 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


_SIZE = re.compile(r"([0-9]+)(?:\.([0-9]+))?\s*([KMGT]?)(i?B?)\Z", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A size as typed on a command line: ``1048576``, ``512M``, ``2GiB``, ``1.5G`` (powers of 1024).

    Examples
    --------
    >>> parse_size("512M"), parse_size("2GiB"), parse_size("4096")
    (536870912, 2147483648, 4096)
    """
    match = _SIZE.match(text.strip()) if text.isascii() else None
    if not match or (match.group(4) and not match.group(3) and match.group(4).lower() != "b"):
        raise SpecError(
            f"max_memory must be a size in bytes, optionally with K, M, G or T (powers of 1024), got {text!r}",
            param="max_memory",
        )
    whole, fraction, unit = match.group(1), match.group(2) or "", match.group(3).upper()
    scale = 1 << (10 * " KMGT".index(unit or " "))
    value: int = (int(whole + fraction) * scale) // 10 ** len(fraction)
    if value < 1:
        raise SpecError(f"max_memory must be at least one byte, got {text!r}", param="max_memory")
    return value


class Budget:
    """The bytes one read may still allocate.

    Parameters
    ----------
    limit : int, optional
        The most bytes; by default :func:`default_limit`.
    """

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise SpecError(f"max_memory must be a positive number of bytes, got {limit!r}", param="max_memory")
        self.limit = default_limit() if limit is None else limit
        self.taken = 0

    def claim(self, nbytes: int, what: str) -> None:
        """Take ``nbytes`` for ``what`` (``"array 'pe'"``); ``FormatError`` before anything is allocated if the
        total would pass the limit."""
        if nbytes < 0:
            raise FormatError(f"{what} claims a negative size")
        if self.taken + nbytes > self.limit:
            already = f" ({human(self.taken)} already taken)" if self.taken else ""
            raise FormatError(
                f"{what} needs {human(nbytes)} of memory, and posenc reads at most {human(self.limit)}{already}; "
                "raise the limit with --max-memory (max_memory= in the API) if the file is trusted"
            )
        self.taken += nbytes

    def remaining(self) -> int:
        """The bytes still free to claim."""
        return self.limit - self.taken


def check_count(count: int, limit: int, what: str) -> None:
    """``FormatError`` when a file declares more ``what`` (``"datasets"``) than posenc reads."""
    if count > limit:
        raise FormatError(f"the file holds {count} {what}, more than the {limit} posenc reads")


def check_nesting(text: str | bytes, what: str = "JSON") -> None:
    """``FormatError`` when brackets in ``text`` nest deeper than :data:`MAX_NESTING` (before a parser recurses).

    Counts ``[`` and ``{`` outside strings, so a nesting bomb is refused in linear time.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    in_string = False
    escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
            continue
        if byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_NESTING:
                raise FormatError(f"the {what} nests deeper than the {MAX_NESTING} levels posenc reads")
        elif byte in (0x5D, 0x7D):
            depth = max(0, depth - 1)
