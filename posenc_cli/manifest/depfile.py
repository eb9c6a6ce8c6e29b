"""The depfile of ``posenc build``: one make rule naming every output, for CMake, Ninja and make.

:func:`depfile_text` gives one make rule, ``out1 out2 ...: manifest inputs...``, for CMake's
``add_custom_command(OUTPUT ... DEPFILE ...)``, Ninja's ``depfile =`` and make's ``-include``. The targets are every
file the build wrote, in manifest order (an entry's file, then the companion it writes beside it): Ninja wants the
first to be its edge's first output and every one to be a declared output; with a stamp (``posenc build --stamp``)
the one target is the stamp. The prerequisites are the manifest and the files its entries read (checkpoints).
Paths are relative to the current directory (where make, Ninja and CMake's custom commands run) when they lie under
it, else absolute.

Every path is one a build tool can be given (:mod:`~posenc_cli.manifest.names`, the rule ``--list-outputs`` and
CMake's ``posenc_add_manifest`` apply too): the manifest's own names are checked as it spells them, so the answer
does not depend on the current directory, and each path as the depfile spells it. Anything else is refused
(``SpecError``) before a byte is written. The one escape left is GCC's ``-MD`` one for a space, ``\\ ``, which
GNU make, Ninja (1.10+) and CMake's rewrite of the depfile all read. ``posenc build --check`` writes no depfile (it
writes nothing).

Build rules: Ninja and CMake's Ninja generators restat the outputs (``restat = 1``), so an output posenc left
untouched rebuilds nothing downstream. make compares time stamps only: once the manifest is newer than an output
posenc leaves untouched, make would rerun posenc at every build. The remedy is a stamp, the rule's one target,
which ``posenc build --stamp`` updates at every successful run; the outputs depend on it with an empty recipe, so
make looks at their own time stamps again and rebuilds only what depends on a changed table (docs/build.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Union

from ..errors import SpecError
from ..system import atomic
from .names import ALLOWED, name_problem
from .reader import Entry, Manifest, check_inside
from .report import BuildReport

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["check_build_names", "check_depfile", "check_side_file", "depfile_text", "write_depfile"]


def check_side_file(manifest: Manifest, path: PathLike, what: str, param: str) -> None:
    """``SpecError`` (``param``) when ``path``, a file the build writes besides the outputs (the depfile, the
    stamp), is the manifest or one of its outputs, or resolves outside the manifest's root (see
    :func:`load_manifest`; a link placed where it goes cannot send it elsewhere). ``what`` names it: "the depfile"."""
    shown = f"{what} {str(path)!r}"
    real = os.path.realpath(path)
    if real == os.path.realpath(manifest.path):
        raise SpecError(f"{shown} is the manifest itself; name another file", param=param)
    for file in manifest.paths:
        if real == os.path.realpath(file):
            raise SpecError(f"{shown} is an output of the manifest; name another file", param=param)
    if manifest.root is not None:
        check_inside(manifest.root, Path(os.fspath(path)), shown, param=param)


def check_depfile(manifest: Manifest, depfile: PathLike) -> None:
    """:func:`check_side_file` for the depfile (``param="depfile"``)."""
    check_side_file(manifest, depfile, "the depfile", "depfile")


def check_build_names(report: BuildReport | Manifest) -> None:
    """``SpecError`` (``param="manifest"``, naming the entry) when an output of the manifest, or a file an entry
    reads, is spelled in the manifest with a name build tools cannot all be given (:func:`~.names.name_problem`).

    The names are checked as the manifest spells them, so the answer is the same from any folder and under any
    ``--output-dir``: ``--list-outputs``, the depfile and CMake's ``posenc_add_manifest`` (which runs
    ``--list-outputs``) accept and refuse the same manifests.
    """
    label = str(report.manifest if isinstance(report, BuildReport) else report.path)
    entries: Sequence[Entry] = [t.entry for t in report.tables] if isinstance(report, BuildReport) else report.entries
    for entry in entries:
        spelled = [entry.output, *(p.name for p in entry.plan.paths[1:])]  # a companion sits beside its output
        spelled += [str(entry.options[key]) for key in entry.inputs]
        for name in spelled:
            problem = name_problem(name)
            if problem is not None:
                raise SpecError(
                    f"{entry.where(label)}: cannot give {name!r} to a build tool (--list-outputs, --depfile, "
                    f"CMake): {problem}; names hold {ALLOWED}: rename the file",
                    param="manifest",
                )


def depfile_text(
    report: BuildReport | Manifest,
    manifest: PathLike | None = None,
    *,
    relative_to: PathLike | None = None,
    stamp: PathLike | None = None,
) -> str:
    """A make-style depfile: every file of ``report`` (or the ``stamp`` alone) depends on ``manifest`` (by default
    the report's) and on the files its entries read (a ``bias`` checkpoint).

    Paths are relative to ``relative_to`` (by default the current directory) when they lie under it, else absolute,
    with a space escaped as the module's docstring says. A name of the manifest that build tools cannot all read
    raises ``SpecError`` naming the entry (:func:`check_build_names`); a path outside it (a folder of the command
    line) that they cannot read raises ``SpecError`` with ``param="depfile"``.

    Examples
    --------
    >>> depfile_text(build("posenc.toml"))  # doctest: +SKIP
    'tables/pe.h tables/my\\\\ rope.npz: posenc.toml\\n'
    """
    check_build_names(report)
    base = os.path.abspath(relative_to if relative_to is not None else os.curdir)
    source = report.manifest if isinstance(report, BuildReport) else report.path
    targets = " ".join(_make_word(_spelled(p, base)) for p in ([stamp] if stamp is not None else report.paths))
    prerequisites = [manifest if manifest is not None else source, *report.inputs]
    return f"{targets}: {' '.join(_make_word(_spelled(p, base)) for p in prerequisites)}\n"


def write_depfile(
    path: PathLike, report: BuildReport | Manifest, manifest: PathLike | None = None, *, stamp: PathLike | None = None
) -> Path:
    """Write :func:`depfile_text` (paths relative to the current directory) to ``path``, atomically; an unchanged
    depfile is left untouched."""
    text = depfile_text(report, manifest, stamp=stamp)
    target = Path(os.fspath(path))
    with atomic.atomic_outputs([target]) as (fp,):
        fp.write(os.fsencode(text))
    return target


def _spelled(path: PathLike, base: str) -> str:
    """``path`` relative to ``base`` when it lies under it, else absolute: how make, Ninja and CMake name it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, base)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _make_word(path: str) -> str:
    """``path`` as one word of a make rule: checked by the one rule of :mod:`~.names`, a space escaped."""
    problem = name_problem(path)
    if problem is not None:
        raise SpecError(f"cannot name {path!r} in a depfile: {problem}; paths hold {ALLOWED}: rename the folder or "
                        "the file", param="depfile")  # fmt: skip
    return path.replace(" ", "\\ ")
