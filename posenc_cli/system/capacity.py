"""What this machine can still hold: the memory a process may allocate and the free space where a file goes.

Everything posenc refuses for lack of room is measured here, once: the budget of a reader
(:class:`~posenc_cli.formats.limits.Budget`, by default a share of :func:`available_memory`), the whole-table
builds (:func:`check_memory`) and every output (:func:`check_disk`). An absurd request (``posenc generate -n
4294967296 -d 1048576``: 2**52 values, 16 PiB) is refused in milliseconds with the sizes in the message, instead of
running until the disk is full or the kernel's OOM killer ends the process without a word.

Both checks raise errors the CLI maps to exit code 1, the code of "this machine cannot do it now": the request
itself is valid (exit code 2 is for requests that no machine could satisfy, and where "absurd" begins is the
machine's business). Memory: :class:`~posenc_cli.errors.PosencError`; disk: :class:`~posenc_cli.errors.OutputError`.
Both err on the side of letting the work start: an unknown amount of free memory or space is no reason to refuse.
What slips through fails later as cleanly (a full disk: "No space left on device", nothing written).

How much a table needs is not this module's business (the kinds and the formats know it:
:mod:`posenc_cli._resources`); sizes are shown in binary units (:func:`human`).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from ..errors import OutputError, PosencError

__all__ = ["available_memory", "check_disk", "check_memory", "human"]


def available_memory() -> int | None:
    """Bytes this process can still allocate before the system runs out, or ``None`` when it cannot tell.

    Linux: ``MemAvailable`` plus ``SwapFree`` (``/proc/meminfo``), capped by the memory limit of the process's
    cgroup and its ancestors (v2; v1's ``memory.limit_in_bytes``), which is what a container really has. Elsewhere:
    the physical memory (``sysconf``), so that only requests no amount of freeing could satisfy are refused. Either
    way capped by the process's own limits (``ulimit -v``, ``ulimit -d``) less what it already uses.
    """
    rooms = [_meminfo(), _cgroup_room(), *_rlimit_rooms()]
    if rooms[0] is None:
        try:
            rooms[0] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    known = [room for room in rooms if room is not None]
    return min(known) if known else None


def _rlimit_rooms() -> list[int | None]:
    """What ``RLIMIT_AS`` and ``RLIMIT_DATA`` leave: the soft limit less ``VmSize`` / ``VmData`` of the process."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        status = ""
    used = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        words = value.split()
        if words and words[0].isdigit():
            used[name] = int(words[0]) * 1024  # kB
    rooms: list[int | None] = []
    for limit, use_name in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft, _ = resource.getrlimit(limit)
        rooms.append(None if soft == resource.RLIM_INFINITY else max(0, soft - used.get(use_name, 0)))
    return rooms


def _meminfo() -> int | None:
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as fp:
            for line in fp:
                name, _, value = line.partition(":")
                words = value.split()
                if words and words[0].isdigit():
                    fields[name] = int(words[0]) * 1024  # kB
    except OSError:
        return None
    if "MemAvailable" not in fields:
        return None
    return fields["MemAvailable"] + fields.get("SwapFree", 0)


def _cgroup_room() -> int | None:
    """The smallest ``limit - usage`` of the process's memory cgroups, or ``None`` when none is limited."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    rooms = []
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        if controllers == "":  # v2: every level up to the root can limit
            leaf = Path("/sys/fs/cgroup") / group.lstrip("/")
            for directory in (leaf, *leaf.parents):
                rooms.append(_room(directory / "memory.max", directory / "memory.current"))
                if directory == Path("/sys/fs/cgroup"):
                    break
        elif "memory" in controllers.split(","):
            directory = Path("/sys/fs/cgroup/memory") / group.lstrip("/")
            rooms.append(_room(directory / "memory.limit_in_bytes", directory / "memory.usage_in_bytes"))
    known = [room for room in rooms if room is not None]
    return min(known) if known else None


def _room(limit_file: Path, usage_file: Path) -> int | None:
    try:
        limit = limit_file.read_text(encoding="ascii").strip()
        usage = int(usage_file.read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    if not limit.isdigit() or int(limit) >= 1 << 60:  # "max", or v1's "unlimited" (a huge page-aligned number)
        return None
    return max(0, int(limit) - usage)


def human(nbytes: int) -> str:
    """``nbytes`` in binary units, one decimal: ``'1.5 GiB'``, ``'16.0 PiB'``, ``'512 bytes'``.

    Examples
    --------
    >>> human(512), human(3 << 29), human(2**54)
    ('512 bytes', '1.5 GiB', '16.0 PiB')
    """
    if nbytes < 1024:
        return f"{nbytes} bytes"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} YiB"


def check_disk(path: str | os.PathLike[str], nbytes: int, what: str | None = None) -> None:
    """Refuse (``OutputError``) an output of ``nbytes`` that cannot fit in the free space where ``path`` goes.

    The free space is what an ordinary user may fill (``f_bavail``: root's reserve stays for the system), and all
    of it must hold the new file: an existing output is replaced only once the new one is complete. A file system
    that cannot tell is not checked. ``what`` names the output in the message when it is not ``path`` itself (a
    table for stdout or ``--check`` is built in full in a temporary directory first).

    Examples
    --------
    >>> import tempfile
    >>> check_disk(tempfile.gettempdir() + "/pe.npy", 1024)   # fits: nothing happens
    >>> check_disk(tempfile.gettempdir() + "/pe.npy", 2**80)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc_cli.errors.OutputError: cannot write '/.../pe.npy': it needs at least 1.0 YiB and ... is free ...
    """
    directory = Path(os.path.realpath(path)).parent
    try:
        stats = os.statvfs(directory)
    except OSError:
        return
    free = stats.f_bavail * stats.f_frsize
    if nbytes > free:
        where = f"cannot write {os.fspath(path)!r}: it" if what is None else f"{what}: it"
        raise OutputError(
            f"{where} needs at least {human(nbytes)} and {human(free)} is free on the file system of "
            f"{str(directory)!r}; free some space, write elsewhere or ask for a smaller table"
        )


def check_memory(nbytes: int, what: str) -> None:
    """Refuse (``PosencError``) to build ``what`` when it needs more than the ``nbytes`` the system can still give.

    ``what`` names the work for the message: ``"the ALiBi bias matrix (64 x 262144)"``. The memory available is
    :func:`available_memory`; when it is unknown nothing is refused.

    Examples
    --------
    >>> check_memory(1 << 20, "a small table")
    >>> check_memory(1 << 80, "the 2-D sincos table")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc_cli.errors.PosencError: the 2-D sincos table needs about 1.0 YiB of memory and ... is available; ...
    """
    available = available_memory()
    if available is not None and nbytes > available:
        raise PosencError(
            f"{what} needs about {human(nbytes)} of memory and {human(available)} is available; ask for a smaller "
            "table, or a streaming one (generate, rope)"
        )
