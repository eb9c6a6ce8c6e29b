"""The check that a C file is, byte for byte, what posenc writes (the comparison layer of
:mod:`posenc_cli.formats.c_read`).

:func:`compare` writes the file again with :func:`posenc_cli.formats.c.render` into a comparison with the file,
block by block (no second copy of a large file is held), and refuses it at the first byte that differs, naming its
line, what the file has there and what posenc writes.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from .._version import __version__
from ..errors import FormatError
from ..table import Table
from . import c
from ._c_comment import DID_NOT_WRITE
from .options import WriteOptions


class _Expect:
    """A :class:`~posenc_cli.formats.c.Sink` that compares what the writer writes with the file, block by block."""

    def __init__(self, fp: BinaryIO, start: int, hint: str = "") -> None:
        fp.seek(start)
        self._fp = fp
        self._hint = hint
        self._line = 1
        self._tail = b""  # the current line up to the last block's end (at most 80 bytes of it)

    def write(self, data: bytes, /) -> None:
        got = self._fp.read(len(data))
        if got != data:
            n = min(len(got), len(data))
            differ = np.frombuffer(got, np.uint8, n) != np.frombuffer(data, np.uint8, n)
            at = int(np.argmax(differ)) if differ.any() else n
            line = self._line + data.count(b"\n", 0, at)
            start = data.rfind(b"\n", 0, at) + 1
            head = self._tail if start == 0 else b""
            found = _show(head + got[start:] + (self._fp.read(80) if b"\n" not in got[at:] else b""))
            expected = _show(head + data[start:])
            if at == len(got):
                raise FormatError(
                    f"{DID_NOT_WRITE}: it ends at line {line}, where posenc writes {expected}{self._hint}"
                )
            raise FormatError(f"{DID_NOT_WRITE}: line {line} is {found}, where posenc writes {expected}{self._hint}")
        self._line += data.count(b"\n")
        cut = data.rfind(b"\n")
        self._tail = (data[cut + 1 :] if cut >= 0 else self._tail + data)[-80:]

    def finish(self) -> None:
        if self._fp.read(1):
            raise FormatError(
                f"{DID_NOT_WRITE}: it goes on after line {self._line - 1}, where posenc's file ends{self._hint}"
            )


def _show(text: bytes) -> str:
    """The first line of ``text``, shortened, quoted and escaped for one line of a terminal."""
    line = text.split(b"\n", 1)[0]
    shown = line[:60].decode("utf-8", "replace") + ("..." if len(line) > 60 else "")
    return repr(shown)


def compare(
    variant: c.Variant,
    table: Table,
    options: WriteOptions,
    version: str,
    fp: BinaryIO,
    start: int,
    identity: str | None = None,
) -> None:
    """``FormatError`` unless ``fp`` from ``start`` holds exactly what the writer writes for ``table`` (with the
    table identity ``identity``, if given)."""
    hint = "" if version == __version__ else f" (it names posenc {version}; this is {__version__}: write it again)"
    expect = _Expect(fp, start, hint)
    c.render(variant, table, expect, options, version=version, identity=identity)
    expect.finish()
