"""The stamp of ``posenc build --stamp``: make's remedy for the outputs posenc leaves untouched.

make compares time stamps only. posenc leaves an output that already holds its new bytes untouched, so that nothing
that depends on it is rebuilt; but once the manifest is newer than such an output, a make rule whose targets are the
outputs runs posenc again at every build. The standard remedy is a stamp: the rule's one target, updated at every
successful run, on which the outputs depend with an empty recipe. make then runs posenc only when the stamp is older
than the manifest or a file an entry reads (the depfile, with ``--stamp``, names the stamp as its one target), and
reads each output's own time stamp again after it ran, so only what depends on a table that changed is rebuilt.
docs/build.md shows the Makefile.

The stamp holds one line, :data:`STAMP_TEXT`. posenc writes it when it is missing and otherwise only sets its time
to now; a file already there that holds anything else is refused before anything is written, so a stamp named by
mistake (``--stamp main.c``) is never touched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from ..errors import FormatError, OutputError
from ..system import atomic
from ..system.files import open_regular
from .depfile import check_side_file
from .reader import Manifest

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["STAMP_TEXT", "check_stamp", "touch_stamp"]

#: What a stamp holds: its time is what make reads; the text says what the file is, and that posenc wrote it.
STAMP_TEXT = b"posenc build stamp: its time is that of the last successful build\n"


def check_stamp(manifest: Manifest, stamp: PathLike) -> None:
    """Refuse, before any work, a stamp that cannot be written: the manifest, one of its outputs or a path outside
    its root (``SpecError``, ``param="stamp"``), or an unwritable path or a file posenc did not write
    (``OutputError``)."""
    check_side_file(manifest, stamp, "the stamp", "stamp")
    atomic.check_writable(Path(os.fspath(stamp)))
    _check_ours(Path(os.fspath(stamp)))


def touch_stamp(stamp: PathLike) -> Path:
    """Set the stamp's time to now, writing it first when it is missing (atomically, as every output); a file
    there that posenc did not write raises ``OutputError`` and is left as it is."""
    target = Path(os.fspath(stamp))
    if not _check_ours(target):
        with atomic.atomic_outputs([target]) as (fp,):
            fp.write(STAMP_TEXT)
    os.utime(os.path.realpath(target))
    return target


def _check_ours(path: Path) -> bool:
    """Whether a stamp is already at ``path``; ``OutputError`` when another file is."""
    try:
        with open_regular(path) as fp:  # a FIFO cannot block the open
            head = fp.read(len(STAMP_TEXT) + 1)
    except FileNotFoundError:
        return False
    except FormatError:
        head = b""  # not a regular file: not a stamp
    except OSError as exc:
        raise OutputError(f"cannot read the stamp {str(path)!r}: {exc.strerror or exc}") from None
    if head != STAMP_TEXT:
        raise OutputError(f"the stamp {str(path)!r} is a file posenc did not write: name another file (a new one, "
                          "which posenc creates), or remove it")  # fmt: skip
    return True
