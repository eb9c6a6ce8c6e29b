"""The depfile of ``posenc build``: one make rule naming every output, for CMake, Ninja and make.

:func:`depfile_text` gives one make rule, ``out1 out2 ...: manifest``, for CMake's
``add_custom_command(OUTPUT ... DEPFILE ...)``, Ninja's ``depfile =`` and make's ``-include``. The targets are every
file the build wrote, in manifest order (an entry's file, then the companion it writes beside it): Ninja wants the
first to be its edge's first output and every one to be a declared output. Paths are relative to the current
directory (where make, Ninja and CMake's custom commands run) when they lie under it, else absolute.

Escaping is GCC's ``-MD`` dialect, which GNU make and Ninja (1.10+) both read: a space is ``\\ ``, ``#`` is
``\\#``, ``$`` is ``$$``. Every other character must read the same in both without escaping: ASCII letters and
digits, ``. _ - + , / @ ! { } ~`` (``~`` not first) and non-ASCII. Any other is refused (``SpecError``,
``param="depfile"``) rather than written in a form one of them misreads: make reads ``: ; = %`` as syntax,
``* ? [ ]`` as wildcards, ``a(b)`` as an archive member and a leading ``~`` as a home directory; Ninja 1.11 ends a
file name at ``* ? & | ; ' " < > ^`` and the backquote, and keeps the backslash of ``\\%`` (make's escape). Backslashes
and control characters are refused too. ``posenc build --check`` writes no depfile (it writes nothing).

Build rules: Ninja and CMake's Ninja generators restat the outputs (``restat = 1``), so an output posenc left
untouched rebuilds nothing downstream; make compares time stamps only, so a make recipe should ``touch`` its
outputs after ``posenc build`` (as ``cmake/posenc.cmake`` does), or posenc reruns at every build once the manifest
is newer than an unchanged output.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Union

from .. import _atomic
from ..errors import SpecError
from .manifest import Manifest, check_inside
from .report import BuildReport

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["check_depfile", "depfile_text", "write_depfile"]


def check_depfile(manifest: Manifest, depfile: PathLike) -> None:
    """``SpecError`` (``param="depfile"``) when ``depfile`` is the manifest or one of its outputs, or resolves
    outside the manifest's root (see :func:`load_manifest`; a link placed where the depfile goes cannot send it
    elsewhere)."""
    real = os.path.realpath(depfile)
    if real == os.path.realpath(manifest.path):
        raise SpecError(f"the depfile {str(depfile)!r} is the manifest itself; name another file", param="depfile")
    for file in manifest.paths:
        if real == os.path.realpath(file):
            raise SpecError(f"the depfile {str(depfile)!r} is an output of the manifest; name another file",
                            param="depfile")  # fmt: skip
    if manifest.root is not None:
        check_inside(manifest.root, Path(os.fspath(depfile)), f"the depfile {str(depfile)!r}", param="depfile")


def depfile_text(
    report: BuildReport | Manifest, manifest: PathLike | None = None, *, relative_to: PathLike | None = None
) -> str:
    """A make-style depfile: every file of ``report`` depends on ``manifest`` (by default the report's) and on the
    files its entries read (a ``bias`` checkpoint).

    Paths are relative to ``relative_to`` (by default the current directory) when they lie under it, else absolute,
    and escaped as the module's docstring says; a path make and Ninja cannot both read raises ``SpecError``.

    Examples
    --------
    >>> depfile_text(build("posenc.toml"))  # doctest: +SKIP
    'tables/pe.h tables/my\\\\ rope.npz: posenc.toml\\n'
    """
    base = os.path.abspath(relative_to if relative_to is not None else os.curdir)
    source = report.manifest if isinstance(report, BuildReport) else report.path
    targets = " ".join(_make_word(_spelled(p, base)) for p in report.paths)
    prerequisites = [manifest if manifest is not None else source, *report.inputs]
    return f"{targets}: {' '.join(_make_word(_spelled(p, base)) for p in prerequisites)}\n"


def write_depfile(path: PathLike, report: BuildReport | Manifest, manifest: PathLike | None = None) -> Path:
    """Write :func:`depfile_text` (paths relative to the current directory) to ``path``, atomically; an unchanged
    depfile is left untouched."""
    text = depfile_text(report, manifest)
    target = Path(os.fspath(path))
    with _atomic.atomic_outputs([target]) as (fp,):
        fp.write(os.fsencode(text))
    return target


def _spelled(path: PathLike, base: str) -> str:
    """``path`` relative to ``base`` when it lies under it, else absolute: how make, Ninja and CMake name it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, base)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


#: Characters make and Ninja both read as part of a file name, unescaped.
_PLAIN = frozenset(string.ascii_letters + string.digits + "._-+,/@!{}~")
#: GCC's -MD escapes, which GNU make and Ninja both undo.
_ESCAPES = {" ": "\\ ", "#": "\\#", "$": "$$"}


def _make_word(path: str) -> str:
    allowed = "letters, digits, non-ASCII, space and . _ - + , / @ ! { } ~ # $"
    for char in path:
        if char not in _PLAIN and char not in _ESCAPES and ord(char) < 128:
            raise SpecError(
                f"cannot name {path!r} in a depfile: make and Ninja do not read {char!r} in a file name alike "
                f"(allowed: {allowed}); rename the file",
                param="depfile",
            )
    if path.startswith("~"):
        raise SpecError(f"cannot name {path!r} in a depfile: make reads a leading '~' as a home directory; "
                        "rename the file", param="depfile")  # fmt: skip
    return "".join(_ESCAPES.get(char, char) for char in path)
