"""ROM words (the word layer of :mod:`posenc_cli.formats.rom`): values to fixed-width hex words and back, and the
fixed-length lines that hold them.

A word is the bit pattern of one value, ``width`` bits (:func:`posenc_cli.dtypes.word_bits` of its element type):
the IEEE pattern of a float, the bits of a bfloat16, the two's complement of a signed integer or fixed-point code
cut to exactly ``width`` bits (``fixed18.16``, stored in an int32, keeps its low 18), an unsigned integer or a
boolean as it is. It is spelled in ``ceil(width / 4)`` lower-case hex digits, most significant first.

Every word line of a file has the same length (:class:`Lines`: the MIF address is zero-padded), so the lines are
written and read as rows of a byte matrix, a block at a time, and every byte of a line that is not a word digit is
checked against what posenc writes there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ..errors import FormatError

#: Bytes of lines read (and written) at a time: a block of words costs a few times this much memory.
CHUNK = 1 << 20
#: The spelling of each nibble.
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
#: Each byte's nibble value (either case), 255 where the byte is not a hex digit.
_NIBBLE = np.full(256, 255, np.uint8)
_NIBBLE[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_NIBBLE[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_NIBBLE[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


def digits_of(width: int) -> int:
    """Hex digits of a word of ``width`` bits.

    Examples
    --------
    >>> digits_of(32), digits_of(18), digits_of(8)
    (8, 5, 2)
    """
    return -(-width // 4)


def check_storage(dtype: np.dtype, width: int, element: str) -> None:
    """``FormatError`` unless values stored as ``dtype`` can be words of ``width`` bits: booleans, integers and
    IEEE floats of at most 8 bytes, all their bits (a signed integer may be narrower: a fixed-point code)."""
    bits = 8 * dtype.itemsize
    if dtype.kind not in "biuf" or dtype.itemsize > 8 or dtype.kind == "f" and dtype.itemsize == 1:
        raise FormatError(f"a ROM image holds integers and IEEE floats, not {dtype} values ({element})")
    if not 1 <= width <= bits or (dtype.kind != "i" and width != bits):
        raise FormatError(f"{element} values stored as {dtype} cannot be words of {width} bits")


def to_words(flat: np.ndarray, width: int, element: str) -> np.ndarray:
    """The ``width``-bit words (``uint64``) of the 1-D array ``flat``; ``FormatError`` for a signed value that
    ``width`` bits of two's complement cannot hold (a fixed-point code outside its type's range)."""
    native = np.ascontiguousarray(flat, flat.dtype.newbyteorder("="))
    unsigned = native.view(np.dtype(f"u{native.dtype.itemsize}"))
    if native.dtype.kind != "i" or width == 8 * native.dtype.itemsize:
        return unsigned.astype(np.uint64)
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    outside = (native < low) | (native > high)
    if outside.any():
        value = int(native[np.argmax(outside)])
        raise FormatError(
            f"the value {value} does not fit the {width} bits of {element} (two's complement, [{low}, {high}])"
        )
    masked: np.ndarray = (native.astype(np.int64) & np.int64((1 << width) - 1)).astype(np.uint64)
    return masked


def from_words(words: np.ndarray, dtype: np.dtype, width: int) -> np.ndarray:
    """Values of ``dtype`` (native order) from ``width``-bit words (each below ``2**width``): the inverse of
    :func:`to_words`, a signed narrower word sign-extended."""
    native = dtype.newbyteorder("=")
    bits = 8 * native.itemsize
    if native.kind != "i" or width == bits:
        values: np.ndarray = words.astype(np.dtype(f"u{native.itemsize}")).view(native)
        return values
    signed = words.astype(np.int64)
    signed -= (signed >> np.int64(width - 1)) << np.int64(width)
    return signed.astype(native)


def hex_digits(words: np.ndarray, digits: int) -> np.ndarray:
    """The ``(len(words), digits)`` matrix of the words' hex digits (ASCII bytes), most significant first.

    Examples
    --------
    >>> hex_digits(np.array([0x3F800000, 7], np.uint64), 8).tobytes()
    b'3f80000000000007'
    """
    shifts = np.arange(4 * (digits - 1), -1, -4, dtype=np.uint64)
    nibbles = (words.astype(np.uint64)[:, None] >> shifts[None, :]) & np.uint64(15)
    spelled: np.ndarray = _HEX[nibbles]
    return spelled


def _line_text(data: bytes, start: int) -> bytes:
    """The line of ``data`` that starts at ``start``, without its line end, at most 80 bytes."""
    end = data.find(b"\n", start, start + 81)
    line = data[start : start + 80 if end < 0 else end]
    return line[:-1] if line.endswith(b"\r") else line


@dataclass(frozen=True)
class Lines:
    """The word lines of one file: ``lead``, the address in ``address_digits`` hex digits (MIF), ``between``, the
    word in ``digits`` hex digits, ``end`` (``last_end`` on the last line), the line end ``eol``.

    ``name`` names the format in messages (``".mem"``), ``first_line`` is the line number of the first word line
    and ``after`` the line that follows the last (``END;`` in MIF), without its line end.
    """

    name: str
    digits: int
    eol: bytes = b"\n"
    lead: bytes = b""
    address_digits: int = 0
    between: bytes = b""
    end: bytes = b""
    last_end: bytes = b""
    first_line: int = 1
    after: bytes = b""

    @property
    def length(self) -> int:
        """Bytes of each line, its line end included."""
        return len(self.lead) + self.address_digits + len(self.between) + self.digits + len(self.end) + len(self.eol)

    @property
    def _word_at(self) -> int:
        return len(self.lead) + self.address_digits + len(self.between)

    def _template(self, lo: int, hi: int, total: int) -> np.ndarray:
        """Lines ``lo`` to ``hi`` (of ``total``) as posenc writes them, every word digit ``0``."""
        line = self.lead + b"0" * self.address_digits + self.between + b"0" * self.digits + self.end + self.eol
        rows = np.empty((hi - lo, self.length), np.uint8)
        rows[:] = np.frombuffer(line, np.uint8)
        if self.address_digits:
            addresses = np.arange(lo, hi, dtype=np.uint64)
            rows[:, len(self.lead) : self._word_at - len(self.between)] = hex_digits(addresses, self.address_digits)
        if hi == total > lo:
            at = self._word_at + self.digits
            rows[-1, at : at + len(self.last_end)] = np.frombuffer(self.last_end, np.uint8)
        return rows

    def _example(self, index: int, total: int) -> bytes:
        """The ``index``-th line of ``total`` as posenc writes it (word ``0``), without its line end."""
        return self._template(index, index + 1, total)[0, : -len(self.eol)].tobytes()

    def write(self, words: np.ndarray, lo: int, total: int) -> bytes:
        """The lines of ``words``, the ``lo``-th to ``lo + len(words)``-th words of ``total``."""
        rows = self._template(lo, lo + len(words), total)
        rows[:, self._word_at : self._word_at + self.digits] = hex_digits(words, self.digits)
        return rows.tobytes()

    def read(self, fp: BinaryIO, total: int, width: int, what: str) -> Iterator[tuple[int, np.ndarray]]:
        """``(first index, words)`` for each block of the ``total`` word lines at ``fp``; ``FormatError`` at the
        first line that is not a word line as posenc writes them, holds a word wider than ``width`` bits (``what``
        names the words: ``"the 18 bits of fixed18.16"``), or is missing."""
        per = max(1, CHUNK // self.length)
        word = slice(self._word_at, self._word_at + self.digits)
        for lo in range(0, total, per):
            want = min(per, total - lo)
            data = fp.read(want * self.length)
            have = len(data) // self.length
            rows = np.frombuffer(data, np.uint8, have * self.length).reshape(have, self.length)
            layout = rows != self._template(lo, lo + have, total)
            layout[:, word] = False
            nibbles = _NIBBLE[rows[:, word]]
            bad = layout.any(axis=1) | (nibbles == 255).any(axis=1)
            words = np.zeros(have, np.uint64)
            for column in range(self.digits):
                words = (words << np.uint64(4)) | nibbles[:, column].astype(np.uint64)
            if width < 64:
                bad |= (words >> np.uint64(width)) != 0
            if bad.any() or have < want:
                row = int(np.argmax(bad)) if bad.any() else have
                raise self._refusal(data, lo + row, row, total, what)
            yield lo, words

    def _refusal(self, data: bytes, index: int, row: int, total: int, what: str) -> FormatError:
        """What is wrong with the ``index``-th word line (of ``total``), the ``row``-th line of the block ``data``."""
        where = f"{self.name} line {self.first_line + index}"
        if row * self.length >= len(data):
            return FormatError(f"the {self.name} file ends after {index} of the {total} words its metadata declares")
        line = _line_text(data, row * self.length)
        if line.startswith(b"@"):
            return FormatError(
                f"{where}: address jumps ({line[:24]!r}) are not read: posenc writes every word in order, from "
                "address 0, and reads back only what it writes"
            )
        if (self.after and line == self.after) or (index < total - 1 and self._is_last(line, index)):
            return FormatError(
                f"{where}: the words end after {index + (line != self.after)} of the {total} its metadata declares"
            )
        if index == total - 1 and self.last_end != self.end and self._is_last(line, index, self.end):
            return FormatError(f"{where}: the {self.name} file holds more words than the {total} its metadata declares")
        example = self._example(index, total)
        at, to = self._word_at, self._word_at + self.digits
        if len(line) == len(example) and line[:at] == example[:at] and line[to:] == example[to:]:
            if any(_NIBBLE[byte] == 255 for byte in line[at:to]):
                return FormatError(f"{where}: {line[:40]!r} does not hold {self.digits} hex digits (0-9, a-f)")
            return FormatError(f"{where}: the word {line[at:to].decode()!r} is wider than {what}")
        return FormatError(
            f"{where}: {line[:40]!r} is not a word line as posenc writes them ({self.digits} hex digits), like "
            f"{example.decode()!r}"
        )

    def _is_last(self, line: bytes, index: int, end: bytes | None = None) -> bool:
        """Whether ``line`` is the ``index``-th line with the last line's ending (or ``end``): where the words stop."""
        end = self.last_end if end is None else end
        if self.last_end == self.end:
            return False
        head = self._example(index, index + 1)[: self._word_at]
        return re.fullmatch(re.escape(head) + rb"[0-9a-fA-F]+" + re.escape(end), line) is not None
