"""Opening a file posenc reads: only a regular file is read, whatever the path names.

Every file posenc reads may be hostile, and the path it is given may name a FIFO (whose ``open`` blocks until a
writer comes), a device (``/dev/zero``: endless bytes) or a socket, or a link to one. :func:`open_regular` opens
the path without blocking and checks what it opened (``fstat`` on the open file: no race between the check and the
read), so such a path is refused before a byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from ..errors import FormatError

__all__ = ["open_regular"]


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
