"""Reading the values of a C initializer (the value layer of :mod:`posenc_cli.formats.c.reader`).

Values are read as the C compiler reads them, exactly: ``float`` decimals (``0.84147096f``) and hex floats
(``0x1.aed548p-1f``) are correctly rounded to float32 (a value read as float64 that lands exactly half-way between
two float32s is decided from its digits); ``double`` literals are correctly rounded to float64;
``_Float16``/``__fp16`` literals are floats converted to binary16, as C converts them; bit patterns (``0x3C00 /*
1.0 */``) are viewed as their type (bfloat16 stays ``<u2`` bit patterns, as posenc stores it); q15/q7/int8 codes
and int8/int16/int32/int64 integers are read as exact integers (``(-2147483647 - 1)``, ``INT64_C(5000000000)``,
``(-INT64_C(9223372036854775807) - 1)`` too: :mod:`~posenc_cli.formats.c.elements`), each checked against its type's
range. (The reader then refuses any spelling but posenc's own; reading other spellings exactly keeps that refusal a
matter of bytes, never of a value read wrong.)

Bounded memory: the initializer is parsed in blocks of whole rows of about :data:`CHUNK` bytes; each block's syntax
(rows of exactly the declared width; for an N-D array, the braces of every level around them, exactly where the
shape puts them) is checked in linear time before NumPy converts it; the reader claims the array from the
:class:`~posenc_cli.formats.limits.Budget` before it is allocated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import BinaryIO

import numpy as np

from ...errors import FormatError
from ..text.spell import storage as storage_of

#: Bytes read from the file at a time, and of initializer converted at a time (whole rows).
CHUNK = 1 << 18
#: The longest line outside an initializer: the command line of the comment is the longest posenc writes.
MAX_LINE = 1 << 16
#: Bytes of initializer text per value at most, separators and a value comment included (posenc's longest,
#: ``-2.2250738585072014e-308,\n     `` or ``0x3C00 /* 0.00063085556 */, ``, is under 40).
MAX_VALUE_BYTES = 64

#: A C floating literal without suffix, as posenc writes them: a decimal with a point or an exponent, or a hex float.
#: Each text matches in one way only, so that a row that fails costs linear time, never a backtracking explosion.
_NUMBER = (
    rb"-?(?:0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"
    rb"|[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"
)
LITERALS = {
    "float": _NUMBER + rb"f",
    "_Float16": _NUMBER + rb"f",
    "__fp16": _NUMBER + rb"f",
    "double": _NUMBER,
    "uint16_t": rb"0[xX][0-9a-fA-F]{1,4}",
    "uint32_t": rb"0[xX][0-9a-fA-F]{1,8}",
    "uint64_t": rb"0[xX][0-9a-fA-F]{1,16}",
    "int16_t": rb"-?[0-9]{1,6}",
    "int8_t": rb"-?[0-9]{1,4}",
    "int32_t": rb"\(-2147483647 - 1\)|-?[0-9]{1,11}",
    "int64_t": rb"\(-INT64_C\(9223372036854775807\) - 1\)|-?INT64_C\([0-9]{1,20}\)|-?[0-9]{1,11}",
}
#: What the minima and ``INT64_C(...)`` are, for the integer conversion (their syntax checked before).
_INT_SPELLINGS = (
    (b"(-2147483647 - 1)", b"-2147483648"),
    (b"(-INT64_C(9223372036854775807) - 1)", b"-9223372036854775808"),
    (b"INT64_C(", b""),
    (b")", b""),
)
#: Bytes of initializer text per brace pair of an N-D array at most: its two lines' indentation (four spaces a
#: level), braces, comma and line ends.
MAX_GROUP_BYTES = 8 * 8 + 16
_COMMENT = re.compile(rb"/\*[^*]*\*/")


class Stream:
    """Lines and delimited runs of bytes from a binary file object, through one buffer."""

    def __init__(self, fp: BinaryIO) -> None:
        self._fp = fp
        self._buf = b""
        self._pos = 0

    def _fill(self) -> bool:
        more = self._fp.read(CHUNK)
        if not more:
            return False
        self._buf = self._buf[self._pos :] + more
        self._pos = 0
        return True

    def readline(self) -> bytes:
        """The next line with its ``\\n``; the rest of the file when it has none; ``b""`` at the end."""
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                line = self._buf[self._pos : end + 1]
                self._pos = end + 1
                break
            if len(self._buf) - self._pos > MAX_LINE:
                raise FormatError(f"a line is longer than {MAX_LINE} bytes: not a file posenc wrote")
            if not self._fill():
                line, self._buf, self._pos = self._buf[self._pos :], b"", 0
                break
        if len(line) > MAX_LINE:
            raise FormatError(f"a line is longer than {MAX_LINE} bytes: not a file posenc wrote")
        return line

    def until(self, end: bytes, limit: int) -> Iterator[bytes]:
        """Pieces of the file up to ``end`` (consumed, not yielded); ``FormatError`` past ``limit`` bytes or at EOF."""
        seen = 0
        while True:
            stop = self._buf.find(end, self._pos)
            piece = self._buf[self._pos : stop if stop >= 0 else len(self._buf)]
            seen += len(piece)
            if seen > limit:
                raise FormatError(
                    "an initializer is longer than its values can be: the file was edited or is not posenc's"
                )
            if stop >= 0:
                self._pos = stop + len(end)
                if piece:
                    yield piece
                return
            self._pos = len(self._buf)
            if piece:
                yield piece
            if not self._fill():
                raise FormatError("truncated file: an initializer ends before its closing '};'")


def read_initializer(stream: Stream, ctype: str, name: str, shape: tuple[int, ...]) -> tuple[np.ndarray, bool]:
    """The values of one initializer (the stream is just after its ``= {`` line), as the storage of element type
    ``name``, and whether a hexadecimal literal was seen. The caller has claimed the array's bytes."""
    storage = _storage(name)
    count = math.prod(shape)
    out = np.empty(shape, storage)
    flat = out.reshape(-1)
    literal = re.compile(LITERALS[ctype])
    width = shape[-1]
    limit = count * MAX_VALUE_BYTES + 1024
    if len(shape) > 2:
        groups = sum(math.prod(shape[:depth]) for depth in range(1, len(shape)))
        return _read_nested(stream, ctype, name, out, literal, limit + groups * MAX_GROUP_BYTES)
    what = f"{' x '.join(map(str, shape))} {ctype} values"
    hexadecimal = False
    if len(shape) == 1:
        body = b"".join(stream.until(b";", limit)).rstrip()
        if not body.endswith(b"}"):
            raise FormatError(f"the initializer of {what} does not end with '}}'")
        text = _strip_comments(body[:-1])
        if _skeleton(text, literal) != b"#," * (width - 1) + b"#":
            raise FormatError(f"the initializer is not a list of {what} as posenc writes them")
        flat[:] = convert(text, ctype, name)
        return out, b"x" in text.lower()
    row = b"{" + b"#," * (width - 1) + b"#},"
    done = 0

    def take(block: bytes) -> None:
        nonlocal done, hexadecimal
        text = _strip_comments(block)
        skeleton = _skeleton(text, literal)
        rows = len(skeleton) // len(row)
        if skeleton != row * rows:
            at = _first_difference(skeleton, row * (rows + 1))
            raise FormatError(
                f"the initializer is not rows of {width} {ctype} values as posenc writes them "
                f"(row {done // width + at // len(row) + 1})"
            )
        if done + rows * width > count:
            raise FormatError(f"the initializer holds more than the {shape[0]} rows the comment gives")
        if rows:
            values = text.translate(None, b"{}").rstrip().rstrip(b",")
            hexadecimal = hexadecimal or b"x" in values.lower()
            flat[done : done + rows * width] = convert(values, ctype, name)
        done += rows * width

    _feed(stream, limit, take, what)
    if done != count:
        raise FormatError(
            f"the initializer holds {done // width} rows, the comment gives {shape[0]}: truncated or edited"
        )
    return out, hexadecimal


def _feed(stream: Stream, limit: int, take: Callable[[bytes], None], what: str) -> None:
    """Hand an initializer to ``take`` in blocks of whole rows (each ending ``},``, about :data:`CHUNK` bytes), up to
    its ``;``; the last block without the initializer's closing brace, which must be there."""
    pending = b""
    for piece in stream.until(b";", limit):
        pending += piece
        cut = pending.rfind(b"},")
        if cut >= 0 and len(pending) >= CHUNK:
            take(pending[: cut + 2])
            pending = pending[cut + 2 :]
    pending = pending.rstrip()
    if not pending.endswith(b"}"):
        raise FormatError(f"the initializer of {what} does not end with '}}'")
    take(pending[:-1])


def _read_nested(
    stream: Stream, ctype: str, name: str, out: np.ndarray, literal: re.Pattern[bytes], limit: int
) -> tuple[np.ndarray, bool]:
    """The values of an N-D initializer (N > 2) into ``out``, its syntax checked block by block against the one
    :func:`_structure` gives (each row replaced by ``R``)."""
    shape = out.shape
    flat = out.reshape(-1)
    row = b"{" + b"#," * (shape[-1] - 1) + b"#},"
    expected = _Expected(_structure(shape[:-1]))
    what = f"{' x '.join(map(str, shape))} {ctype} values"
    leading = len(shape) - 2
    layout = f"rows of {shape[-1]} in braces for each index of the first {leading} ax{'is' if leading == 1 else 'es'}"
    done = 0
    hexadecimal = False

    def take(block: bytes) -> None:
        nonlocal done, hexadecimal
        text = _strip_comments(block)
        skeleton = _skeleton(text, literal)
        rows = b"not posenc's" if b"R" in skeleton else skeleton.replace(row, b"R")
        if b"#" in rows or not expected.next_is(rows):
            raise FormatError(f"the initializer is not {what} as posenc writes them, {layout} (after value {done})")
        values = literal.findall(text)
        if done + len(values) > flat.size:  # cannot be: the structure holds as many
            raise FormatError(f"the initializer holds more than the {what} the comment gives")
        if values:
            joined = b",".join(values)
            hexadecimal = hexadecimal or b"x" in joined.lower()
            flat[done : done + len(values)] = convert(joined, ctype, name)
        done += len(values)

    _feed(stream, limit, take, what)
    if done != flat.size:
        raise FormatError(f"the initializer holds {done} values, the comment gives {flat.size}: truncated or edited")
    if not expected.at_end():
        raise FormatError(f"the initializer of {what} ends before its braces close ({layout}): truncated or edited")
    return out, hexadecimal


def _structure(shape: tuple[int, ...]) -> Iterator[bytes]:
    """The skeleton of the rows of an array whose leading axes are ``shape`` (two or more), each row as ``R``: a
    brace pair and a comma (``{...},``) around each index of every axis but the last, in pieces of at most about
    :data:`CHUNK` bytes (an index whose skeleton is small is repeated in one piece)."""
    if len(shape) == 1:
        for lo in range(0, shape[0], CHUNK):
            yield b"R" * min(CHUNK, shape[0] - lo)
        return
    if _length(shape[1:]) <= CHUNK // 64:
        unit = b"{" + b"".join(_structure(shape[1:])) + b"},"
        step = CHUNK // len(unit)
        for lo in range(0, shape[0], step):
            yield unit * min(step, shape[0] - lo)
        return
    for _ in range(shape[0]):
        yield b"{"
        yield from _structure(shape[1:])
        yield b"},"


def _length(shape: tuple[int, ...]) -> int:
    """The length of :func:`_structure` of ``shape``."""
    return shape[0] if len(shape) == 1 else shape[0] * (_length(shape[1:]) + 3)


class _Expected:
    """The bytes an iterator of pieces yields, taken in runs of any length (:meth:`next_is`)."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces
        self._buf = b""

    def next_is(self, text: bytes) -> bool:
        """Whether the next ``len(text)`` bytes are ``text``; they are consumed."""
        parts = [self._buf]
        have = len(self._buf)
        while have < len(text):
            piece = next(self._pieces, b"")
            if not piece:
                break
            parts.append(piece)
            have += len(piece)
        joined = b"".join(parts)
        self._buf = joined[len(text) :]
        return joined[: len(text)] == text

    def at_end(self) -> bool:
        return not self._buf and not next(self._pieces, b"")


def _storage(name: str) -> np.dtype:
    found = storage_of(name)
    if found is None:
        raise FormatError(f"{name} is not an element type posenc writes to C")
    return found


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    differ = np.frombuffer(a, np.uint8, n) != np.frombuffer(b, np.uint8, n)
    return int(np.argmax(differ)) if differ.any() else n


def _skeleton(text: bytes, literal: re.Pattern[bytes]) -> bytes:
    """``text`` with each literal replaced by ``#`` and whitespace dropped: ``{#,#,#},`` per well-formed row.

    Anything that is not a literal, a separator or a brace survives into the skeleton, so comparing it with the
    expected one checks the syntax in linear time and memory (one regular expression over a whole block keeps a
    backtracking record per repetition: forty times the block's size).
    """
    if b"#" in text:
        return b"not posenc's"
    skeleton: bytes = literal.sub(b"#", text).translate(None, b" \t\r\n")
    return skeleton


def _strip_comments(text: bytes) -> bytes:
    return _COMMENT.sub(b" ", text) if b"/*" in text else text


def convert(text: bytes, ctype: str, name: str) -> np.ndarray:
    """Comma-separated literals of ``ctype`` (syntax already checked) as stored values of element type ``name``."""
    storage = _storage(name)
    if ctype.startswith("int"):
        info = np.iinfo(storage)
        if ctype == "int64_t":  # past int64, np.fromstring saturates: Python's integers are exact
            for spelled, plain in _INT_SPELLINGS:
                text = text.replace(spelled, plain)
            exact = [int(token) for token in text.split(b",")]
            if exact and (min(exact) < info.min or max(exact) > info.max):
                raise FormatError(f"a {name} value is outside [{info.min}, {info.max}]")
            return np.array(exact, storage)
        ints = np.fromstring(text.replace(*_INT_SPELLINGS[0]), np.int64, sep=",")  # at most 11 digits: exact
        if ints.size and (ints.min() < info.min or ints.max() > info.max):
            raise FormatError(f"a {name} value is outside [{info.min}, {info.max}]")
        return ints.astype(storage)
    if ctype.startswith("uint"):
        bits = np.array([int(token, 16) for token in text.split(b",")], f"u{int(ctype[4:6]) // 8}")
        return bits if name == "bfloat16" else bits.view(storage)
    tokens: list[bytes] | None = None

    def token(i: int) -> str:
        nonlocal tokens
        if tokens is None:
            tokens = text.split(b",")
        return tokens[i].strip().decode("ascii").removesuffix("f")

    if b"x" in text or b"X" in text:  # hexadecimal floats: Python reads them, correctly rounded to float64
        y = np.array(
            [_hex_or_decimal(t.strip().rstrip(b"f") if ctype != "double" else t.strip()) for t in text.split(b",")]
        )
    else:
        y = np.fromstring(text.replace(b"f", b"") if ctype != "double" else text, np.float64, sep=",")
    if not np.isfinite(y).all():
        raise FormatError(f"a {ctype} literal is out of range")
    if ctype == "double":
        return y
    single = _to_float32(y, lambda i: _exact(token(i)))
    return single if name == "float32" else single.astype(storage)


def _hex_or_decimal(text: bytes) -> float:
    return float.fromhex(text.decode("ascii")) if b"x" in text.lower() else float(text)


def _exact(text: str) -> Fraction:
    """The exact value of a decimal or hexadecimal floating literal (without suffix)."""
    if "x" not in text.lower():
        return Fraction(text)
    negative = text.startswith("-")
    mantissa, exponent = text.lstrip("-")[2:].lower().split("p")
    whole, _, fraction = mantissa.partition(".")
    value = Fraction(int(whole + fraction or "0", 16), 16 ** len(fraction)) * Fraction(2) ** int(exponent)
    return -value if negative else value


def _to_float32(y: np.ndarray, exact: Callable[[int], Fraction]) -> np.ndarray:
    """Float32 nearest to the literals whose correctly rounded float64 values are ``y``.

    Rounding ``y`` again gives the float32 nearest to the literal unless ``y`` is exactly half-way between two
    float32s (a float32 rounding boundary strictly between the literal and ``y`` would be a float64 nearer to the
    literal than ``y``); those few are decided from the literal's exact value.
    """
    with np.errstate(over="ignore"):
        single = y.astype(np.float32)
    if not np.isfinite(single).all():
        raise FormatError("a float literal is out of the range of float")
    back = single.astype(np.float64)
    off = np.flatnonzero(y != back)
    if off.size:
        towards = np.where(y[off] > back[off], np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
        with np.errstate(over="ignore"):  # past float32's largest value: infinity, never half-way
            other = np.nextafter(single[off], towards)
        halfway = y[off] == (back[off] + other.astype(np.float64)) / 2
        for i, alternative in zip(off[halfway].tolist(), other[halfway].tolist(), strict=True):
            value, midpoint = exact(i), Fraction(float(y[i]))
            if value != midpoint and (value > midpoint) == (alternative > float(single[i])):
                single[i] = alternative
    return single
