"""ROM image metadata (the comment layer of :mod:`posenc_cli.formats.rom`): the escaped comment text, the
``posenc:`` metadata line written and read back, and the comment lines at the top of a file read under limits."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ..dtypes import element_of, word_bits
from ..errors import FormatError, PosencError
from ..table import Param
from ._rom_words import check_storage
from .limits import MAX_METADATA
from .npy import nbytes, parse_meta

#: The most comment lines posenc reads at the top of a ROM image (it writes four or five).
MAX_COMMENT_LINES = 64
#: The longest comment line posenc reads: its metadata line, and a little.
MAX_LINE = MAX_METADATA + 64
#: The keys of the metadata line.
META_KEYS = ("element", "generator", "key", "kind", "params", "shape", "storage", "width")
#: The storage types a ROM image holds, as the metadata spells them (little-endian numpy ``descr``).
_STORAGE = re.compile(r"<[iuf][248]|\|[iub]1")
_PRINTABLE = re.compile(rb"[\t\x20-\x7e]*")
#: What a comment line never shows as it is (besides what is not printable ASCII): an escape's own backslash, and
#: what ends or starts a comment or a statement in one of the three formats.
_UNSAFE = frozenset("\\*%;")


def comment_text(text: str) -> str:
    """``text`` safe in a comment of any of the three formats: every character that is not printable ASCII, and
    ``\\ * % ;``, escaped as ``\\xNN`` (``\\uNNNN``, ``\\UNNNNNNNN``).

    Examples
    --------
    >>> comment_text("a\\n*/ 50% ;b")
    'a\\\\x0a\\\\x2a/ 50\\\\x25 \\\\x3bb'
    """
    out = []
    for char in text:
        code = ord(char)
        if 0x20 <= code < 0x7F and char not in _UNSAFE:
            out.append(char)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def meta_line(meta: dict[str, Any]) -> str:
    """The metadata as one line of JSON that is safe in a comment of any of the three formats: sorted keys, ASCII,
    and ``*``, ``%``, ``;`` spelled as JSON escapes (``\\u002a``); ``FormatError`` for a NaN or infinity."""
    try:
        text = json.dumps(meta, sort_keys=True, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except ValueError:
        raise FormatError("a ROM image records its parameters as JSON, which holds no NaN or infinity") from None
    for char in sorted(_UNSAFE - {"\\"}):  # only ever inside JSON strings, where an escape means the same
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


@dataclass(frozen=True)
class Meta:
    """What the metadata line of a ROM image says, checked."""

    kind: str
    params: dict[str, Param]
    key: str
    element: str
    width: int
    storage: np.dtype
    shape: tuple[int, ...]


def read_comments(fp: BinaryIO, leader_text: str, name: str) -> tuple[Meta, bytes, int]:
    """The metadata, line end and number of the comment lines at the top; ``fp`` is left after them."""
    leader = leader_text.encode("ascii")
    tag = leader + b" posenc: "
    found: bytes | None = None
    eol = b""
    count = 0
    while True:
        start = fp.tell()
        line = fp.readline(MAX_LINE + 3)
        if not line.startswith(leader):
            fp.seek(start)
            break
        count += 1
        if count > MAX_COMMENT_LINES:
            raise FormatError(
                f"the {name} file starts with more than the {MAX_COMMENT_LINES} comment lines posenc reads"
            )
        if not line.endswith(b"\n") and len(line) <= MAX_LINE:
            raise FormatError(f"the {name} file ends inside its comments (line {count}), before its words")
        this = b"\r\n" if line.endswith(b"\r\n") else b"\n"
        body = line[: -len(this)] if line.endswith(b"\n") else line
        if len(body) > MAX_LINE:
            raise FormatError(f"{name} line {count} is longer than the {MAX_LINE} bytes posenc reads")
        eol = eol or this
        if this != eol:
            raise FormatError(f"{name} line {count} ends otherwise than line 1 (LF and CRLF mixed)")
        if not _PRINTABLE.fullmatch(body):
            raise FormatError(f"{name} line {count} is not printable ASCII text: {body[:60]!r}")
        if body.startswith(tag):
            if found is not None:
                raise FormatError(f"{name} line {count} is a second posenc metadata line")
            found = body[len(tag) :]
    if found is None:
        raise FormatError(
            f"not a {name} file posenc wrote: it has no '{leader_text} posenc: {{...}}' metadata line at the top; "
            "posenc reads back only the ROM images it writes (the words alone do not say their element type or "
            "shape)"
        )
    return _parse(found, name), eol, count


def _parse(text: bytes, name: str) -> Meta:
    """The checked metadata line (see the module docstring)."""
    what = f"{name} metadata line"
    kind, params, meta = parse_meta(text, what)
    if sorted(meta) != list(META_KEYS):
        odd = sorted(set(meta) ^ set(META_KEYS))
        raise FormatError(f"the {what} must hold exactly {', '.join(META_KEYS)}; {odd[0][:40]!r} is wrong")
    key, element, width, storage, shape = (meta[k] for k in ("key", "element", "width", "storage", "shape"))
    generator = meta["generator"]
    if not isinstance(generator, str) or not generator.startswith("posenc "):
        raise FormatError(f"the {what} does not name posenc as its generator")
    if not isinstance(key, str) or not key:
        raise FormatError(f"the {what} must name the array: a non-empty string key")
    if not isinstance(storage, str) or not _STORAGE.fullmatch(storage):
        raise FormatError(
            f"the {what} names the storage {str(storage)[:40]!r}; posenc writes <f2 to <f8, <i2 to "
            "<i8, <u2 to <u8, |i1, |u1, |b1"
        )
    dtype = np.dtype(storage)
    if not isinstance(shape, list):
        raise FormatError(f"the {what}'s shape must be a list of sizes, got {str(shape)[:40]}")
    nbytes(shape, dtype.itemsize, f"the array of the {name}")
    if not isinstance(element, str) or isinstance(width, bool) or not isinstance(width, int):
        raise FormatError(f"the {what} must hold a string element and an integer width")
    try:
        implied = element_of(params, dtype)
        implied_width = word_bits(implied)
    except (PosencError, ValueError, TypeError, KeyError):
        raise FormatError(f"the {what}'s parameters do not name an element type posenc knows") from None
    if implied != element or implied_width != width:
        raise FormatError(
            f"the {what} says {element[:40]!r} in {width}-bit words, and its parameters and storage {storage} make "
            f"{implied} in {implied_width}-bit words"
        )
    check_storage(dtype.newbyteorder("="), width, element)
    return Meta(kind, params, key, element, width, dtype, tuple(shape))
