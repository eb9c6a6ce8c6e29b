"""What a reader may take from a file posenc did not write: the memory budget and the metadata limits.

Every file posenc reads may be hostile (see the README's "Guarantees"). A reader therefore knows, before it allocates,
how many bytes its result will take (declared shape times item size, counted over every array of the file) and
claims them from a :class:`Budget`; a claim past the budget is refused with :class:`~posenc_cli.errors.FormatError`
before any memory is spent. Compressed data is read in bounded pieces, so a small file that inflates to gigabytes
is refused by its declared size, or stopped as soon as it inflates past it.

The budget's default is :data:`DEFAULT_FRACTION` of the memory available when the read starts
(:func:`~posenc_cli.system.capacity.available_memory`: what the system, the cgroup and the process's own limits
still allow), at least :data:`MIN_DEFAULT`; the CLI's ``--max-memory`` and the API's ``max_memory=`` set it.
Metadata has limits of its own, whatever the budget: how many arrays, dimensions, header bytes and nesting levels a
reader takes.

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

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from ..errors import FormatError, SpecError
from ..system.capacity import available_memory, human
from ..table import Param

#: The share of the available memory a read may take by default: the rest is for the work done with the table.
DEFAULT_FRACTION = 0.5
#: The default never drops below this, so a busy machine can still read an ordinary table.
MIN_DEFAULT = 256 << 20
#: Used where the available memory cannot be read.
FALLBACK = 4 << 30

#: The most arrays (datasets, tensors, members) posenc reads from one file.
MAX_ARRAYS = 64
#: The most tensors a checkpoint's header may list when posenc reads one of them (a bias table by its key): a
#: model's file holds hundreds; the header itself stays within :data:`MAX_METADATA` bytes.
MAX_LISTED = 1 << 14
#: The most dimensions of one array: posenc's tables have one to three; numpy allows 64.
MAX_DIMS = 8
#: The most bytes of a metadata block (an .npy header, a safetensors header, an .npz's posenc.json, a sidecar).
MAX_METADATA = 1 << 20
#: The deepest nesting of JSON or TOML posenc parses.
MAX_NESTING = 32
#: The most columns of a CSV row.
MAX_COLUMNS = 1 << 20
#: The most attributes (parameters) of one array.
MAX_ATTRIBUTES = 256
#: The most HDF5 groups posenc walks into in one file (the root not counted); how deep they nest is bounded by
#: :data:`MAX_NESTING`.
MAX_GROUPS = 256
#: The integers a parameter may hold: a signed 64-bit integer, what HDF5 attributes and GGUF metadata store them
#: as, so that a parameter read from any file can be written to every format.
PARAM_INTEGERS = range(-(1 << 63), 1 << 63)


def default_limit() -> int:
    """The default budget: :data:`DEFAULT_FRACTION` of :func:`~posenc_cli.system.capacity.available_memory`, at
    least :data:`MIN_DEFAULT`."""
    free = available_memory()
    if free is None:
        return FALLBACK
    return max(MIN_DEFAULT, int(free * DEFAULT_FRACTION))


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


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json`` ``object_pairs_hook``: the object, or ``ValueError`` for a key that appears twice (``json``
    would keep the last silently; the formats posenc reads forbid or do not mean it).

    >>> import json
    >>> json.loads('{"a": 1, "b": 2}', object_pairs_hook=unique_keys)
    {'a': 1, 'b': 2}
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


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


PairsHook = Callable[[list[tuple[str, Any]]], dict[str, Any]]


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number (posenc reads finite numbers only)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"the number {shown} is too large for a double (posenc reads finite numbers only)")
    return value


def read_json(data: bytes, what: str, pairs_hook: PairsHook = unique_keys) -> Any:
    """The JSON value of ``data``, read strictly; ``FormatError`` naming ``what`` (``"posenc .json sidecar"``)
    otherwise, in one line.

    Refused, each before or while parsing (never by walking the result):

    - more than :data:`MAX_METADATA` bytes; bytes that are not UTF-8; brackets nested deeper than
      :data:`MAX_NESTING` levels (:func:`check_nesting`, before the parser recurses);
    - ``NaN``, ``Infinity`` and ``-Infinity``: not JSON (RFC 8259, section 6), though Python's ``json`` reads them;
    - a number too large for a double (``1e400``), which Python's ``json`` reads as infinity; an integer of more
      digits than Python converts (4300 by default);
    - a key that appears twice in one object (``pairs_hook``, by default :func:`unique_keys`): RFC 8259 leaves the
      meaning to the reader, and readers differ (Python's ``json`` keeps the last, others the first), so two readers
      of one file would see two tables.

    A ``FormatError`` that ``pairs_hook`` raises (a limit of its own) reaches the caller as it is.

    Examples
    --------
    >>> read_json(b'{"seq_len": 4, "base": 10000.0}', "sidecar")
    {'seq_len': 4, 'base': 10000.0}
    >>> read_json(b'{"base": NaN}', "sidecar")
    Traceback (most recent call last):
        ...
    posenc_cli.errors.FormatError: the sidecar is not valid UTF-8 JSON: NaN is not a JSON number (posenc reads finite \
numbers only)
    >>> read_json(b'{"seq_len": 3, "seq_len": 2}', "sidecar")
    Traceback (most recent call last):
        ...
    posenc_cli.errors.FormatError: the sidecar is not valid UTF-8 JSON: key 'seq_len' appears twice
    """
    if len(data) > MAX_METADATA:
        raise FormatError(f"the {what} is larger than the {human(MAX_METADATA)} posenc reads")
    check_nesting(data, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"the {what} is not valid UTF-8 JSON: {exc}") from None
    try:
        return json.loads(text, object_pairs_hook=pairs_hook, parse_constant=_no_constant, parse_float=_finite)
    except FormatError:
        raise
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"the {what} is not valid UTF-8 JSON: {exc}") from None


def check_param(value: object, what: str) -> Param:
    """``value`` as a table's parameter, or ``FormatError`` naming ``what`` (``"attribute 'base' of dataset 'pe'"``):
    a boolean, an integer within :data:`PARAM_INTEGERS`, a finite float or a string, so that every format posenc
    writes can hold it (JSON has no NaN or infinity, HDF5 and GGUF store 64-bit integers).

    Examples
    --------
    >>> check_param(10000.0, "base")
    10000.0
    >>> check_param(float("inf"), "attribute 'base' of dataset 'pe'")
    Traceback (most recent call last):
        ...
    posenc_cli.errors.FormatError: attribute 'base' of dataset 'pe' is inf; posenc reads finite numbers only
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise FormatError(f"{what} is {value}; posenc reads finite numbers only")
    if isinstance(value, int) and not isinstance(value, bool) and value not in PARAM_INTEGERS:
        raise FormatError(
            f"{what} is an integer of {value.bit_length()} bits; posenc reads parameters of at most 64 bits (what "
            "HDF5 and GGUF store)"
        )
    if not isinstance(value, (int, float, str)):  # a bool is an int
        raise FormatError(f"{what} is {type(value).__name__}; parameters must be numbers, strings or booleans")
    return value


def check_params(params: Mapping[str, object], what: str) -> dict[str, Param]:
    """``params`` as a table's parameters, each checked by :func:`check_param`; ``FormatError`` naming ``what``
    (``"the posenc .json sidecar"``) and the parameter otherwise.

    Examples
    --------
    >>> check_params({"seq_len": 4, "base": 1e4, "dtype": "q15", "cls": True}, "the sidecar")
    {'seq_len': 4, 'base': 10000.0, 'dtype': 'q15', 'cls': True}
    >>> check_params({"base": float("nan")}, "the sidecar")
    Traceback (most recent call last):
        ...
    posenc_cli.errors.FormatError: the sidecar's parameter 'base' is nan; posenc reads finite numbers only
    """
    return {name: check_param(value, f"{what}'s parameter {name[:60]!r}") for name, value in params.items()}
