"""Atomic output: every file posenc writes appears whole or not at all.

Each output is written to a temporary file in its own directory (same filesystem, so the final rename is atomic),
flushed to disk, given the permissions an ordinary ``open()`` would have given it (``0o666 & ~umask``; ``mkstemp``
makes 0600), and only then renamed over the target with ``os.replace``. On any error, or an interrupt, the
temporaries are removed and the targets keep what they held before.

Large outputs are flushed to disk while they are being written (a background ``fdatasync`` every
:data:`FLUSH_BYTES`), so the disk works while the next rows are computed instead of all at the end.

Temporary files are named ``.<target name>.<random>.posenc-tmp`` so that one left behind by a killed process is
recognisable. A target that is a symbolic link is followed: the file it points to is replaced, the link stays.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

from .errors import OutputError

TMP_SUFFIX = ".posenc-tmp"
#: Bytes written between two background flushes: big enough that flushing costs nothing for small files (which
#: never reach it), small enough that the disk starts early on large ones.
FLUSH_BYTES = 64 << 20


class _FlushingFile(io.BufferedRandom):
    """A temporary output that asks the OS to write its data to disk in the background as it grows."""

    def __init__(self, raw: io.FileIO) -> None:
        super().__init__(raw, buffer_size=1 << 20)
        self._unflushed = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None

    def write(self, data: Any) -> int:
        written = super().write(data)
        self._unflushed += written
        if self._unflushed >= FLUSH_BYTES and (self._pending is None or self._pending.done()):
            self._unflushed = 0
            super().flush()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-flush")
            self._pending = self._pool.submit(os.fdatasync, self.fileno())
        return written

    def sync(self) -> None:
        """Wait for the background flush, then make every byte durable."""
        self.flush()
        self._finish()
        os.fsync(self.fileno())

    def close(self) -> None:
        self._finish()
        super().close()

    def _finish(self) -> None:
        if self._pool is not None:
            pending, self._pending = self._pending, None
            self._pool.shutdown(wait=True)
            self._pool = None
            if pending is not None:
                pending.result()


def check_writable(path: Path) -> Path:
    """The real path ``path`` will be written at; ``OutputError`` when it cannot be, before any work is done."""
    target = Path(os.path.realpath(path))
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {str(path)!r}: directory {str(parent)!r} does not exist")
    if target.is_dir():
        raise OutputError(f"cannot write {str(path)!r}: it is a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {str(path)!r}: no permission to create files in {str(parent)!r}")
    return target


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[Path]) -> Iterator[list[BinaryIO]]:
    """Open temporary files for ``paths``; on a clean exit, move each into place, else remove them all.

    The files are replaced one after another once every one of them has been written in full, so an error while
    writing any of them leaves all targets untouched. A target that already holds exactly the new bytes is left
    alone, modification time included, so make, Ninja and CMake see nothing to rebuild downstream.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "t.bin"
    >>> with atomic_outputs([out]) as (fp,):
    ...     _ = fp.write(b"abc")
    >>> out.read_bytes()
    b'abc'
    """
    targets = [check_writable(p) for p in paths]
    mode = 0o666 & ~_umask()
    temps: list[tuple[_FlushingFile, str]] = []
    try:
        for target in targets:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
            except OSError as exc:
                raise _output_error(target, exc) from None
            temps.append((_FlushingFile(io.FileIO(fd, "r+")), tmp))
        try:
            yield [fp for fp, _ in temps]
        except OSError as exc:
            if isinstance(exc, OutputError):
                raise
            raise _output_error(targets[0], exc) from None
        changed = []
        for (fp, tmp), target in zip(temps, targets, strict=True):
            try:
                fp.flush()
                if _same_content(fp, target):
                    continue
                fp.sync()
                os.fchmod(fp.fileno(), mode)
                fp.close()
            except OSError as exc:
                raise _output_error(target, exc) from None
            changed.append((tmp, target))
        for tmp, target in changed:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise _output_error(target, exc) from None
        _fsync_dirs({target.parent for _, target in changed})
    finally:
        for fp, tmp in temps:
            fp.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _same_content(fp: BinaryIO, target: Path) -> bool:
    """Whether the regular file ``target`` already holds exactly what was written to ``fp``."""
    try:
        if not target.is_file() or target.stat().st_size != os.fstat(fp.fileno()).st_size:
            return False
        with open(target, "rb") as old:
            fp.seek(0)
            while True:
                new_chunk = fp.read(1 << 20)
                if new_chunk != old.read(1 << 20):
                    return False
                if not new_chunk:
                    return True
    except OSError:
        return False


def _output_error(target: Path, exc: OSError) -> OutputError:
    cause = "no space left on the device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return OutputError(f"cannot write {str(target)!r}: {cause}")


def _umask() -> int:
    # os.umask can only be read by setting it; set it straight back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dirs(dirs: set[Path]) -> None:
    """Make the renames durable; a filesystem that cannot fsync a directory is not an error."""
    for d in dirs:
        with contextlib.suppress(OSError):
            fd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
