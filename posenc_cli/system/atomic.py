"""Atomic output: every file posenc writes appears whole or not at all.

Each output is written to a temporary file in its own directory (same filesystem, so the final rename is atomic),
flushed to disk, given the permissions of the file it replaces (a new file: those an ordinary ``open()`` would have
given it, ``0o666 & ~umask``; ``mkstemp`` makes 0600), and only then renamed over the target with ``os.replace``.
Only regular files are ever replaced: a device, a FIFO, a socket, a process's stream (``/dev/stdout``) or a read-only
file is refused before any work (:func:`check_writable`). The files of one output (``.c`` and ``.h``) are renamed
under an exclusive ``flock`` of their directory, so concurrent writers of one pair cannot interleave their renames.

On any error, an interrupt (SIGINT) or a termination the CLI turns into an exception (SIGTERM, SIGHUP:
:mod:`posenc_cli.system.signals`), the temporaries are removed and the targets keep what they held before. Two
processes writing one target each write their own temporary file: the target ends up as one of the two complete
files, never a mix.

Large outputs are flushed to disk while they are being written (a background ``fdatasync`` every
:data:`FLUSH_BYTES`), so the disk works while the next rows are computed instead of all at the end.

Temporary files and what a killed process leaves behind
-------------------------------------------------------
A temporary file is named ``.<target name>.<pid>.<random>.posenc-tmp`` (the target name cut to
:data:`NAME_BYTES` bytes, so that the whole fits the usual 255-byte limit), and its writer holds an exclusive
``flock`` on it until it is renamed or removed. Only SIGKILL (or a crash of the machine) leaves one behind. Before
writing a target, posenc removes the temporary files of *that target* whose writer is gone: the PID in the name
is not a live process (``os.kill(pid, 0)`` raises ``ProcessLookupError``) *and* nobody holds the lock. The lock
keeps a live writer's file safe where its PID means nothing (another PID namespace, another machine on a network
file system); a PID that was reused keeps a stale file until the new process ends, which is harmless. The calling
process's own PID is never considered stale (another thread may be writing). Cleaning is best effort: a file
that cannot be removed is left, and never fails the write.

Symbolic links
--------------
A target that is a symbolic link is followed, as ``open(path, "w")`` and a shell's ``>`` would: the file it points
to is replaced atomically (its temporary file lives in *that* file's directory) and the link stays. A dangling
link is followed too: posenc creates the file it names, provided that file's directory exists. A loop of links
is refused with :class:`~posenc_cli.errors.OutputError`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import OutputError
from .signals import raise_swallowed

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

TMP_SUFFIX = ".posenc-tmp"
#: The most bytes of the target's name kept in a temporary file's name: with the dot, PID, random part and suffix
#: (under 32 bytes) the name stays within the 255 bytes most file systems allow.
NAME_BYTES = 200
#: Bytes written between two background flushes: big enough that flushing costs nothing for small files (which
#: never reach it), small enough that the disk starts early on large ones.
FLUSH_BYTES = 64 << 20
#: ``os.fdatasync`` where the platform has it (not macOS).
_datasync = getattr(os, "fdatasync", os.fsync)


class _FlushingFile(io.BufferedRandom):
    """A temporary output that asks the OS to write its data to disk in the background as it grows.

    It remembers the first OS error a write, flush or truncate met (``failure``): a writer that loses it on the way
    up (h5py turns it into an unrelated ``AttributeError`` when closing a file on a full disk) cannot hide it.

    Given the ``target`` it will replace, it compares what is written with the target's bytes as it goes (while the
    writer writes in order, never seeking): :func:`same_content` then knows the answer without reading either file
    again, and while the bytes still match nothing is flushed to disk (a rewrite of an unchanged output, which is
    left alone, costs no disk writes). ``matches`` is True while every byte matched, False once one did not (or
    there is no old file), None once the writer seeked (then :func:`same_content` compares the files).
    """

    def __init__(self, raw: io.FileIO, target: Path | None = None) -> None:
        super().__init__(raw, buffer_size=1 << 20)
        self._unflushed = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None
        self.failure: OSError | None = None
        self.matches: bool | None = False
        self._old: io.FileIO | None = None
        self._old_id: tuple[int, ...] = ()
        self._written = 0
        if target is not None:
            self._open_old(target)

    def _open_old(self, target: Path) -> None:
        try:  # non-blocking: a FIFO put there since check_writable must not hang the open
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return
        self._old, self._old_id, self.matches = io.FileIO(fd, "r"), _file_id(info), True

    def _mismatch(self, state: bool | None) -> None:
        self.matches = state
        if self._old is not None:
            with contextlib.suppress(OSError):
                self._old.close()
            self._old = None

    def _compare(self, data: Any) -> None:
        assert self._old is not None
        view = memoryview(data)
        if not view.c_contiguous:
            self._mismatch(None)
            return
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        try:
            old = self._old.read(len(view)) or b""
        except OSError:
            self._mismatch(None)
            return
        if len(old) != len(view) or not _equal(old, view):
            self._mismatch(False)

    def unchanged(self, target: Path) -> bool | None:
        """Whether ``target`` holds exactly what was written, from the comparison made while writing; None when
        that comparison cannot tell (the writer seeked, or ``target`` is no longer the file compared with)."""
        try:
            info = os.stat(target)
        except OSError:
            return False  # no file there now
        if self.matches is None or not self._old_id or _file_id(info) != self._old_id:
            return None
        return self.matches and info.st_size == self._written

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if self.matches:
            self._mismatch(None)
        return super().seek(offset, whence)

    def write(self, data: Any) -> int:
        if self.matches:
            self._compare(data)
        try:
            written = super().write(data)
        except OSError as exc:
            self.failure = self.failure or exc
            raise
        self._unflushed += written
        self._written += written
        if self.matches:  # probably left alone in the end: nothing to flush
            return written
        if self._unflushed >= FLUSH_BYTES and (self._pending is None or self._pending.done()):
            self._unflushed = 0
            super().flush()
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor  # here: small outputs never import it

                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-flush")
            self._pending = self._pool.submit(_datasync, self.fileno())
        return written

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            self.failure = self.failure or exc
            raise

    def truncate(self, size: int | None = None) -> int:
        if self.matches:
            self._mismatch(None)
        try:
            return super().truncate(size)
        except OSError as exc:
            self.failure = self.failure or exc
            raise

    def sync(self) -> None:
        """Wait for the background flush, then make every byte durable."""
        self.flush()
        self._finish()
        os.fsync(self.fileno())

    def close(self) -> None:
        try:
            self._mismatch(self.matches)
            self._finish()
        finally:
            super().close()  # closes the descriptor even when flushing the buffer fails (a full disk)

    def _finish(self) -> None:
        if self._pool is not None:
            pending, self._pending = self._pending, None
            self._pool.shutdown(wait=True)
            self._pool = None
            if pending is not None:
                pending.result()


def _file_id(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _equal(old: bytes, new: memoryview) -> bool:
    if len(new) < 1 << 16:
        return old == new
    import numpy as np  # here: large blocks only; numpy compares them at memory speed

    word = np.uint64 if len(new) % 8 == 0 else np.uint8  # eight bytes at a time: half the time of bytes
    return bool(np.array_equal(np.frombuffer(old, word), np.frombuffer(new, word)))


def check_writable(path: Path, role: str = "") -> Path:
    """The real path ``path`` will be written at; ``OutputError`` when it cannot be, before any work is done.

    Refused: a name longer than the file system takes (255 bytes on Linux's), a missing directory, a directory, no
    permission, a read-only file system, an existing target that is not a regular file (a device such as
    ``/dev/null``, a FIFO, a socket: posenc would replace it with a file), a path that leads to a process's standard
    streams (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``: replacing the file behind them would wipe, say, a
    log that stdout is appended to; ``-o -`` writes to stdout), and an existing file without its owner's write
    permission (``0444``), which ``cp`` does not overwrite either.

    ``role`` says what the file is for when the user did not name it (``"the .json file 'pe.npy' needs beside it"``);
    the error names the file, then its role in brackets.
    """
    shown = f"{str(path)!r} ({role})" if role else repr(str(path))
    stream = _process_stream(path)
    if stream is not None:
        raise OutputError(
            f"cannot write {shown}: it leads to {stream}, a process's stream, not a file; use -o - to write to stdout"
        )
    target = Path(os.path.realpath(path))
    too_long = _too_long(target)
    if too_long:
        raise OutputError(f"cannot write {shown}: {too_long}")
    if target.is_symlink():  # realpath stops at a link it cannot resolve: a loop
        raise OutputError(f"cannot write {shown}: it is a loop of symbolic links")
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {shown}: directory {str(parent)!r} does not exist")
    if target.is_dir():
        raise OutputError(f"cannot write {shown}: it is a directory")
    try:
        info: os.stat_result | None = os.stat(target)
    except OSError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputError(
            f"cannot write {shown}: it exists and is not a regular file (a device, a FIFO or a socket), "
            "which posenc never replaces; use -o - to write to stdout"
        )
    if info is not None and not info.st_mode & stat.S_IWUSR:
        raise OutputError(
            f"cannot write {shown}: the file is read-only (mode {stat.S_IMODE(info.st_mode):04o}); "
            "make it writable or remove it first"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        if _read_only(parent):
            raise OutputError(f"cannot write {shown}: the file system of {str(parent)!r} is read-only")
        raise OutputError(f"cannot write {shown}: no permission to create files in {str(parent)!r}")
    return target


_STREAM = re.compile(r"/(?:proc/(?:self|thread-self|[0-9]+)/(?:task/[0-9]+/)?fd/.*|dev/fd/.*|dev/std(?:in|out|err))\Z")


def _process_stream(path: Path) -> str | None:
    """The hop of ``path``'s chain of links that names a process's file descriptor, if any."""
    hop = os.path.abspath(path)
    for _ in range(64):
        if _STREAM.match(hop) or hop.startswith("/proc/"):
            return hop
        try:
            link = os.readlink(hop)
        except OSError:
            return None
        hop = os.path.normpath(os.path.join(os.path.dirname(hop), link))
    return None


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[Path]) -> Iterator[list[BinaryIO]]:
    """Open temporary files for ``paths``; on a clean exit, move each into place, else remove them all.

    The files are replaced one after another once every one of them has been written in full, so an error while
    writing any of them leaves all targets untouched. A target that already holds exactly the new bytes is left
    alone, modification time included, so make, Ninja and CMake see nothing to rebuild downstream. Temporary
    files that killed writers left beside a target are removed first (see the module's docstring).

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
    fresh_mode = 0o666 & ~_umask()
    temps: list[tuple[_FlushingFile, str]] = []
    try:
        for target in targets:
            remove_stale_temps(target)
            try:
                fd, tmp = make_temp(_temp_prefix(target.name), target.parent)
            except OSError as exc:
                raise _output_error(target, exc) from None
            temps.append((_FlushingFile(io.FileIO(fd, "r+"), target), tmp))
            with contextlib.suppress(OSError):  # a file system without locks: the PID alone guards the file
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            yield [fp for fp, _ in temps]
        except OutputError:
            raise
        except OSError as exc:
            raise _output_error(targets[0], exc) from None
        except Exception as exc:
            # A writer that fails again while handling a failed write, or loses the OS error on its way up (h5py,
            # closing a file on a full disk), raises something else: the OS error is still the cause to report.
            cause = _os_error_behind(exc) or next((fp.failure for fp, _ in temps if fp.failure), None)
            if cause is None:
                raise
            raise _output_error(targets[0], cause) from exc
        raise_swallowed()  # an interrupt Python swallowed (see signals): the run ends here, nothing is replaced
        synced: set[int] = set()
        for n, ((fp, _), target) in enumerate(zip(temps, targets, strict=True)):
            try:
                fp.flush()
                if not same_content(fp, target):
                    fp.sync()  # outside the lock: the slow part
                    synced.add(n)
            except OSError as exc:
                raise _output_error(target, exc) from None
        # The files of one output (a .c and its .h) are compared and renamed under one lock per directory, so two
        # writers of the same pair cannot interleave their renames: the pair is one writer's or the other's.
        with _directory_locks({target.parent for target in targets} if len(targets) > 1 else set()):
            changed = []
            for n, ((fp, tmp), target) in enumerate(zip(temps, targets, strict=True)):
                try:
                    if same_content(fp, target):  # again, under the lock: another writer may have renamed since
                        continue
                    if n not in synced:
                        fp.sync()
                    _take_over_mode(fp.fileno(), target, fresh_mode)
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
        # Never raise from here: that would hide the error being handled and skip the other removals.
        for fp, tmp in temps:
            with contextlib.suppress(OSError):
                fp.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def _directory_locks(dirs: set[Path]) -> Iterator[None]:
    """An exclusive ``flock`` on each directory in ``dirs`` (taken in sorted order, so writers cannot deadlock).

    The lock is on the directory itself: nothing is created for it and nothing is left behind. A file system
    without locks (some network ones) is written without it.
    """
    fds: list[int] = []
    try:
        for directory in sorted(dirs):
            try:
                fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue
            fds.append(fd)
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing releases the lock


def _take_over_mode(fd: int, target: Path, fresh_mode: int) -> None:
    """Give the new file the permissions (and, as root, the owner) of the file it replaces; a new file gets
    ``0o666 & ~umask``, as ``open()`` would have made it. Set-user-ID, set-group-ID and sticky bits are not kept."""
    try:
        old = os.stat(target)
    except OSError:
        os.fchmod(fd, fresh_mode)
        return
    if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove the temporary files of ``target`` that writers which no longer run left behind; return them.

    Stale means: the PID in the name is not a live process, it is not this process, and no one holds the file's
    lock. Anything else (a live writer, a file that cannot be opened or removed, a name posenc did not make) is
    left alone.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> remove_stale_temps(pathlib.Path(tempfile.mkdtemp()) / "pe.npy")
    []
    """
    pattern = re.compile(
        re.escape(_temp_name_start(target.name)) + r"(\d{1,10})\.[A-Za-z0-9_]+" + re.escape(TMP_SUFFIX)
    )
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            fd = os.open(entry.path, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live writer: BlockingIOError
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _temp_name_start(name: str) -> str:
    """What every temporary file of a target called ``name`` starts with: ``.<name>.`` (``name`` cut short)."""
    raw = os.fsencode(name)
    return f".{os.fsdecode(raw[:NAME_BYTES]) if len(raw) > NAME_BYTES else name}."


def _temp_prefix(name: str) -> str:
    return f"{_temp_name_start(name)}{os.getpid()}."


def make_temp(prefix: str, folder: Path) -> tuple[int, str]:
    """A new file ``<prefix><random><TMP_SUFFIX>`` in ``folder``, created exclusively, mode 0600, as
    ``tempfile.mkstemp`` makes one: its descriptor and absolute path. Not :mod:`tempfile` itself, whose imports
    (shutil and its compressors among them) would cost every command's start more than these few lines.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> fd, path = make_temp(".pe.npy.1.", pathlib.Path(tempfile.mkdtemp()))
    >>> os.close(fd)
    >>> name = pathlib.Path(path).name
    >>> name.startswith(".pe.npy.1.") and name.endswith(TMP_SUFFIX), oct(os.stat(path).st_mode & 0o777)
    (True, '0o600')
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL  # O_EXCL: never through a link or onto a file put there
    for extra in ("O_NOFOLLOW", "O_CLOEXEC", "O_NOINHERIT", "O_BINARY"):  # each where the system has it
        flags |= getattr(os, extra, 0)
    for _ in range(100):  # a clash of 48 random bits is next to impossible; a full folder fails at once
        path = os.path.abspath(os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{TMP_SUFFIX}"))
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name found", str(folder))


def _alive(pid: int) -> bool:
    """Whether ``pid`` may be a running process (anything but a definite "no such process" counts as yes)."""
    if pid <= 0:
        return True  # not a writer's PID: a name posenc did not make
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: alive, another user's
        return True
    return True


def identity(path: Path) -> tuple[int, ...] | None:
    """What changes when the file at ``path`` is replaced (a new inode) or written to (times, size), following
    links as :func:`atomic_outputs` does; ``None`` when there is no file. Equal before and after a write: posenc
    left the file untouched (it already held the new bytes)."""
    try:
        st = os.stat(os.path.realpath(path))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def same_content(fp: BinaryIO, target: Path) -> bool:
    """Whether the regular file ``target`` already holds exactly what was written to ``fp`` (known without reading
    when ``fp`` compared as it was written: :class:`_FlushingFile`)."""
    if isinstance(fp, _FlushingFile):
        known = fp.unchanged(target)
        if known is not None:
            return known
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


def _os_error_behind(exc: BaseException) -> OSError | None:
    """The OS error ``exc`` was raised while handling, directly or through other exceptions, if any."""
    seen = 0
    cause = exc.__cause__ or exc.__context__
    while cause is not None and seen < 16:
        if isinstance(cause, OSError) and not isinstance(cause, OutputError):
            return cause
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def _too_long(target: Path) -> str | None:
    """Why ``target`` (a real path) cannot be created because of its length, or ``None`` when its length is fine.

    Asked of the file system itself (``lstat`` fails with ``ENAMETOOLONG``), so the limit is the one that applies
    there; the limit named is ``pathconf``'s ``PC_NAME_MAX`` of the directory (255 where it cannot be read).
    """
    try:
        os.lstat(target)
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            return None
    else:
        return None
    name = len(os.fsencode(target.name))
    try:
        limit = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if name > limit:
        return f"its name is {name} bytes, more than the {limit} a file name may have there; use a shorter name"
    return f"its path is {len(os.fsencode(target))} bytes, longer than the system takes; use a shorter path"


def _output_error(target: Path, exc: OSError) -> OutputError:
    """``cannot write '<path>': <the OS's words>`` ("No space left on device", "File too large", ...)."""
    return OutputError(f"cannot write {str(target)!r}: {exc.strerror or exc}")


def _read_only(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


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
